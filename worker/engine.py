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

    def locate(self, index: Any, issue: Issue, settings: EngineSettings) -> Localization:
        """The K functions most likely to need an edit, with reasons."""
        from spider.locate import locate

        return locate(index, issue, settings)
