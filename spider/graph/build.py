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
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from spider.errors import NoSourceFiles
from spider.graph.exclusions import PathRules, attributes_by_directory, gitattributes_paths
from spider.graph.extract import FileOutline
from spider.graph.languages import LanguageSpec, has_cpp_sources, spec_for_path
from spider.graph.model import CodeGraph, NodeInfo, ParseStats
from spider.graph.outline_cache import OutlineCache, outline_key
from spider.graph.parse_file import (
    SKIP_TIMEOUT,
    Entry,
    FileResult,
    Limits,
)
from spider.graph.parse_pool import Work, chunked, parse_here, parse_in_pool, parsers_for
from spider.graph.resolve import link
from spider.settings import EngineSettings
from spider.source import SourceTree

log = logging.getLogger(__name__)

# Reasons a file is skipped (keys of ParseStats.skipped) before or after it is read; the
# path rules' reasons (excluded, not_included, tests, linguist-attr, build, vendored,
# generated, documentation) are in spider.graph.exclusions, the content's (binary,
# minified, lfs_pointer, parse_error, timeout) in spider.graph.parse_file.
SKIP_TOO_LARGE = "too_large"
SKIP_UNREADABLE = "unreadable"

ROOT_DIR = "."

ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class _Planned:
    path: str
    spec: LanguageSpec
    size: int
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
            plan.append(_Planned(f.path, spec, f.size, rules.content_exempt(f.path)))
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
    """Outlines of the planned files, in plan order; skips counted in ``stats``. Files the
    cache lacks are parsed here, or on every core when there are enough of them
    (:mod:`spider.graph.parse_pool`)."""
    keys = _outline_keys(source, plan, settings) if cache is not None else {}
    results: dict[str, Entry] = {}
    if cache is not None and keys:
        found = cache.get_many(keys.values())
        results = {path: found[key] for path, key in keys.items() if key in found}
        stats.reused = len(results)
    todo = {p.path: p for p in plan if p.path not in results}
    fresh: dict[str, Entry] = {}
    total, done = len(plan), len(results)

    def record(result: FileResult) -> None:
        nonlocal done
        if result.problem:
            log.warning("file skipped: %s", result.problem, extra={"path": result.path})
        results[result.path] = result.entry
        if result.path in keys and result.entry != SKIP_TIMEOUT:  # a timeout depends on load
            fresh[keys[result.path]] = result.entry
        done += 1
        if progress is not None:
            progress(done, total)

    files: Iterator[Work] = (
        (path, data, todo[path].spec, todo[path].content_exempt)
        for path, data in source.read_many(list(todo))
        if path in todo
    )
    limits = Limits(settings.max_line_chars, settings.parse_timeout_s)
    parsers = parsers_for(settings.parse_workers, sum(p.size for p in todo.values()))
    if parsers > 1 and len(todo) > 1:
        stats.parsers = parsers
        parse_in_pool(chunked(files), limits, parsers - 1, record)
    else:
        parse_here(files, limits, record)
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
    "count_source_files",
    "exclusion_reasons",
    "path_rules",
]
