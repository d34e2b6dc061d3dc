"""Ground truth from a patch: the functions of the base-commit graph that a fix edits (the benchmark and the fix loop both read it).

Two rules, both over the *old* (pre-image) side of each hunk:

``precise`` (ours, the default)
    A changed or deleted line belongs to the innermost function enclosing it. Inserted
    lines belong to the innermost function that encloses *both* neighbouring old lines.
    Python only: lines appended after a function's last line still belong to it when they
    are indented deeper than its ``def`` (indentation closes Python blocks, so "both
    neighbours inside" cannot see them).
``dataset``
    Reproduces how SWE-bench's ``edit_functions`` were labelled: every old-side line of a
    hunk, *context lines included*, is mapped to the innermost function enclosing it.

Renamed files are mapped through their old path; added files contribute nothing. The precise
rule first aligns each hunk with the base file by its content, as ``patch`` does (a fix
diffed against a slightly different commit has shifted line numbers: 9 of the 137 hunks of
the runnable dev instances); the dataset rule keeps the raw numbers, as its labels did.
"""

from __future__ import annotations

import glob
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from spider.errors import InputError
from spider.graph.model import CodeGraph
from spider.ids import dataset_id

GroundTruthMode = Literal["precise", "dataset"]
GT_MODES: tuple[GroundTruthMode, ...] = ("precise", "dataset")

HUNK_TAGS = (" ", "-", "+")  # context, deleted, inserted (no-newline markers are dropped)
STRIPPED_CONTEXT_PAD = 20  # blank context lines a stripped patch may have lost at its end
DEV_NULL = "/dev/null"
INDENT_LANGUAGE_SUFFIXES = (".py", ".pyi", ".pyw")  # blocks closed by indentation
TAB_WIDTH = 8  # how Python itself counts a tab when comparing indentation
MAX_HUNK_OFFSET = 1000  # lines searched either way for a hunk's old text (patch(1) style)


@dataclass
class Hunk:
    """One ``@@`` block: the old-side start and length plus its tagged lines."""

    old_start: int
    old_count: int
    lines: list[tuple[str, str]] = field(default_factory=list)  # (" " | "-" | "+", text)


@dataclass
class FilePatch:
    """The hunks of one file; ``old_path`` is None for an added file."""

    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str | None:
        """The path in the base commit (the old path of a rename)."""
        return self.old_path


@dataclass(frozen=True)
class Insertion:
    """Lines inserted between old lines ``before`` and ``before + 1``."""

    before: int
    lines: tuple[str, ...]


@dataclass
class OldSide:
    """What one file's hunks say about its old lines."""

    changed: set[int] = field(default_factory=set)  # deleted or replaced old lines
    insertions: list[Insertion] = field(default_factory=list)
    ranges: list[tuple[int, int]] = field(default_factory=list)  # hunk old ranges, inclusive


@dataclass(frozen=True)
class Span:
    """A function node's line range (1-based, inclusive)."""

    id: str
    start: int
    end: int

    def contains(self, line: int) -> bool:
        """Whether ``line`` lies inside this function."""
        return self.start <= line <= self.end


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of unusual paths."""
    if len(path) >= 2 and path[0] == path[-1] == '"':
        raw = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        return raw.encode("latin-1", "replace").decode("utf-8", "replace")
    return path


def _strip_prefix(path: str | None) -> str | None:
    if path is None:
        return None
    path = _unquote(path.split("\t", 1)[0].rstrip())
    if path == DEV_NULL:
        return None
    if path[:2] in ("a/", "b/"):
        return path[2:]
    return path


def _patch_set(text: str) -> PatchSet:
    """``unidiff``'s parse, forgiving a last hunk whose trailing blank context lines were
    stripped (a patch kept in JSON or passed through ``str.strip``): those are restored."""
    try:
        return PatchSet(text)
    except UnidiffParseError as exc:
        body = text if text.endswith("\n") else text + "\n"
        try:  # surplus pad lines after the last hunk are read as trailing patch info
            return PatchSet(body + " \n" * STRIPPED_CONTEXT_PAD)
        except UnidiffParseError:
            raise InputError(f"not a unified diff: {exc}") from exc


def parse_patch(text: str) -> list[FilePatch]:
    """Parse a unified (git-style) diff into per-file hunks (``unidiff`` does the reading).

    Raises ``InputError`` when the text is not a well-formed unified diff.
    """
    patch = _patch_set(text)
    files: list[FilePatch] = []
    for pf in patch:
        fp = FilePatch(_strip_prefix(pf.source_file), _strip_prefix(pf.target_file))
        for h in pf:
            fp.hunks.append(
                Hunk(
                    h.source_start,
                    h.source_length,
                    [
                        (ln.line_type, ln.value.rstrip("\r\n"))
                        for ln in h
                        if ln.line_type in HUNK_TAGS
                    ],
                )
            )
        files.append(fp)
    return files


def old_side(fp: FilePatch) -> OldSide:
    """Changed old lines, insertion points and old ranges of one file's hunks."""
    out = OldSide()
    for h in fp.hunks:
        # with old_count == 0 the header names the line *after which* lines are inserted
        cursor = h.old_start if h.old_count > 0 else h.old_start + 1
        if h.old_count > 0:
            out.ranges.append((h.old_start, h.old_start + h.old_count - 1))
        pending: list[str] = []
        for tag, text in h.lines:
            if tag == "+":
                pending.append(text)
                continue
            if pending:
                out.insertions.append(Insertion(cursor - 1, tuple(pending)))
                pending = []
            if tag == "-":
                out.changed.add(cursor)
            cursor += 1
        if pending:
            out.insertions.append(Insertion(cursor - 1, tuple(pending)))
    return out


def _hunk_matches(lines: list[str], start: int, old: list[str]) -> bool:
    if start < 1 or start - 1 + len(old) > len(lines):
        return False
    return all(a.rstrip() == b.rstrip() for a, b in zip(lines[start - 1 :], old, strict=False))


def align_hunks(fp: FilePatch, lines: list[str]) -> FilePatch:
    """``fp`` with each hunk moved to where its old lines really are in ``lines``.

    The nearest offset wins; a hunk whose old text is not found keeps its header's numbers.
    """
    out = FilePatch(fp.old_path, fp.new_path)
    for h in fp.hunks:
        old = [t for tag, t in h.lines if tag != "+"]
        start = h.old_start if h.old_count > 0 else h.old_start + 1
        shift = 0
        if old and not _hunk_matches(lines, start, old):
            for d in range(1, MAX_HUNK_OFFSET + 1):
                if _hunk_matches(lines, start - d, old):
                    shift = -d
                    break
                if _hunk_matches(lines, start + d, old):
                    shift = d
                    break
        out.hunks.append(Hunk(h.old_start + shift, h.old_count, h.lines))
    return out


def function_spans(graph: CodeGraph, paths: Iterable[str] | None = None) -> dict[str, list[Span]]:
    """Function line ranges per file path (only ``paths`` when given)."""
    wanted = set(paths) if paths is not None else None
    out: dict[str, list[Span]] = {}
    for nid in graph.functions():
        a = graph.g.nodes[nid]
        path = a.get("path", "")
        if wanted is not None and path not in wanted:
            continue
        out.setdefault(path, []).append(
            Span(nid, int(a.get("start_line", 0)), int(a.get("end_line", 0)))
        )
    return out


def innermost(spans: Iterable[Span], *lines: int) -> Span | None:
    """The innermost function enclosing every given line (latest start, then shortest)."""
    best: Span | None = None
    for s in spans:
        if all(s.contains(n) for n in lines) and (
            best is None or (s.start, -s.end) > (best.start, -best.end)
        ):
            best = s
    return best


def _indent(text: str) -> int:
    return len(text.expandtabs(TAB_WIDTH)) - len(text.expandtabs(TAB_WIDTH).lstrip())


def _appended_to(spans: list[Span], ins: Insertion, lines: list[str] | None) -> Span | None:
    """For indentation languages: the function whose body ``ins`` extends past its last line."""
    body = [t for t in ins.lines if t.strip()]
    if lines is None or not body:
        return None
    indent = min(_indent(t) for t in body)
    best: Span | None = None
    for s in spans:
        if s.end != ins.before or not 1 <= s.start <= len(lines):
            continue
        if indent > _indent(lines[s.start - 1]) and (best is None or s.start > best.start):
            best = s
    return best


def touched_spans(
    fp: FilePatch,
    spans: list[Span],
    mode: GroundTruthMode = "precise",
    old_lines: list[str] | None = None,
) -> set[str]:
    """Graph ids of the functions of one file that the patch edits, under ``mode``."""
    side = old_side(fp)
    hit: set[str] = set()

    def add(span: Span | None) -> None:
        if span is not None:
            hit.add(span.id)

    if mode == "dataset":
        for lo, hi in side.ranges:
            for n in range(lo, hi + 1):
                add(innermost(spans, n))
        # a hunk with no old lines at all (an insertion with no context) has no range
        for ins in side.insertions:
            if not any(lo <= ins.before + 1 and ins.before <= hi for lo, hi in side.ranges):
                add(innermost(spans, ins.before, ins.before + 1))
        return hit
    for n in side.changed:
        add(innermost(spans, n))
    indent_lang = (fp.old_path or "").endswith(INDENT_LANGUAGE_SUFFIXES)
    for ins in side.insertions:
        span = innermost(spans, ins.before, ins.before + 1)
        if span is None and indent_lang:
            span = _appended_to(spans, ins, old_lines)
        add(span)
    return hit


def patch_paths(patch: str | list[FilePatch]) -> list[str]:
    """The base-commit paths a patch touches (old paths; added files left out)."""
    files = parse_patch(patch) if isinstance(patch, str) else patch
    return list(dict.fromkeys(fp.old_path for fp in files if fp.old_path))


def literal_globs(paths: Iterable[str]) -> list[str]:
    """Include globs matching exactly these paths (anchored, metacharacters escaped)."""
    return ["/" + glob.escape(p) for p in paths]


def patch_functions(
    patch: str,
    graph: CodeGraph,
    mode: GroundTruthMode = "precise",
    *,
    read_old: Callable[[list[str]], Mapping[str, str]] | None = None,
) -> set[str]:
    """Graph ids of the base-commit functions the patch edits.

    ``read_old(paths)`` returns old file texts; the precise rule uses them to align hunks
    and to judge Python lines appended to a function's end.
    """
    files = [fp for fp in parse_patch(patch) if fp.old_path]
    spans = function_spans(graph, (fp.old_path for fp in files if fp.old_path))
    texts: Mapping[str, str] = {}
    if read_old is not None and mode == "precise" and spans:
        texts = read_old(list(spans))
    hit: set[str] = set()
    for fp in files:
        path = fp.old_path or ""
        if path not in spans:
            continue
        text = texts.get(path)
        lines = text.splitlines() if text is not None else None
        if lines is not None:
            fp = align_hunks(fp, lines)
        hit |= touched_spans(fp, spans[path], mode, lines)
    return hit


def patch_ground_truth(
    patch: str,
    graph: CodeGraph,
    mode: GroundTruthMode = "precise",
    *,
    read_old: Callable[[list[str]], Mapping[str, str]] | None = None,
) -> list[str]:
    """Dataset-convention ids of the functions the patch edits, sorted."""
    ids = patch_functions(patch, graph, mode, read_old=read_old)
    return sorted({dataset_id(graph, i) for i in ids})
