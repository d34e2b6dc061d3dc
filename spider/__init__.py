"""spider: SpIDER issue localization engine (graph, retrieval, expansion, selectors).

This module is the engine's door: the app (``worker/``, ``contract/``) imports these names
and the small modules ``spider.models``, ``spider.settings``, ``spider.errors`` and
``spider.comment``, nothing deeper (``lint-imports`` enforces it).

Importing this package is cheap: heavy modules (torch, tree-sitter) load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spider.lazy import lazy_names

__all__ = [
    "GIT_ENV",
    "EngineSettings",
    "FixMatch",
    "Hit",
    "Index",
    "Issue",
    "Localization",
    "Reason",
    "SourceTree",
    "build_index",
    "count_source_files",
    "fix_paths",
    "history_depth",
    "import_document_encoder",
    "locate",
    "match_fix",
    "normalise_id",
    "open_source",
    "preload_query_encoder",
]

_LAZY = {
    "GIT_ENV": "spider.source",
    "EngineSettings": "spider.settings",
    "FixMatch": "spider.fixes",
    "Hit": "spider.models",
    "Issue": "spider.models",
    "Localization": "spider.models",
    "Reason": "spider.models",
    "SourceTree": "spider.source",
    "Index": "spider.index",
    "build_index": "spider.index",
    "count_source_files": "spider.graph",
    "fix_paths": "spider.fixes",
    "history_depth": "spider.rank.pool_rank",
    "import_document_encoder": "spider.retrieve.dense",
    "locate": "spider.localize",
    "match_fix": "spider.fixes",
    "normalise_id": "spider.ids",
    "open_source": "spider.source",
    "preload_query_encoder": "spider.retrieve.dense",
}

if TYPE_CHECKING:  # pragma: no cover
    from spider.fixes import FixMatch, fix_paths, match_fix
    from spider.graph import count_source_files
    from spider.ids import normalise_id
    from spider.index import Index, build_index
    from spider.localize import locate
    from spider.models import Hit, Issue, Localization, Reason
    from spider.rank.pool_rank import history_depth
    from spider.retrieve.dense import import_document_encoder, preload_query_encoder
    from spider.settings import EngineSettings
    from spider.source import GIT_ENV, SourceTree, open_source


__getattr__ = lazy_names(__name__, _LAZY)
