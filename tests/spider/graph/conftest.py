"""Helpers for the code-graph tests: build a fixture repository, read nodes and edges."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spider.graph import CodeGraph, build_graph
from spider.settings import EngineSettings
from spider.source import DirectorySource

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "graph"


def build_fixture(language: str, **overrides: Any) -> CodeGraph:
    """The graph of ``tests/fixtures/graph/<language>``."""
    return build_graph(DirectorySource(FIXTURES / language), EngineSettings(**overrides))


def definitions(cg: CodeGraph) -> dict[str, tuple[str, int, int]]:
    """Class and function ids with (kind, start_line, end_line)."""
    return {
        n: (a["kind"], a["start_line"], a["end_line"])
        for n, a in cg.g.nodes(data=True)
        if a["kind"] in ("class", "function")
    }


def edges(cg: CodeGraph, edge_type: str) -> set[tuple[str, str]]:
    """Every (source, target) pair joined by an edge of one type."""
    return {(u, v) for u, v, k in cg.g.edges(keys=True) if k == edge_type}
