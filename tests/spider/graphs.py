"""Small code graphs for unit tests: functions by (path, qualified name, start, end)."""

from __future__ import annotations

from collections.abc import Sequence

from spider.graph.model import CodeGraph

Function = tuple[str, str, int, int]  # path, qualified name, first line, last line


def graph_of(functions: Sequence[Function]) -> tuple[CodeGraph, list[str]]:
    """A graph of these function nodes (no edges) and their ids, in order."""
    g = CodeGraph()
    ids = []
    for path, name, start, end in functions:
        nid = f"{path}:{name}"
        g.add_node(nid, kind="function", path=path, name=name, start_line=start, end_line=end)
        ids.append(nid)
    return g, ids
