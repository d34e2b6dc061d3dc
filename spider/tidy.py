"""Less noise in the final list: tooling and copies below the library's own code, and a
function with its own nested function listed once.

Both steps run after the learned ranker (whose features are fixed) as one explicit pass,
:func:`tidy_list`, each under its own setting (``demote_paths``, ``fold_nested``):

- a function under a tooling or copy folder (:data:`DEMOTED_PATHS`: release scripts,
  benchmarks, examples, a vendored ``extras/`` copy) moves below every candidate of the
  library's own code, unless the issue names it (its file, folder or name, or any issue
  signal for it);
- a nested helper (a function defined directly in another, ``iter_content.generate``)
  listed with the function it is defined in is dropped, and the freed slot goes to the
  next candidate, unless the issue points at the helper itself (a signal: a mention, a
  traceback frame). A function holding more than :data:`MAX_HELPERS` nested functions is
  a module in function form (a dayjs plugin, a factory, an IIFE), and a function attached
  to an object inside another (``plugin.proto.tz``) is a member, not a helper: both are
  items of their own and never folded.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

from spider.graph.model import CodeGraph
from spider.retrieve.signals import code_written_names


class PathPattern(NamedTuple):
    """A top-level folder whose functions rank below the library's own, and why."""

    folder: str
    reason: str


DEMOTED_PATHS: tuple[PathPattern, ...] = (
    PathPattern("bin", "command-line and release wrappers (axios bin/GithubAPI.js)"),
    PathPattern("scripts", "build, release and maintenance scripts"),
    PathPattern("script", "build, release and maintenance scripts"),
    PathPattern("tools", "developer tooling, not the shipped library"),
    PathPattern("extras", "optional add-ons and copies of the library (gson extras/)"),
    PathPattern("benchmarks", "benchmarks measure the library, they are not it"),
    PathPattern("benchmark", "benchmarks measure the library, they are not it"),
    PathPattern("examples", "sample programs using the library"),
    PathPattern("example", "sample programs using the library"),
    PathPattern("release", "release tooling"),
)


def demoted_folder(path: str, patterns: Sequence[PathPattern] = DEMOTED_PATHS) -> str | None:
    """The tooling/copy folder ``path`` lies under (its first segment), or None."""
    top = path.split("/", 1)[0]
    return top if "/" in path and any(p.folder == top for p in patterns) else None


def issue_names(text: str, path: str, name: str) -> bool:
    """Whether the issue names this function's file (``GithubAPI.js``, ``bin/x.js``) or
    writes its name (or its class's) as code."""
    lowered = text.lower()
    base = posixpath.basename(path).lower()
    if base and base in lowered:
        return True
    code = code_written_names(text)
    parts = [p.lower() for p in name.split("#")[0].split(".")[-2:]]
    return any(p in code for p in parts)


MAX_HELPERS = 3  # more nested functions than this: a module in function form, not helpers


def nested_functions(graph: CodeGraph, outer: str) -> int:
    """How many functions are defined inside function ``outer``, at any depth."""
    g = graph.g
    seen: set[str] = set()
    stack = [outer]
    while stack:
        for _, v, key in g.out_edges(stack.pop(), keys=True):
            if key == "contains" and v not in seen and g.nodes[v].get("kind") == "function":
                seen.add(v)
                stack.append(v)
    return len(seen)


def nested_in(graph: CodeGraph, inner: str, outer: str) -> bool:
    """Whether function ``inner`` is a helper defined directly inside function ``outer``
    (same file, its qualified name one segment under the outer's, its lines within the
    outer's)."""
    if not inner.startswith(outer + ".") or "." in inner[len(outer) + 1 :]:
        return False
    a, b = graph.g.nodes[inner], graph.g.nodes[outer]
    return (
        a.get("path") == b.get("path")
        and int(b.get("start_line", 0)) <= int(a.get("start_line", 0))
        and int(a.get("end_line", 0)) <= int(b.get("end_line", 0))
    )


def demote(
    candidates: Sequence[str], graph: CodeGraph, text: str, evidence: Collection[str]
) -> list[str]:
    """``candidates`` with the tooling/copy functions the issue does not name moved
    below all the others (each group keeps its order)."""
    own: list[str] = []
    tooling: list[str] = []
    for c in candidates:
        a = graph.g.nodes[c]
        path = str(a.get("path", ""))
        demoted = (
            demoted_folder(path) is not None
            and c not in evidence
            and not issue_names(text, path, str(a.get("name", "")))
        )
        (tooling if demoted else own).append(c)
    return own + tooling


def fold_nested(
    candidates: Sequence[str], graph: CodeGraph, evidence: Collection[str], k: int
) -> list[str]:
    """The first ``k`` of ``candidates`` with a nested helper dropped when the function it
    is defined in (holding at most :data:`MAX_HELPERS` nested functions) is listed too and
    the issue points at the helper by no signal; the outer takes the better of the two
    places."""
    helpers_of: dict[str, bool] = {}

    def holds_helpers(outer: str) -> bool:
        if outer not in helpers_of:
            helpers_of[outer] = nested_functions(graph, outer) <= MAX_HELPERS
        return helpers_of[outer]

    def folds(inner: str, outer: str) -> bool:
        return inner not in evidence and nested_in(graph, inner, outer) and holds_helpers(outer)

    out: list[str] = []
    for c in candidates:
        if len(out) >= k:
            break
        if any(folds(c, o) for o in out):
            continue
        inners = [o for o in out if folds(o, c)]
        if inners:
            at = out.index(inners[0])
            out = [o for o in out if o not in inners]
            out.insert(at, c)
            continue
        out.append(c)
    return out


WEAK_EVIDENCE = frozenset({"file"})  # every function of a named file has it: not the inner's own


def pointed_at(evidence: Mapping[str, str]) -> set[str]:
    """The functions the issue points at one by one (``evidence``: id -> ``kind: detail``,
    the first stage's signals), not merely through their file."""
    return {c for c, ev in evidence.items() if ev.partition(":")[0] not in WEAK_EVIDENCE}


def tidy_list(
    final: Sequence[str],
    pool: Sequence[str],
    graph: CodeGraph,
    text: str,
    evidence: Mapping[str, str],
    *,
    k: int,
    demote_paths: bool = True,
    fold: bool = True,
) -> list[str]:
    """The final list with both steps applied; freed places are filled from ``pool`` (the
    ranked candidates, best first) in order; ``evidence`` maps a function id to its issue
    signal (``"frame: a.py:3"``). With both steps off, ``final`` as it is."""
    if not (demote_paths or fold):
        return list(final)
    seen = set(final)
    candidates = list(final) + [p for p in pool if p not in seen]
    if demote_paths:
        candidates = demote(candidates, graph, text, evidence)
    if fold:
        return fold_nested(candidates, graph, pointed_at(evidence), k)
    return candidates[:k]


__all__ = [
    "DEMOTED_PATHS",
    "MAX_HELPERS",
    "PathPattern",
    "demote",
    "demoted_folder",
    "fold_nested",
    "issue_names",
    "nested_functions",
    "nested_in",
    "tidy_list",
]
