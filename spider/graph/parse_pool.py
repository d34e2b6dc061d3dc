"""Parsing a commit's files on every core: worker processes beside the building one.

tree-sitter holds the GIL while it parses, so threads do not help; processes do. The
files are read in the building process (one ``git cat-file`` stream) and sent in chunks
of about :data:`CHUNK_BYTES` to a pool of worker processes; the building process parses
too: each chunk read while the workers already have :data:`WINDOW_PER_WORKER` chunks each
waiting is parsed where it was read. So the work spreads over every process without a
plan of who parses what, and at most that many chunks wait in memory.

A worker that dies (killed for memory, a crash in a grammar) breaks the pool; the chunks
it had not returned are parsed in the building process, as they would have been without
workers, and the loss is logged.
"""

from __future__ import annotations

import logging
import multiprocessing
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from tree_sitter import Parser

from spider.cpu import usable_cores
from spider.graph.languages import LanguageSpec
from spider.graph.parse_file import FileResult, Limits, parse_file

log = logging.getLogger(__name__)

CHUNK_BYTES = 256 * 1024  # source sent to a worker at once: sympy's 15 MB in ~60 chunks
WINDOW_PER_WORKER = 4  # chunks queued per worker before the building process helps
AUTO_MIN_BYTES = 2 * 1024 * 1024  # less source parses in well under a second: one process
AUTO_MAX_PARSERS = 8

Work = tuple[str, bytes, LanguageSpec, bool]  # path, content, language, content_exempt
Chunk = list[Work]

_PARSERS: dict[str, Parser] = {}  # one parser per grammar, per process


def parsers_for(setting: int, source_bytes: int) -> int:
    """How many processes parse (the building one included): ``setting`` when it is
    positive, else (auto) one per usable core up to :data:`AUTO_MAX_PARSERS`, and one when
    there is less than :data:`AUTO_MIN_BYTES` of source to parse. Always one in a daemonic
    process (a Celery prefork worker's child, the app's jobs): multiprocessing forbids it
    children."""
    if multiprocessing.current_process().daemon:
        return 1
    if setting > 0:
        return setting
    if source_bytes < AUTO_MIN_BYTES:
        return 1
    return min(usable_cores(), AUTO_MAX_PARSERS)


def parse_chunk(chunk: Chunk, limits: Limits) -> list[FileResult]:
    """Parse one chunk of files (what a worker process runs)."""
    return [
        parse_file(path, data, spec, limits, _PARSERS, content_exempt=exempt)
        for path, data, spec, exempt in chunk
    ]


def parse_here(files: Iterable[Work], limits: Limits, done: Callable[[FileResult], None]) -> None:
    """Parse files one by one in this process; ``done`` hears each result."""
    for path, data, spec, exempt in files:
        done(parse_file(path, data, spec, limits, _PARSERS, content_exempt=exempt))


def chunked(files: Iterable[Work], size: int | None = None) -> Iterator[Chunk]:
    """Consecutive chunks of about ``size`` (default :data:`CHUNK_BYTES`) bytes of content,
    at least one file each."""
    size = size or CHUNK_BYTES
    chunk: Chunk = []
    held = 0
    for work in files:
        chunk.append(work)
        held += len(work[1])
        if held >= size:
            yield chunk
            chunk, held = [], 0
    if chunk:
        yield chunk


def _context() -> multiprocessing.context.BaseContext:
    """How workers start. On Linux, forked when this process runs no other Python thread:
    a worker runs only the parser and pickle and touches no lock of the native thread
    pools ONNX Runtime or torch keep; it starts in milliseconds, the parser imported.
    Beside a running Python thread (the CLI's progress display), and on other systems
    (macOS's frameworks are not fork-safe), from a fork server that has imported the
    parser; spawned where there is none (Windows)."""
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["spider.graph.parse_pool"])
    return ctx


def parse_in_pool(
    chunks: Iterable[Chunk],
    limits: Limits,
    workers: int,
    done: Callable[[FileResult], None],
) -> None:
    """Parse every chunk with ``workers`` worker processes and this one; ``done`` hears
    each file's result in this process, in no particular order."""
    window = WINDOW_PER_WORKER * workers
    queued: deque[tuple[Future[list[FileResult]], Chunk]] = deque()
    broken = False

    def settle(future: Future[list[FileResult]], chunk: Chunk) -> None:
        nonlocal broken
        try:
            results = future.result()
        except BrokenProcessPool:
            if not broken:
                log.warning("a parsing worker died; its files are parsed in this process")
            broken = True
            parse_here(chunk, limits, done)
            return
        for result in results:
            done(result)

    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        for chunk in chunks:
            while queued and queued[0][0].done():
                settle(*queued.popleft())
            if broken or len(queued) >= window:  # the workers have enough queued: help
                parse_here(chunk, limits, done)
                continue
            try:
                queued.append((pool.submit(parse_chunk, chunk, limits), chunk))
            except BrokenProcessPool:
                broken = True
                parse_here(chunk, limits, done)
        while queued:
            settle(*queued.popleft())
