"""A merged fix read against a list: which functions it edited, and where listed ones went.

The fix loop (the app's scoring of a merged pull request against the comment that
answered its issue) needs the same patch → function mapping the benchmark uses
(:func:`spider.patch.patch_functions`, precise rule) plus one thing of its own: a listed
function that no longer exists at the fix's base commit (renamed, or moved into or out of
a class since the comment) is matched to the edited function with the same body. Both are
computed here from source trees, so the app never builds a graph itself.
"""

from __future__ import annotations

import hashlib
import re
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from spider.errors import InputError, NoSourceFiles
from spider.graph import build_graph
from spider.graph.model import CodeGraph
from spider.patch import GroundTruthMode, literal_globs, parse_patch, patch_functions, patch_paths
from spider.settings import EngineSettings
from spider.source import SourceTree

FIX_RULE: GroundTruthMode = "precise"  # the rule the benchmark scores with: changed lines, not context
_SIGNATURE_LINE = re.compile(r"\bdef\b|\bfunction\b|\bfunc\b|\bfn\b|\(")


@dataclass(frozen=True)
class FixMatch:
    """The functions a fix edited at its base commit, and the listed ids it moved."""

    changed: list[str] = field(default_factory=list)  # graph ids at the base, sorted
    moved: dict[str, str] = field(default_factory=dict)  # listed id gone -> changed id


def fix_paths(patch: str) -> list[str]:
    """The base-commit paths a patch touches; [] for an empty or unparsable patch."""
    if not patch:
        return []
    try:
        return patch_paths(parse_patch(patch))
    except InputError:
        return []


def body_hash(text: str) -> str:
    """A function's code without its signature line(s), dedented: survives a rename and a
    move into or out of a class (decorators and the ``def`` line are dropped)."""
    lines = text.splitlines()
    start = 0
    for i, line in enumerate(lines):
        if _SIGNATURE_LINE.search(line):
            start = i + 1
            break
    body = textwrap.dedent("\n".join(lines[start:])).strip()
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


def _narrow_graph(source: SourceTree, settings: EngineSettings,
                  paths: Iterable[str]) -> CodeGraph | None:
    """The graph of exactly ``paths`` (None when none of them is parsed source)."""
    narrow = settings.model_copy(update={"include": literal_globs(dict.fromkeys(paths))})
    try:
        return build_graph(source, narrow)
    except NoSourceFiles:  # docs, tests or unsupported files only
        return None


def match_fix(
    base: SourceTree,
    patch: str,
    listed: Sequence[str],
    settings: EngineSettings,
    *,
    listed_at: SourceTree | None = None,
) -> FixMatch:
    """What ``patch`` edits at ``base`` (graph ids), and for each ``listed`` id that is
    gone at ``base``, the edited function with the same body at ``listed_at`` (the commit
    the list was made at; defaults to ``base``)."""
    paths = fix_paths(patch)
    if not paths:
        return FixMatch()
    listed_paths = [i.split(":", 1)[0] for i in listed]
    graph = _narrow_graph(base, settings, [*paths, *listed_paths])
    if graph is None:
        return FixMatch()

    def read_old(ps: list[str]) -> dict[str, str]:
        return {p: b.decode("utf-8", "replace") for p, b in base.read_many(ps)}

    changed = patch_functions(patch, graph, FIX_RULE, read_old=read_old)
    gone = [lid for lid in listed if lid not in graph.g and lid not in changed]
    moved: dict[str, str] = {}
    if gone and changed:
        by_hash: dict[str, str] = {}
        for cid in sorted(changed):
            by_hash.setdefault(body_hash(graph.g.nodes[cid].get("text", "")), cid)
        then = _narrow_graph(listed_at or base, settings, (i.split(":", 1)[0] for i in gone))
        for lid in gone:
            if then is not None and lid in then.g:
                target = by_hash.get(body_hash(then.g.nodes[lid].get("text", "")))
                if target is not None:
                    moved[lid] = target
    return FixMatch(sorted(changed), moved)


__all__ = ["FixMatch", "body_hash", "fix_paths", "match_fix"]
