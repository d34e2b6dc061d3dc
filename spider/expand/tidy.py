"""Less noise in the final list: the functions the issue names as code on top, tooling
and copies below the library's own code, and a function with its own nested function
listed once.

The steps run after the learned ranker (whose features are fixed) as one explicit pass,
:func:`tidy_list`, each under its own setting (``keep_named``, ``demote_paths``,
``fold_nested``):

- a function the issue names as code (a traceback frame, ``Foo.bar``, a name in
  backticks, a call such as ``c.ClientIP()``) moves above every function listed before it
  that has no issue signal at all: it is never ranked below one that only matches the
  wording;
- a function under a tooling or copy folder (:data:`DEMOTED_PATHS`: release scripts,
  benchmarks, examples, a vendored ``extras/`` copy), or test code outside the test
  folders (a Rust ``mod tests`` block, ``benches/`` at any depth, a test-helper module:
  :func:`is_test_code`), moves below every candidate of the library's own code, unless the issue names it (its file, folder or name, or any issue
  signal for it);
- a function and a function nested in it (through functions, at any depth:
  ``iter_content.generate``) are listed once, at the better of their places, and the
  freed slot goes to the next candidate, unless the issue points at both by their own
  signals (a signal of the file around it is not its own; one of the class or function
  around it, ``member``, is). The one the
  issue points at survives; else the outer, when it holds at most :data:`MAX_HELPERS`
  nested functions (helpers); else, in a module-sized function (axios' ``httpAdapter``
  around ``dispatchHttpRequest``), the one ranked higher. A module-sized anonymous export
  (a dayjs plugin) is the module itself, and a method or an object literal's member
  defined inside a function, or a function attached to an object inside another
  (``plugin.proto.tz``), is a member: none of them is folded.
"""

from __future__ import annotations

import posixpath
from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

from spider.graph.model import CodeGraph
from spider.models import display_name
from spider.retrieve.signals import code_written_names, names_written_as_code


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


NESTED_DEMOTED = frozenset({"benches", "benchmarks", "benchmark", "examples", "example"})
# ... at any depth (``crates/core/benches/``), unlike ``bin/`` (``src/bin/`` is a Rust binary)
TEST_HELPER_STEMS = frozenset(
    {"test_utils", "testutils", "test_util", "testutil", "test_helpers", "testing"}
)  # modules of test helpers that live beside the library's code
TEST_SCOPES = frozenset({"tests", "test"})  # Rust's `#[cfg(test)] mod tests { ... }`
RUST_SUFFIX = ".rs"


def is_test_code(path: str, name: str) -> bool:
    """Whether a function outside the test folders is test code all the same: in a Rust
    ``mod tests`` block, under a ``benches/`` or ``examples/`` folder at any depth, or in
    a test-helper module (``test_utils.rs``, ``testing/``)."""
    folders = path.split("/")[:-1]
    stem = posixpath.basename(path).split(".")[0]
    scopes = name.split("#")[0].split(".")[:-1]
    return (
        any(f in NESTED_DEMOTED or f in TEST_HELPER_STEMS for f in folders)
        or stem in TEST_HELPER_STEMS
        or (path.endswith(RUST_SUFFIX) and any(s in TEST_SCOPES for s in scopes))
    )


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
    """Whether function ``inner`` is defined inside function ``outer``, at any depth
    through functions only (same file, its qualified name under the outer's, every name
    between them a function, its lines within the outer's). A function attached to an
    object inside another (``plugin.proto.tz``) is a member, not nested."""
    if not inner.startswith(outer + "."):
        return False
    g = graph.g
    prefix = outer
    for seg in inner[len(outer) + 1 :].split(".")[:-1]:
        prefix = f"{prefix}.{seg}"
        if prefix not in g or g.nodes[prefix].get("kind") != "function":
            return False
    a, b = g.nodes[inner], g.nodes[outer]
    return (
        a.get("path") == b.get("path")
        and int(b.get("start_line", 0)) <= int(a.get("start_line", 0))
        and int(a.get("end_line", 0)) <= int(b.get("end_line", 0))
    )


def module_export(graph: CodeGraph, node: str) -> bool:
    """Whether function ``node`` is a JS/TS module's anonymous export (a dayjs plugin's
    ``export default (o, c, d) => {...}``): the module itself in function form, whose
    nested functions are the module's own items, not helpers."""
    a = graph.g.nodes[node]
    name, path = str(a.get("name", "")), str(a.get("path", ""))
    return display_name(path, name) != name and "." not in name


def demote(
    candidates: Sequence[str], graph: CodeGraph, text: str, evidence: Collection[str]
) -> list[str]:
    """``candidates`` with the tooling/copy functions and the test code outside the test
    folders (:func:`is_test_code`) the issue does not name moved below all the others (each
    group keeps its order)."""
    own: list[str] = []
    tooling: list[str] = []
    for c in candidates:
        a = graph.g.nodes[c]
        path, name = str(a.get("path", "")), str(a.get("name", ""))
        demoted = (
            (demoted_folder(path) is not None or is_test_code(path, name))
            and c not in evidence
            and not issue_names(text, path, name)
        )
        (tooling if demoted else own).append(c)
    return own + tooling


def fold_nested(
    candidates: Sequence[str],
    graph: CodeGraph,
    evidence: Collection[str],
    k: int,
    folded: dict[str, list[str]] | None = None,
) -> list[str]:
    """The first ``k`` of ``candidates`` with each function and a function nested in it
    listed once, at the better of their places, unless the issue points at both by their
    own signals (``evidence``). The survivor is the one the issue points at; else the
    outer when it holds at most :data:`MAX_HELPERS` nested functions (helpers); else,
    in a module-sized function, the one ranked higher. ``folded`` (when given) receives
    survivor -> the functions it stands for. A method or an object literal's member
    defined inside a function (the graph's ``member``: a factory returning an object of
    functions) and the functions of a module-sized anonymous export (a dayjs plugin,
    :func:`module_export`) are items of their own, never folded.

    Long because its two helpers are closures over one memo (``helpers_of``) and the graph."""
    helpers_of: dict[str, bool] = {}

    def holds_helpers(outer: str) -> bool:
        if outer not in helpers_of:
            helpers_of[outer] = nested_functions(graph, outer) <= MAX_HELPERS
        return helpers_of[outer]

    def survivor(listed: str, new: str) -> str | None:
        """Which of two related functions stays (None: both, or they are unrelated)."""
        if nested_in(graph, new, listed):
            outer, inner = listed, new
        elif nested_in(graph, listed, new):
            outer, inner = new, listed
        else:
            return None
        if graph.g.nodes[inner].get("member"):
            return None  # a method or an object literal's member: an item of its own
        if not holds_helpers(outer) and module_export(graph, outer):
            return None  # a module-sized anonymous export is the module itself
        if inner in evidence and outer in evidence:
            return None
        if inner in evidence or outer in evidence:
            return inner if inner in evidence else outer
        return outer if holds_helpers(outer) else listed

    record: dict[str, list[str]] = {}
    out: list[str] = []
    for c in candidates:
        if len(out) >= k:
            break
        placed: int | None = None
        absorbed = False
        for o in list(out):
            keep = survivor(o, c)
            if keep is None:
                continue
            if keep == o:
                record.setdefault(o, []).append(c)
                record[o].extend(record.pop(c, []))
                absorbed = True
                break
            at = out.index(o)
            out.remove(o)
            placed = at if placed is None else min(placed, at)
            record.setdefault(c, []).extend([o, *record.pop(o, [])])
        if absorbed:
            continue
        out.insert(len(out) if placed is None else placed, c)
    if folded is not None:
        folded.update({s: v for s, v in record.items() if s in out})
    return out


# Signals a function gets from a name around it, not its own: every function of a named
# file has ``file``. A function inside a named class or function has ``member``, which
# counts as its own: a nested function whose scope the issue names is often the one a fix
# edits (sympy's ``Mod.eval.doit``); not counting it lowered Lite dev Recall@20 0.652 ->
# 0.636 (docs/benchmark.md, "Nested functions").
WEAK_EVIDENCE = frozenset({"file"})
# The issue's signals that can name a function as code: a dotted name, a name in
# backticks, a bare name. Each counts when the issue's prose writes that name as code
# (:func:`names_written_as_code`); a class's member, a name's component, a file never do,
# and a traceback frame is left to the ranker (a traceback lists many callers).
NAMING_EVIDENCE = frozenset({"qualified", "backtick", "name"})


def named_as_code(evidence: Mapping[str, str], text: str) -> set[str]:
    """The functions the issue names as code (``evidence``: id -> ``kind: detail``): a
    name its prose writes in inline backticks, call-shaped, dotted or scoped
    (``c.ClientIP()``, `` `Foo.bar` ``, ``Foo::bar``). A common English word in prose
    ("We run gin") is no signal at all, so it never gets here."""
    code = names_written_as_code(text)
    return {
        c
        for c, ev in evidence.items()
        if (kind_detail := ev.partition(": "))[0] in NAMING_EVIDENCE
        and kind_detail[2].split(".")[-1].lower() in code
    }


def keep_named_on_top(
    candidates: Sequence[str],
    named: Collection[str],
    evidence: Collection[str],
    first_rank: Mapping[str, int] | None = None,
) -> list[str]:
    """``candidates`` with every function in ``named`` (named by the issue as code) moved
    above each function listed before it that has no issue signal at all (one that only
    matches the issue's wording) and that the first stage ranked below it
    (``first_rank``: id -> the first stage's rank; without it, above every such function):
    the ranker may keep a wording match the first stage already preferred, but never
    re-ranks the issue's own pointer below a guess. The rest keep their order."""
    never = float("inf")

    def outranked(other: str, c: str) -> bool:
        if other in evidence:
            return False
        if first_rank is None:
            return True
        return first_rank.get(other, never) > first_rank.get(c, never)

    out: list[str] = []
    for c in candidates:
        if c in named:
            at = next((i for i, o in enumerate(out) if outranked(o, c)), len(out))
            out.insert(at, c)
        else:
            out.append(c)
    return out


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
    named: Collection[str] = (),
    first_rank: Mapping[str, int] | None = None,
    folded: dict[str, list[str]] | None = None,
) -> list[str]:
    """The final list with the steps applied; freed places are filled from ``pool`` (the
    ranked candidates, best first) in order; ``evidence`` maps a function id to its issue
    signal (``"frame: a.py:3"``); ``named``: the functions the issue names as code
    (:func:`named_as_code`), kept above those without a signal that ``first_rank`` (the
    first stage's ranks) put below them; ``folded`` receives what
    each survivor of :func:`fold_nested` stands for among ``final``'s functions. With every step off,
    ``final`` as it is."""
    if not (demote_paths or fold or named):
        return list(final)
    seen = set(final)
    candidates = list(final) + [p for p in pool if p not in seen]
    if demote_paths:
        candidates = demote(candidates, graph, text, evidence)
    if named:
        candidates = keep_named_on_top(candidates, named, evidence, first_rank)
    if fold:
        record: dict[str, list[str]] = {}
        out = fold_nested(candidates, graph, pointed_at(evidence), k, record)
        if folded is not None:  # what the list would have shown: the ranker's own top
            shown = set(final)
            folded.update({s: v for s, v in ((s, [o for o in v if o in shown]) for s, v in
                                             record.items()) if v})
        return out
    return candidates[:k]


__all__ = [
    "DEMOTED_PATHS",
    "MAX_HELPERS",
    "PathPattern",
    "demote",
    "demoted_folder",
    "fold_nested",
    "is_test_code",
    "issue_names",
    "keep_named_on_top",
    "module_export",
    "named_as_code",
    "nested_functions",
    "nested_in",
    "tidy_list",
]
