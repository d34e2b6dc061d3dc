"""C: typedef structs, prototypes are not definitions, includes found by path suffix."""

from __future__ import annotations

import pytest

from spider.graph import CodeGraph

from .conftest import build_fixture, definitions, edges


@pytest.fixture(scope="module")
def cg() -> CodeGraph:
    return build_fixture("c")


DEFINITIONS = {
    "include/list.h:node": ("class", 4, 7),
    "include/list.h:list_t": ("class", 9, 12),
    "src/list.c:node_new": ("function", 4, 8),
    "src/list.c:list_new": ("function", 10, 12),
    "src/list.c:list_push": ("function", 14, 19),
    "src/main.c:main": ("function", 3, 7),
}

INVOKES = {
    ("src/list.c:list_push", "src/list.c:node_new"),
    ("src/main.c:main", "src/list.c:list_new"),
    ("src/main.c:main", "src/list.c:list_push"),
}

IMPORTS = {
    ("src/list.c", "include/list.h"),
    ("src/main.c", "include/list.h"),
}

INHERITS = set()


def test_definitions(cg: CodeGraph) -> None:
    assert definitions(cg) == DEFINITIONS


def test_edges(cg: CodeGraph) -> None:
    assert edges(cg, "invokes") == INVOKES
    assert edges(cg, "imports") == IMPORTS
    assert edges(cg, "inherits") == INHERITS


def test_stats(cg: CodeGraph) -> None:
    assert cg.stats.parsed == {"c": 3}
    assert cg.stats.skipped == {}


def test_headers_are_c_without_cpp_sources(cg: CodeGraph) -> None:
    assert cg.node("include/list.h").language == "c"
