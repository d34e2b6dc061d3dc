"""The worker's door to the engine: index a fetched commit, then locate one issue.

The engine (torch, tree-sitter) is imported here on first use only, so importing the
worker's other modules stays cheap.
"""

from __future__ import annotations

from typing import Any, Protocol

from spider.models import Issue, Localization
from spider.settings import EngineSettings
from worker.mirror import Checkout


class Engine(Protocol):
    """Count a snapshot's source files; index it; locate an issue in an index."""

    def source_files(self, checkout: Checkout, settings: EngineSettings) -> int: ...

    def index(self, checkout: Checkout, settings: EngineSettings) -> Any: ...

    def index_for_issue(self, checkout: Checkout, settings: EngineSettings, *,
                        embed_max: int) -> tuple[Any, bool]: ...

    def locate(self, index: Any, issue: Issue, settings: EngineSettings) -> Localization: ...


class SpiderEngine:
    """The SpIDER engine of ``spider/`` (graph and embeddings cached under the cache dir)."""

    def source_files(self, checkout: Checkout, settings: EngineSettings) -> int:
        """How many files indexing would parse (a listing only: cheap even when huge)."""
        from spider.graph import count_source_files
        from spider.source import GitSource

        return count_source_files(GitSource(checkout.git_dir, checkout.sha), settings)

    def index(self, checkout: Checkout, settings: EngineSettings) -> Any:
        """Build (or load from cache) the index of the checked-out commit."""
        from spider.index import build_index
        from spider.source import GitSource

        return build_index(GitSource(checkout.git_dir, checkout.sha), settings, progress=False)

    def index_for_issue(self, checkout: Checkout, settings: EngineSettings, *,
                        embed_max: int) -> tuple[Any, bool]:
        """The index an issue job ranks with, and whether it is partial.

        The graph and BM25 always; the embeddings when at most ``embed_max`` functions lack
        a cached vector (a warm start reads one matrix; a push since the last index embeds
        only what changed). With more missing (never indexed, or a cache that was wiped)
        nothing is embedded here: the query embeds only its pool (the engine's cold path,
        ``settings.cold_pool``) and the result is partial.
        """
        from spider.index import build_index
        from spider.source import GitSource

        index = build_index(GitSource(checkout.git_dir, checkout.sha),
                            settings.model_copy(update={"cold_pool": 0}), progress=False,
                            embed=False)
        if settings.first_stage not in ("dense", "hybrid") or index.has_vectors():
            return index, False
        missing = missing_vectors(index)
        index.stats["missing_vectors"] = missing
        if missing <= embed_max:
            index.vectors()  # embeds the missing ones (and writes the commit's matrix)
            return index, False
        return index, True

    def locate(self, index: Any, issue: Issue, settings: EngineSettings) -> Localization:
        """The K functions most likely to need an edit, with reasons."""
        from spider.locate import locate

        return locate(index, issue, settings)


def missing_vectors(index: Any) -> int:
    """How many of the index's functions have no vector in the embedding cache (one batch
    read of the cache; nothing is embedded)."""
    from spider.retrieve.cache import text_key

    docs = index.documents()
    enc = index.encoder()
    if enc.cache is None:
        return len(docs)
    keys = {text_key(enc.model_id, enc._clip(t)) for t in docs}  # the key encode() uses
    return len(keys) - len(enc.cache.get_many(keys))
