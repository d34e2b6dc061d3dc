"""One file's outline, or the reason it is skipped: content checks, parse, outline.

The unit of work a graph build runs per file, in its own process or in a worker
(:mod:`spider.graph.parse_pool`): it touches no shared state beyond a per-process cache of
parsers, and reports what went wrong as data (``FileResult.problem``) for the caller to
log, so a worker process needs no logging setup of its own.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass

from tree_sitter import Node, Parser
from tree_sitter_language_pack import get_language

from spider.graph.exclusions import SKIP_GENERATED, generated_by_content
from spider.graph.extract import (
    FileOutline,
    ParseFailure,
    ParseTimeout,
    build_outline,
    load_query,
    parse_source,
)
from spider.graph.languages import LanguageSpec

# Reasons a file's content gets it skipped (keys of ParseStats.skipped).
SKIP_BINARY = "binary"
SKIP_MINIFIED = "minified"
SKIP_PARSE_ERROR = "parse_error"
SKIP_TIMEOUT = "timeout"
SKIP_LFS_POINTER = "lfs_pointer"  # the content lives in Git LFS; the pointer is no code

LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/"
HUGE_LINE_FACTOR = 10  # one line this many times max_line_chars is a bundled blob, not source
UTF8_BOM = b"\xef\xbb\xbf"

Entry = FileOutline | str  # an outline, or the reason the file was skipped


@dataclass(frozen=True, slots=True)
class Limits:
    """The settings a file's parse reads (small enough to send to a worker process)."""

    max_line_chars: int
    parse_timeout_s: float


@dataclass(frozen=True, slots=True)
class FileResult:
    """What became of one file: its outline or skip reason, and what went wrong in words
    (empty when nothing did) for the caller to log."""

    path: str
    entry: Entry
    problem: str = ""


def parse_file(
    path: str,
    data: bytes,
    spec: LanguageSpec,
    limits: Limits,
    parsers: dict[str, Parser],
    *,
    content_exempt: bool = False,
) -> FileResult:
    """Check, parse and outline one file (``content_exempt``: skip the generated-content
    check, as ``include`` and ``-linguist-generated`` ask); ``parsers`` caches one parser
    per grammar across calls."""
    if not content_exempt and generated_by_content(data):
        return FileResult(path, SKIP_GENERATED)
    reason = content_skip_reason(data, limits.max_line_chars)
    if reason is not None:
        return FileResult(path, reason)
    data = _as_utf8(data)
    parser = parser_for(spec.grammar, parsers)
    started = time.monotonic()
    try:
        tree = parse_source(parser, data, limits.parse_timeout_s)
    except ParseTimeout:
        return FileResult(path, SKIP_TIMEOUT, "parse timed out")
    except ParseFailure as exc:
        return FileResult(path, SKIP_PARSE_ERROR, f"parse failed: {exc}")
    try:
        outline = build_outline(path, spec.name, data, tree, load_query(spec.query, spec.grammar))
    except Exception:  # one odd file must never abort indexing a whole repository
        return FileResult(path, SKIP_PARSE_ERROR, "outline failed:\n" + traceback.format_exc())
    if not outline.definitions and _unusable(tree.root_node):
        return FileResult(path, SKIP_PARSE_ERROR)
    if time.monotonic() - started > limits.parse_timeout_s:
        return FileResult(path, SKIP_TIMEOUT, "outline exceeded the parse budget")
    return FileResult(path, outline)


def parser_for(grammar: str, parsers: dict[str, Parser]) -> Parser:
    """The parser of ``grammar`` from ``parsers``, made and kept there on first use."""
    parser = parsers.get(grammar)
    if parser is None:
        parser = parsers[grammar] = Parser(get_language(grammar))
    return parser


def content_skip_reason(data: bytes, max_line_chars: int) -> str | None:
    """Why a file's content is not worth parsing (binary, minified, LFS pointer), or None."""
    if b"\0" in data:
        return SKIP_BINARY
    if data.startswith(LFS_POINTER_PREFIX):
        return SKIP_LFS_POINTER
    lines = data.count(b"\n") + 1
    if len(data) / lines > max_line_chars:
        return SKIP_MINIFIED
    huge = HUGE_LINE_FACTOR * max_line_chars
    if len(data) > huge and max(map(len, data.split(b"\n"))) > huge:
        return SKIP_MINIFIED
    return None


def _as_utf8(data: bytes) -> bytes:
    """The file as valid UTF-8 (invalid bytes become U+FFFD; it is still parsed).

    A UTF-8 byte-order mark is dropped (grammars do not expect it; lines do not move).
    """
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM) :]
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace").encode("utf-8")
    return data


def _unusable(root: Node) -> bool:
    """A tree that is all error (another language, a binary format): nothing to index.

    A root of type ERROR alone is not enough: C files full of macros often get one while
    every function in them still parses.
    """
    if not root.has_error:
        return False
    return root.type == "ERROR" or all(c.type == "ERROR" for c in root.named_children)
