"""The code graph: directories, files, classes and functions, built from tree-sitter trees.

``build_graph(source, settings, progress)`` parses a SourceTree into a CodeGraph with
``contains``, ``invokes``, ``imports`` and ``inherits`` edges (``count_source_files`` says
beforehand how many files that parses); see ``model`` for node ids
and attributes, ``extract`` for the capture names of the per-language query files and
``resolve`` for how calls are linked. The benchmark's id convention (enclosing functions
dropped, ``#n`` stripped) is ``spider.ids.dataset_id``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spider.lazy import lazy_names

__all__ = [
    "CodeGraph",
    "NodeInfo",
    "ParseStats",
    "build_graph",
    "count_source_files",
    "language_names",
]

# Loaded on first use: a query reads a saved graph (``model``) and never parses, so it must
# not pay for the parsers (tree-sitter, its grammars, GitPython) that ``build`` imports.
_LAZY = {
    "CodeGraph": "spider.graph.model",
    "NodeInfo": "spider.graph.model",
    "ParseStats": "spider.graph.model",
    "build_graph": "spider.graph.build",
    "count_source_files": "spider.graph.build",
    "language_names": "spider.graph.languages",
}

if TYPE_CHECKING:  # pragma: no cover
    from spider.graph.build import build_graph, count_source_files
    from spider.graph.languages import language_names
    from spider.graph.model import CodeGraph, NodeInfo, ParseStats


__getattr__ = lazy_names(__name__, _LAZY)
