"""Index real third-party source installed from PyPI (click), copied to a temporary dir."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import click
import pytest

from spider.graph import CodeGraph, build_graph
from spider.settings import EngineSettings
from spider.source import DirectorySource

from .conftest import edges


@pytest.fixture(scope="module")
def click_graph(tmp_path_factory: pytest.TempPathFactory) -> tuple[CodeGraph, Path, float]:
    """The graph of click's sources, their copy, and the wall time the build took."""
    root = tmp_path_factory.mktemp("click-src")
    shutil.copytree(
        Path(click.__file__).parent, root / "click", ignore=shutil.ignore_patterns("__pycache__")
    )
    started = time.monotonic()
    cg = build_graph(DirectorySource(root), EngineSettings())
    return cg, root, time.monotonic() - started


def test_every_definition_is_well_formed(click_graph: tuple[CodeGraph, Path, float]) -> None:
    cg, root, _ = click_graph
    functions = cg.functions()
    assert len(functions) > 300
    lines = {p: len((root / p).read_text("utf-8").splitlines()) for p in cg.nodes_of_kind("file")}
    for node_id in functions + list(cg.nodes_of_kind("class")):
        info = cg.node(node_id)
        path, _, name = node_id.partition(":")
        assert path == info.path and path in lines
        assert name.split("#")[0] == info.name and all(info.name.split("."))
        assert 1 <= info.start_line <= info.end_line <= lines[path], node_id
        assert info.text.count("\n") == info.end_line - info.start_line, node_id
        assert info.language == "python"


def test_edges_are_typed_and_sane(click_graph: tuple[CodeGraph, Path, float]) -> None:
    cg, _, _ = click_graph
    invokes = edges(cg, "invokes")
    assert len(invokes) > 200
    kinds = {n: a["kind"] for n, a in cg.g.nodes(data=True)}
    assert all(kinds[u] == kinds[v] == "function" and u != v for u, v in invokes)
    assert all(kinds[u] == kinds[v] == "class" for u, v in edges(cg, "inherits"))
    assert all(kinds[u] == "file" for u, _ in edges(cg, "imports"))
    assert ("click/core.py", "click/types.py") in edges(cg, "imports")
    assert ("click/core.py:Command", "click/core.py:Group") not in edges(cg, "inherits")
    assert ("click/core.py:Group", "click/core.py:Command") in edges(cg, "inherits")


def test_stats(click_graph: tuple[CodeGraph, Path, float]) -> None:
    cg, root, wall_s = click_graph
    py_files = len(list((root / "click").glob("*.py")))
    assert cg.stats.parsed == {"python": py_files}
    assert not cg.stats.skipped
    # the reported time is this build's own, in seconds: a build of ~20 files is measurable
    # (not 0: unset) and no longer than the wall time around it (not ms, not a stale value)
    assert 0 < cg.stats.seconds <= round(wall_s, 3) + 0.001, (cg.stats.seconds, wall_s)
