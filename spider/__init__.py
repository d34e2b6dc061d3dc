"""spider: SpIDER issue localization engine (graph, retrieval, expansion, selectors).

Importing this package is cheap: heavy modules (torch, tree-sitter) load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "EngineSettings",
    "Hit",
    "Index",
    "Issue",
    "Localization",
    "Reason",
    "build_index",
    "locate",
    "open_source",
]

_LAZY = {
    "EngineSettings": "spider.settings",
    "Hit": "spider.models",
    "Issue": "spider.models",
    "Localization": "spider.models",
    "Reason": "spider.models",
    "Index": "spider.index",
    "build_index": "spider.index",
    "locate": "spider.locate",
    "open_source": "spider.source",
}

if TYPE_CHECKING:  # pragma: no cover
    from spider.index import Index, build_index
    from spider.locate import locate
    from spider.models import Hit, Issue, Localization, Reason
    from spider.settings import EngineSettings
    from spider.source import open_source


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'spider' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
