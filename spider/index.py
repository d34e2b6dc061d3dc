"""The index of one repository snapshot: its code graph plus first-stage rankers.

The graph of a git commit is cached on disk by commit and graph settings; embeddings are
cached by the hash of each embedded text, so a new commit only embeds what changed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from spider.errors import IndexFormatError
from spider.graph.model import CodeGraph
from spider.graph_snapshot import derived_path, read_snapshot, snapshot_path, write_snapshot
from spider.ids import short_name
from spider.progress import (
    EMBEDDING,
    EMBEDDING_POOL,
    LEXICAL,
    PARSING,
    Progress,
    ended,
    listener,
    steps,
)
from spider.retrieve.bm25 import LexicalIndex
from spider.retrieve.cache import LazyStore
from spider.retrieve.dense import Encoder, settings_model_id
from spider.retrieve.history import FunctionHistory, load_history
from spider.retrieve.signals import NameTable
from spider.retrieve.tokenize import code_tokens
from spider.settings import GRAPH_SETTINGS, EngineSettings, embeds_whole
from spider.source import GitSource, SourceTree

log = logging.getLogger(__name__)

GRAPH_CACHE_VERSION = "4"  # bump when extraction changes what a cached graph holds
VECTORS_VERSION = "1"  # bump when document_text changes what is embedded per function
LEXICAL_VERSION = "1"  # bump when code_tokens or the file documents change


def document_text(path: str, name: str, text: str) -> str:
    """What is embedded and matched for one function: path, qualified name, source."""
    return f"{path}\n{name}\n{text}"


def _graph_key(commit: str, settings: EngineSettings) -> str:
    payload = json.dumps(
        [GRAPH_CACHE_VERSION, commit, {k: getattr(settings, k) for k in GRAPH_SETTINGS}],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def commit_key(source: SourceTree, settings: EngineSettings) -> str | None:
    """The cache key of a git commit's graph and of what is derived from it (BM25 indexes);
    None for a working tree, which is never cached."""
    if isinstance(source, GitSource) and source.commit:
        return _graph_key(source.commit, settings)
    return None


def _vectors_key(commit: str, settings: EngineSettings, function_ids: list[str]) -> str:
    h = hashlib.sha256(VECTORS_VERSION.encode())
    h.update(_graph_key(commit, settings).encode())
    h.update(settings_model_id(settings).encode())  # the model, its delta, backend
    h.update("\n".join(function_ids).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:24]


@dataclass
class Index:
    """A repository snapshot ready to be queried."""

    graph: CodeGraph
    settings: EngineSettings
    function_ids: list[str]
    stats: dict[str, Any] = field(default_factory=dict)
    progress: Progress | None = None  # who hears how far embedding is (None: nobody)
    _vectors: np.ndarray | None = None
    _lexical: LexicalIndex | None = None
    _encoder: Encoder | None = None
    _documents: list[str] | None = None
    _names: NameTable | None = None
    _files: tuple[list[str], np.ndarray, LexicalIndex] | None = None
    _pooled: dict[int, np.ndarray] = field(default_factory=dict)  # cold path: rows embedded
    _tokens: list[list[str]] | None = None
    cache_key: str | None = None  # the commit's graph cache key: derived indexes persist by it
    git_dir: Path | None = None  # the repository the commit was read from (its history)
    _history: FunctionHistory | None = None

    @property
    def commit(self) -> str | None:
        """The commit indexed, when known."""
        return self.graph.commit

    def documents(self) -> list[str]:
        """The text of each function, aligned with ``function_ids`` (built once)."""
        if self._documents is None:
            self._documents = [self._document_of(n) for n in self.function_ids]
        return self._documents

    def document(self, row: int) -> str:
        """The text of function ``row`` alone (a query reads a few hundred of sympy's 19k:
        building them all cost it 0.05-0.09 s)."""
        if self._documents is not None:
            return self._documents[row]
        return self._document_of(self.function_ids[row])

    def _document_of(self, node: str) -> str:
        a = self.graph.g.nodes[node]
        return document_text(a.get("path", ""), a.get("name", ""), a.get("text", ""))

    def encoder(self) -> Encoder:
        """The (cached) encoder for this index's model and backend."""
        if self._encoder is None:
            cache = LazyStore(
                self.settings.cache_dir / "embeddings", self.settings.embedding_cache_url
            )
            self._encoder = Encoder.from_settings(self.settings, cache)
        return self._encoder

    def _matrix_path(self) -> Path | None:
        """The per-commit vector matrix (one ``.npy`` read on a warm start), for git commits."""
        if not self.commit:
            return None
        key = _vectors_key(self.commit, self.settings, self.function_ids)
        return self.settings.cache_dir / "vectors" / f"{key}.npy"

    def _load_matrix(self) -> np.ndarray | None:
        path = self._matrix_path()
        if path is None or not path.exists():
            return None
        try:  # memory-mapped: read as a query touches it, shared by processes on one machine
            vecs: np.ndarray = np.load(path, allow_pickle=False, mmap_mode="r")
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable vector matrix %s: %s", path, exc)
            return None
        if vecs.ndim != 2 or vecs.shape[0] != len(self.function_ids) or vecs.dtype != np.float32:
            log.warning("ignoring vector matrix %s of shape %s", path, vecs.shape)
            return None
        return vecs

    def _save_matrix(self, vecs: np.ndarray) -> None:
        path = self._matrix_path()
        if path is None or vecs.ndim != 2 or vecs.shape[0] != len(self.function_ids):
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            with tmp.open("wb") as f:
                np.save(f, vecs, allow_pickle=False)
            os.replace(tmp, path)
        except OSError as exc:  # a full disk costs the warm start, not the query
            log.warning("cannot write vector matrix %s: %s", path, exc)
            tmp.unlink(missing_ok=True)

    def has_vectors(self) -> bool:
        """Whether every function's vector is at hand without running the model: the
        per-commit matrix, or every text in the embedding cache (then the matrix is made)."""
        if self._vectors is not None:
            return True
        t0 = time.perf_counter()
        vecs = self._load_matrix()
        if vecs is None:
            vecs = self.encoder().cached_matrix(self.documents())
            if vecs is None:
                return False
            self._save_matrix(vecs)
        self._vectors = vecs
        self.stats.update(embed_seconds=round(time.perf_counter() - t0, 3), embedded=0)
        return True

    def missing_vectors(self) -> int:
        """How many of the functions have no vector in the embedding cache (0 once the
        vectors are loaded): what :meth:`vectors` would embed. Reads the cache once;
        nothing is embedded."""
        if self._vectors is not None:
            return 0
        return self.encoder().missing(self.documents())

    def complete_vectors(self, max_missing: int) -> bool:
        """Make every function's vector available when at most ``max_missing`` of them lack
        one in the embedding cache (embedding those and writing the commit's matrix);
        True when the index now holds every vector, False when more were missing and
        nothing was embedded (a query then embeds only its pool: a partial answer). The
        count is kept in ``stats["missing_vectors"]``."""
        if self.has_vectors():
            return True
        missing = self.missing_vectors()
        self.stats["missing_vectors"] = missing
        if missing > max_missing:
            return False
        self.vectors()
        return True

    def vectors(self) -> np.ndarray:
        """Unit-norm embeddings of every function (embedding what the cache lacks)."""
        if self._vectors is None:
            t0 = time.perf_counter()
            vecs = self._load_matrix()
            if vecs is not None:
                self._vectors = vecs
                self.stats.update(
                    embed_seconds=round(time.perf_counter() - t0, 3),
                    embedded=0,
                    embed_cached=len(vecs),
                    vectors_from="matrix",
                )
                return vecs
            enc = self.encoder()
            before_e, before_c = enc.embedded, enc.cached
            self._vectors = enc.encode(self.documents(), progress=steps(self.progress, EMBEDDING))
            self._save_matrix(self._vectors)
            seconds = time.perf_counter() - t0
            embedded = enc.embedded - before_e
            self.stats.update(
                embed_seconds=round(seconds, 3),
                embedded=embedded,
                embed_cached=enc.cached - before_c,
                embed_per_second=round(embedded / seconds, 1) if embedded and seconds else None,
            )
        return self._vectors

    def vectors_of(self, rows: np.ndarray) -> np.ndarray:
        """Vectors of the functions at ``rows`` only (the cold path: a pool, not the index),
        from the matrix or the cache where they are, embedded now where not."""
        if self._vectors is not None:
            picked: np.ndarray = self._vectors[rows]
            return picked
        todo = [int(i) for i in rows if int(i) not in self._pooled]
        if todo:
            self._pooled.update(zip(todo, self._embed_rows(todo), strict=True))
        return np.stack([self._pooled[int(i)] for i in rows])

    def _embed_rows(self, rows: list[int]) -> np.ndarray:
        docs = self.documents()
        enc = self.encoder()
        before = enc.embedded
        vecs = enc.encode([docs[i] for i in rows], progress=steps(self.progress, EMBEDDING_POOL))
        self.stats["partial_embedded"] = self.stats.get("partial_embedded", 0) + (
            enc.embedded - before
        )
        return vecs

    def name_table(self) -> NameTable:
        """Function lookup by name, qualified name and path, for issue signals (kept beside
        a commit's cached graph: sympy's takes 0.5 s of CPU to build)."""
        if self._names is None:
            kept = self._names_path()
            if kept is not None:
                self._names = read_snapshot(kept, GRAPH_CACHE_VERSION, NameTable)
            if self._names is None:
                self._names = NameTable(self.graph, self.function_ids)
                if kept is not None:
                    write_snapshot(self._names, kept, GRAPH_CACHE_VERSION)
        return self._names

    def _names_path(self) -> Path | None:
        if self.cache_key is None:
            return None
        graph = self.settings.cache_dir / "graphs" / f"{self.cache_key}.json.gz"
        return derived_path(graph, "names")

    def tokens(self) -> list[list[str]]:
        """``code_tokens`` of each function's document (computed once)."""
        if self._tokens is None:
            self._tokens = [code_tokens(d) for d in self.documents()]
        return self._tokens

    def _file_index(self) -> tuple[list[str], np.ndarray, LexicalIndex]:
        if self._files is None:
            g = self.graph.g
            paths = [g.nodes[n].get("path", "") for n in self.function_ids]
            unique = sorted(set(paths))
            pos = {p: i for i, p in enumerate(unique)}
            file_of = np.array([pos[p] for p in paths], dtype=np.int64)

            def build() -> LexicalIndex:
                # a file's document is its path, its parts, then each function in it;
                # code_tokens never joins words across lines, so its tokens are the
                # path's followed by each function's
                corpus = [code_tokens(f"{p} {p.replace('/', ' ')}") for p in unique]
                for i, toks in zip(file_of, self.tokens(), strict=True):
                    corpus[i].extend(toks)
                return LexicalIndex.from_tokens(corpus)

            self._files = (unique, file_of, self._persisted("files", build))
        return self._files

    def _persisted(self, name: str, build: Callable[[], LexicalIndex]) -> LexicalIndex:
        """A BM25 index read from the commit's cache, or built and written there (indexes
        of a working tree, which has no cache key, are built every time)."""
        if self.cache_key is None:
            return self._built(build)
        folder = self.settings.cache_dir / "lexical" / f"{self.cache_key}-{LEXICAL_VERSION}-{name}"
        if folder.is_dir():
            try:
                return LexicalIndex.load(folder)
            except IndexFormatError as exc:
                log.warning("rebuilding BM25 index: %s", exc)
                shutil.rmtree(folder, ignore_errors=True)
        index = self._built(build)
        index.save(folder)
        return index

    def _built(self, build: Callable[[], LexicalIndex]) -> LexicalIndex:
        """``build()``, reported as the phase ``indexing words``."""
        if self.progress is not None:
            self.progress(LEXICAL, 0, None)
        index = build()
        ended(self.progress, LEXICAL)
        return index

    def history(self) -> FunctionHistory:
        """What earlier commits said about each function and file (read once; empty
        without a git repository or with ``history_commits`` 0)."""
        if self._history is None:
            t0 = time.perf_counter()
            self._history = load_history(
                self.git_dir,
                self.commit,
                self.settings.history_commits,
                self.settings.cache_dir,
                self._history_keys,
                self._file_index()[0],
                graph_key=self.cache_key,
            )
            self.stats["history_seconds"] = round(time.perf_counter() - t0, 3)
            self.stats["history_commits"] = self._history.commits
        return self._history

    def _history_keys(self) -> list[tuple[str, str]]:
        """Each function's (path, short name): how history names what it edited."""
        nodes = self.graph.g.nodes
        return [(a.get("path", ""), short_name(a.get("name", "")))
                for a in (nodes[n] for n in self.function_ids)]

    def file_lexical(self) -> LexicalIndex:
        """BM25 over whole files (path + every function in it), one document per file."""
        return self._file_index()[2]

    def file_of(self) -> np.ndarray:
        """For each function (in ``function_ids`` order), the index of its file."""
        return self._file_index()[1]

    def lexical(self) -> LexicalIndex:
        """The BM25 index over every function."""
        if self._lexical is None:
            t0 = time.perf_counter()
            self._lexical = self._persisted(
                "functions", lambda: LexicalIndex.from_tokens(self.tokens())
            )
            self.stats["bm25_seconds"] = round(time.perf_counter() - t0, 3)
        return self._lexical


def history_dir(source: SourceTree) -> Path | None:
    """Where the history of ``source``'s commit can be read: a git repository, or a
    working tree's; None for a folder without git."""
    if isinstance(source, GitSource):
        return source.git_dir
    root = getattr(source, "root", None)
    if isinstance(root, Path) and source.commit and (root / ".git").exists():
        return root
    return None


def load_or_build_graph(
    source: SourceTree, settings: EngineSettings, *, progress: Progress | None = None
) -> tuple[CodeGraph, bool]:
    """The graph of ``source``; read from the cache for git commits (its pickled snapshot
    first, :mod:`spider.graph_snapshot`), else built (a git commit parses only the files
    whose outlines the outline cache lacks). Returns (graph, cached);
    ``progress`` hears the files parsed (phase ``parsing``)."""
    cache_path: Path | None = None
    if (key := commit_key(source, settings)) is not None:
        gdir = settings.cache_dir / "graphs"
        gdir.mkdir(parents=True, exist_ok=True)
        cache_path = gdir / f"{key}.json.gz"
        if cache_path.exists():
            kept = read_snapshot(snapshot_path(cache_path), GRAPH_CACHE_VERSION)
            if kept is not None:
                return kept, True
            try:
                graph = CodeGraph.load(cache_path)
            except IndexFormatError as exc:
                log.warning("rebuilding graph: %s", exc)
            else:
                write_snapshot(graph, snapshot_path(cache_path), GRAPH_CACHE_VERSION)
                return graph, True
    # the parsers load only here: a query that reads a saved graph never imports them
    from spider.graph.build import build_graph
    from spider.graph.outline_cache import open_outline_cache

    outlines = open_outline_cache(settings.cache_dir / "outlines") if cache_path else None
    try:
        graph = build_graph(source, settings, steps(progress, PARSING), outlines)
    finally:
        if outlines is not None:
            outlines.close()
    graph.commit = source.commit
    if cache_path is not None:
        graph.save(cache_path)  # its snapshot is taken from the JSON, at the first read
    return graph, False


def build_index(
    source: SourceTree,
    settings: EngineSettings,
    *,
    progress: Progress | bool | None = None,
    embed: bool | None = None,
) -> Index:
    """Parse (or load) the graph, embed (dense or hybrid first stage) and build the BM25
    indexes (bm25 or hybrid), so that a query only ranks.

    ``embed=False`` defers embedding to the first query that needs it. With
    ``settings.cold_pool`` > 0 and more functions missing from the cache than
    :data:`~spider.settings.COLD_FULL_RATIO` times the pool, nothing is embedded here: the
    first query embeds only its pool (``spider.retrieve.cold``); with fewer, all of them.

    ``progress`` hears each phase (``spider.progress``: parsing, embedding, indexing words;
    later, the cold path's pool) with its total; None or False: nobody listens.
    """
    t0 = time.perf_counter()
    progress = listener(progress)
    graph, cached = load_or_build_graph(source, settings, progress=progress)
    functions = graph.functions()
    index = Index(graph=graph, settings=settings, function_ids=functions, progress=progress)
    index.cache_key = commit_key(source, settings)
    index.git_dir = history_dir(source)
    index.stats.update(
        graph_seconds=round(time.perf_counter() - t0, 3),
        graph_cached=cached,
        functions=len(functions),
    )
    if embed is None:
        embed = settings.first_stage in ("dense", "hybrid")
    if embed and not embeds_whole(len(functions), settings.cold_pool):
        # a pool nearly as big as the index costs as much as the index: embed it all
        embed = index.has_vectors() or embeds_whole(index.missing_vectors(), settings.cold_pool)
        index.stats["partial_index"] = not embed  # else the query ranks from a partial index
    if embed:
        index.vectors()
    if settings.first_stage in ("bm25", "hybrid"):
        index.lexical()  # part of indexing, not of the first query (sympy: seconds)
        if settings.first_stage == "hybrid" and settings.fusion_file > 0:
            t1 = time.perf_counter()
            index.file_lexical()
            index.stats["file_bm25_seconds"] = round(time.perf_counter() - t1, 3)
    index.stats["index_seconds"] = round(time.perf_counter() - t0, 3)
    return index
