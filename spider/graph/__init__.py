"""The code graph: directories, files, classes and functions, built from tree-sitter trees.

``build_graph(source, settings, progress)`` parses a SourceTree into a CodeGraph with
``contains``, ``invokes``, ``imports`` and ``inherits`` edges (``count_source_files`` says
beforehand how many files that parses); see ``model`` for node ids
and attributes, ``extract`` for the capture names of the per-language query files and
``resolve`` for how calls are linked. The benchmark's id convention (enclosing functions
dropped, ``#n`` stripped) is ``spider.ids.dataset_id``.
"""

from spider.graph.build import build_graph, count_source_files
from spider.graph.languages import language_names
from spider.graph.model import CodeGraph, NodeInfo, ParseStats

__all__ = [
    "CodeGraph",
    "NodeInfo",
    "ParseStats",
    "build_graph",
    "count_source_files",
    "language_names",
]
