"""Build the code graph of a source tree: list, filter, parse, outline, link.

Files are listed without content first so exclusions and the size cap cost nothing;
then each remaining file is read once, checked (binary, minified), parsed under a time
budget and turned into an outline (``extract``); finally nodes are added and the
outlines are linked into invokes/imports/inherits edges (``resolve``). A file that
cannot be used is skipped and counted in ``CodeGraph.stats.skipped`` by reason, never
fatal.
"""

from __future__ import annotations

import logging
import posixpath
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node, Parser
from tree_sitter_language_pack import get_language

from spider.errors import NoSourceFiles
from spider.graph.exclusions import (
    SKIP_GENERATED,
    PathRules,
    attributes_by_directory,
    generated_by_content,
    gitattributes_paths,
)
from spider.graph.extract import (
    FileOutline,
    ParseFailure,
    ParseTimeout,
    build_outline,
    load_query,
    parse_source,
)
from spider.graph.languages import LanguageSpec, has_cpp_sources, spec_for_path
from spider.graph.model import CodeGraph, NodeInfo, ParseStats
from spider.graph.outline_cache import Entry, OutlineCache, outline_key
from spider.graph.resolve import link
from spider.settings import EngineSettings
from spider.source import SourceTree

log = logging.getLogger(__name__)

# Reasons a file is skipped (keys of ParseStats.skipped); the path rules' reasons
# (excluded, not_included, tests, linguist-attr, build, vendored, generated,
# documentation) are in spider.graph.exclusions.
SKIP_TOO_LARGE = "too_large"
SKIP_BINARY = "binary"
SKIP_MINIFIED = "minified"
SKIP_PARSE_ERROR = "parse_error"
SKIP_TIMEOUT = "timeout"
SKIP_UNREADABLE = "unreadable"
SKIP_LFS_POINTER = "lfs_pointer"  # the content lives in Git LFS; the pointer is no code

LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/"

HUGE_LINE_FACTOR = 10  # one line this many times max_line_chars is a bundled blob, not source
ROOT_DIR = "."
UTF8_BOM = b"\xef\xbb\xbf"

ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class _Planned:
    path: str
    spec: LanguageSpec
    content_exempt: bool = False  # include / -linguist-generated: no generated-content check


def build_graph(
    source: SourceTree,
    settings: EngineSettings,
    progress: ProgressFn | None = None,
    outline_cache: OutlineCache | None = None,
) -> CodeGraph:
    """Parse every supported source file of ``source`` into a CodeGraph.

    With an ``outline_cache`` and a git source, a file whose blob was outlined before
    (under the same settings) is neither read nor parsed again.

    ``progress(done, total)`` is called after each file. Raises NoSourceFiles when no
    supported file remains after exclusions, or none could be parsed.
    """
    started = time.monotonic()
    stats = ParseStats()
    plan, unsupported = _plan(source, settings, stats)
    if not plan:
        raise NoSourceFiles(empty_reason(unsupported, stats.skipped))
    outlines = _parse_all(source, plan, settings, stats, progress, outline_cache)
    if not outlines:
        raise NoSourceFiles(
            f"none of the {len(plan)} source files could be used"
            + (f" ({skipped_words(stats.skipped)})" if stats.skipped else "")
        )
    cg = CodeGraph(stats=stats, commit=source.commit)
    ids = _add_nodes(cg, outlines)
    link(cg, outlines, ids, settings.invokes_max_candidates)
    stats.seconds = round(time.monotonic() - started, 3)
    log.info(
        "graph built",
        extra={"files": sum(stats.parsed.values()), "seconds": stats.seconds, **cg.counts()},
    )
    return cg


def skipped_words(skipped: Counter[str] | dict[str, int]) -> str:
    """Skipped files in words: ``skipped 40 tests, 1 generated``."""
    return "skipped " + ", ".join(f"{n} {why}" for why, n in sorted(skipped.items()))


def empty_reason(unsupported: int, skipped: Counter[str] | dict[str, int]) -> str:
    """Why there is nothing to index, in words: an empty tree, files in languages not
    parsed, or every source file excluded (and by what)."""
    if not unsupported and not skipped:
        return "no files to index: the repository (or the revision read) is empty"
    found = [f"{unsupported} in languages not parsed"] if unsupported else []
    if skipped:
        found.append(skipped_words(skipped))
    return (
        "no supported source file to index (" + "; ".join(found) + "); check the "
        "exclude/include settings"
    )


def count_source_files(source: SourceTree, settings: EngineSettings) -> int:
    """How many files :func:`build_graph` would parse: supported, not excluded, not above
    the size cap. Lists the tree only (no content), so a caller can refuse a repository
    too large to index before paying for it."""
    plan, _ = _plan(source, settings, ParseStats())
    return len(plan)


# -- planning ---------------------------------------------------------------------------


def _plan(
    source: SourceTree, settings: EngineSettings, stats: ParseStats
) -> tuple[list[_Planned], int]:
    """Supported files that pass the exclusions and the size cap, sorted by path."""
    listing = source.files()
    stats.skipped.update(getattr(source, "skipped", {}))  # symlinks, submodules, unsafe paths
    headers_are_cpp = has_cpp_sources([f.path for f in listing])
    rules = path_rules(source, settings, [f.path for f in listing])
    plan: list[_Planned] = []
    unsupported = 0
    for f in sorted(listing, key=lambda f: f.path):
        spec = spec_for_path(f.path, headers_are_cpp=headers_are_cpp)
        if spec is None:
            unsupported += 1
        elif (reason := rules.reason(f.path)) is not None:
            stats.skipped[reason] += 1
        elif f.size > settings.max_file_bytes:
            stats.skipped[SKIP_TOO_LARGE] += 1
        else:
            plan.append(_Planned(f.path, spec, rules.content_exempt(f.path)))
    return plan, unsupported


def path_rules(source: SourceTree, settings: EngineSettings, paths: list[str]) -> PathRules:
    """The exclusion rules of one tree: settings, built-in rules and its .gitattributes."""
    attr_files = gitattributes_paths(paths)
    texts = attributes_by_directory(source.read_many(attr_files)) if attr_files else {}
    return PathRules(settings, paths, texts)


def exclusion_reasons(
    source: SourceTree, settings: EngineSettings, paths: list[str]
) -> dict[str, str]:
    """Why each of ``paths`` would be left out of the graph by a path rule (the skip
    reason); paths the rules keep are absent."""
    rules = path_rules(source, settings, [f.path for f in source.files()])
    return {p: r for p in paths if (r := rules.reason(p)) is not None}


# -- parsing ----------------------------------------------------------------------------


def _parse_all(
    source: SourceTree,
    plan: list[_Planned],
    settings: EngineSettings,
    stats: ParseStats,
    progress: ProgressFn | None,
    cache: OutlineCache | None = None,
) -> list[FileOutline]:
    """Outlines of the planned files, in plan order; skips counted in ``stats``."""
    keys = _outline_keys(source, plan, settings) if cache is not None else {}
    results: dict[str, Entry] = {}
    if cache is not None and keys:
        found = cache.get_many(keys.values())
        results = {path: found[key] for path, key in keys.items() if key in found}
        stats.reused = len(results)
    spec_of = {p.path: p for p in plan}
    parsers: dict[str, Parser] = {}
    fresh: dict[str, Entry] = {}
    total, done = len(plan), len(results)
    for path, data in source.read_many([p.path for p in plan if p.path not in results]):
        planned = spec_of.get(path)
        if planned is None:
            continue
        if not planned.content_exempt and generated_by_content(data):
            outline, reason = None, SKIP_GENERATED
        else:
            outline, reason = _parse_one(path, data, planned.spec, settings, parsers)
        results[path] = outline if outline is not None else reason
        if path in keys and reason != SKIP_TIMEOUT:  # a timeout depends on the machine's load
            fresh[keys[path]] = results[path]
        done += 1
        if progress is not None:
            progress(done, total)
    if cache is not None and fresh:
        cache.put_many(fresh)
    outlines: list[FileOutline] = []
    for planned in plan:
        entry = results.get(planned.path)
        if entry is None:  # vanished or could not be read
            stats.skipped[SKIP_UNREADABLE] += 1
        elif isinstance(entry, str):
            stats.skipped[entry] += 1
        else:
            outlines.append(entry)
            stats.parsed[planned.spec.name] += 1
    if done < total and progress is not None:
        progress(total, total)
    return outlines


def _outline_keys(
    source: SourceTree, plan: list[_Planned], settings: EngineSettings
) -> dict[str, str]:
    """Outline-cache key of each planned file whose blob id the source knows (git only)."""
    blobs = source.blob_ids()
    return {
        p.path: outline_key(
            settings,
            p.path,
            f"{p.spec.name}/{p.spec.grammar}",
            blobs[p.path],
            content_exempt=p.content_exempt,
        )
        for p in plan
        if p.path in blobs
    }


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


def _as_utf8(path: str, data: bytes) -> bytes:
    """The file as valid UTF-8 (invalid bytes become U+FFFD; it is still parsed).

    A UTF-8 byte-order mark is dropped (grammars do not expect it; lines do not move).
    """
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM) :]
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        log.debug("invalid UTF-8, decoded with replacement", extra={"path": path})
        return data.decode("utf-8", "replace").encode("utf-8")
    return data


def _parse_one(
    path: str,
    data: bytes,
    spec: LanguageSpec,
    settings: EngineSettings,
    parsers: dict[str, Parser],
) -> tuple[FileOutline | None, str]:
    reason = content_skip_reason(data, settings.max_line_chars)
    if reason is not None:
        return None, reason
    data = _as_utf8(path, data)
    parser = parsers.get(spec.grammar)
    if parser is None:
        parser = parsers[spec.grammar] = Parser(get_language(spec.grammar))
    started = time.monotonic()
    try:
        tree = parse_source(parser, data, settings.parse_timeout_s)
    except ParseTimeout:
        log.warning("parse timed out", extra={"path": path})
        return None, SKIP_TIMEOUT
    except ParseFailure as exc:
        log.warning("parse failed", extra={"path": path, "error": str(exc)})
        return None, SKIP_PARSE_ERROR
    try:
        outline = build_outline(path, spec.name, data, tree, load_query(spec.query, spec.grammar))
    except Exception:  # one odd file must never abort indexing a whole repository
        log.exception("outline failed", extra={"path": path})
        return None, SKIP_PARSE_ERROR
    if not outline.definitions and _unusable(tree.root_node):
        return None, SKIP_PARSE_ERROR
    if time.monotonic() - started > settings.parse_timeout_s:
        log.warning("outline exceeded the parse budget", extra={"path": path})
        return None, SKIP_TIMEOUT
    return outline, ""


def _unusable(root: Node) -> bool:
    """A tree that is all error (another language, a binary format): nothing to index.

    A root of type ERROR alone is not enough: C files full of macros often get one while
    every function in them still parses.
    """
    if not root.has_error:
        return False
    return root.type == "ERROR" or all(c.type == "ERROR" for c in root.named_children)


# -- nodes ------------------------------------------------------------------------------


def _add_nodes(cg: CodeGraph, outlines: list[FileOutline]) -> dict[str, list[str]]:
    """Add directory, file, class and function nodes with contains edges.

    Returns, per file path, the node id of each of its definitions (same order).
    """
    cg.add_node(ROOT_DIR, **_attrs("directory", ROOT_DIR, "", "", 0, 0, ""))
    known_dirs = {ROOT_DIR}
    ids: dict[str, list[str]] = {}
    for o in outlines:
        parent = _ensure_dirs(cg, posixpath.dirname(o.path), known_dirs)
        cg.add_node(o.path, **_attrs("file", o.path, "", o.language, 1, o.lines, ""))
        cg.add_edge(parent, o.path, "contains")
        seen: Counter[str] = Counter()
        file_ids: list[str] = []
        for d in o.definitions:
            seen[d.qualname] += 1
            n = seen[d.qualname]
            file_ids.append(f"{o.path}:{d.qualname}" + (f"#{n}" if n > 1 else ""))
        for node_id, d in zip(file_ids, o.definitions, strict=True):
            attrs = _attrs(d.kind, o.path, d.qualname, o.language, d.start_line, d.end_line, d.text)
            if d.member and d.kind == "function":
                attrs["member"] = True  # a method or object-literal member, not a closure
            cg.add_node(node_id, **attrs)
        for node_id, d in zip(file_ids, o.definitions, strict=True):
            # a method written before its class (Go) has a later parent: add edges after nodes
            cg.add_edge(file_ids[d.parent] if d.parent >= 0 else o.path, node_id, "contains")
        ids[o.path] = file_ids
    return ids


def _ensure_dirs(cg: CodeGraph, directory: str, known: set[str]) -> str:
    """Add a directory and its missing ancestors; return its node id."""
    if not directory:
        return ROOT_DIR
    missing: list[str] = []
    d = directory
    while d and d not in known:
        missing.append(d)
        d = posixpath.dirname(d)
    parent = d or ROOT_DIR
    for d in reversed(missing):
        cg.add_node(d, **_attrs("directory", d, "", "", 0, 0, ""))
        cg.add_edge(parent, d, "contains")
        known.add(d)
        parent = d
    return directory


def _attrs(
    kind: str, path: str, name: str, language: str, start: int, end: int, text: str
) -> dict[str, object]:
    return {
        "kind": kind,
        "path": path,
        "name": name,
        "language": language,
        "start_line": start,
        "end_line": end,
        "text": text,
    }


__all__ = [
    "CodeGraph",
    "NodeInfo",
    "ParseStats",
    "build_graph",
    "content_skip_reason",
    "count_source_files",
    "exclusion_reasons",
    "path_rules",
]
