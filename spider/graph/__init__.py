"""The code graph: directories, files, classes and functions, built from tree-sitter trees.

``build_graph(source, settings, progress)`` parses a SourceTree into a CodeGraph with
``contains``, ``invokes``, ``imports`` and ``inherits`` edges; see ``model`` for node ids
and attributes and ``extract`` for the capture names of the per-language query files.
"""

from spider.graph.build import build_graph
from spider.graph.ids import benchmark_id, split_node_id
from spider.graph.languages import language_names
from spider.graph.model import CodeGraph, NodeInfo, ParseStats

__all__ = [
    "CodeGraph",
    "NodeInfo",
    "ParseStats",
    "benchmark_id",
    "build_graph",
    "language_names",
    "split_node_id",
]
