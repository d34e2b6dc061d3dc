"""The worker's use of the engine: index a fetched commit, then locate one issue.

It goes through the engine's door (the ``spider`` facade), whose heavy modules (torch,
tree-sitter) load on first use only, so importing the worker's other modules stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import spider
from spider.models import Issue, Localization
from spider.settings import EngineSettings
from worker.index_cache import IndexCache, index_key
from worker.mirror import Checkout

if TYPE_CHECKING:
    from spider import Index, SourceTree


class Engine(Protocol):
    """Count a snapshot's source files; index it; locate an issue in an index."""

    def source_files(self, checkout: Checkout, settings: EngineSettings) -> int: ...

    def index(self, checkout: Checkout, settings: EngineSettings) -> Index: ...

    def index_for_issue(self, checkout: Checkout, settings: EngineSettings, *,
                        embed_max: int) -> tuple[Index, bool]: ...

    def locate(self, index: Index, issue: Issue, settings: EngineSettings) -> Localization: ...


class SpiderEngine:
    """The SpIDER engine of ``spider/`` (graph and embeddings cached under the cache dir;
    complete indexes kept in memory across jobs, up to ``keep_functions`` functions)."""

    def __init__(self, keep_functions: int = 0) -> None:
        self.kept = IndexCache(keep_functions)

    def source_files(self, checkout: Checkout, settings: EngineSettings) -> int:
        """How many files indexing would parse (a listing only: cheap even when huge)."""
        return spider.count_source_files(_source(checkout), settings)

    def index(self, checkout: Checkout, settings: EngineSettings) -> Index:
        """Build (or load from cache) the index of the checked-out commit; with the history
        window fetched, its commits are parsed too (cached by commit), so the first answer
        that reads them does not pay for it."""
        index = spider.build_index(_source(checkout), settings, progress=False)
        if not checkout.history_pending and spider.history_depth(settings) > 1:
            index.history()
        return index

    def index_for_issue(self, checkout: Checkout, settings: EngineSettings, *,
                        embed_max: int) -> tuple[Index, bool]:
        """The index an issue job ranks with, and whether it is partial.

        The graph and BM25 always; the embeddings when at most ``embed_max`` functions lack
        a cached vector (a warm start reads one matrix; a push since the last index embeds
        only what changed). With more missing (never indexed, or a cache that was wiped)
        nothing is embedded here: the query embeds only its pool (the engine's cold path,
        ``settings.cold_pool``) and the result is partial.
        """
        settings = settings.model_copy(update={"cold_pool": 0})
        key = index_key(checkout.git_dir, checkout.sha, settings, checkout.history_pending)
        kept = self.kept.get(key)
        if kept is not None:
            return kept, False
        index = spider.build_index(_source(checkout), settings, progress=False, embed=False)
        dense = settings.first_stage in ("dense", "hybrid")
        if dense and not index.complete_vectors(embed_max):
            return index, True
        self.kept.put(key, index)
        return index, False

    def locate(self, index: Index, issue: Issue, settings: EngineSettings) -> Localization:
        """The K functions most likely to need an edit, with reasons."""
        return spider.locate(index, issue, settings)


def _source(checkout: Checkout) -> SourceTree:
    """The fetched commit's files, read from the mirror (no working tree)."""
    return spider.open_source(checkout.git_dir, checkout.sha)
