"""Rust: impl blocks attach methods to their type, traits, modules, use paths."""

from __future__ import annotations

import pytest

from spider.graph import CodeGraph

from .conftest import build_fixture, definitions, edges


@pytest.fixture(scope="module")
def cg() -> CodeGraph:
    return build_fixture("rust")


DEFINITIONS = {
    "src/geo/shapes.rs:Shape": ("class", 1, 7),
    "src/geo/shapes.rs:Shape.describe": ("function", 4, 6),
    "src/geo/shapes.rs:Circle": ("class", 9, 11),
    "src/geo/shapes.rs:Circle.new": ("function", 14, 16),
    "src/geo/shapes.rs:Circle.scaled": ("function", 18, 20),
    "src/geo/shapes.rs:Circle.area": ("function", 24, 26),
    "src/geo/shapes.rs:extra.helper": ("function", 30, 35),
    "src/geo/shapes.rs:extra.helper.inner": ("function", 31, 33),
    "src/lib.rs:total_area": ("function", 7, 10),
    "src/lib.rs:unit": ("function", 12, 14),
    "src/util.rs:round2": ("function", 1, 3),
}

INVOKES = {
    ("src/geo/shapes.rs:Circle.scaled", "src/geo/shapes.rs:Circle.new"),
    ("src/geo/shapes.rs:extra.helper", "src/geo/shapes.rs:extra.helper.inner"),
    ("src/lib.rs:total_area", "src/geo/shapes.rs:Circle.area"),
    ("src/lib.rs:total_area", "src/util.rs:round2"),
    ("src/lib.rs:unit", "src/geo/shapes.rs:Circle.new"),
}

IMPORTS = {
    ("src/geo/mod.rs", "src/geo/shapes.rs"),
    ("src/lib.rs", "src/geo/mod.rs"),
    ("src/lib.rs", "src/geo/shapes.rs"),
    ("src/lib.rs", "src/geo/shapes.rs:Circle"),
    ("src/lib.rs", "src/geo/shapes.rs:Shape"),
    ("src/lib.rs", "src/util.rs"),
    ("src/lib.rs", "src/util.rs:round2"),
}

INHERITS = {
    ("src/geo/shapes.rs:Circle", "src/geo/shapes.rs:Shape"),
}


def test_definitions(cg: CodeGraph) -> None:
    assert definitions(cg) == DEFINITIONS


def test_edges(cg: CodeGraph) -> None:
    assert edges(cg, "invokes") == INVOKES
    assert edges(cg, "imports") == IMPORTS
    assert edges(cg, "inherits") == INHERITS


def test_stats(cg: CodeGraph) -> None:
    assert cg.stats.parsed == {"rust": 4}
    assert cg.stats.skipped == {}


def test_impl_blocks_attach_to_the_type(cg: CodeGraph) -> None:
    contains = edges(cg, "contains")
    assert ("src/geo/shapes.rs:Circle", "src/geo/shapes.rs:Circle.new") in contains
    assert (
        "src/geo/shapes.rs:Circle",
        "src/geo/shapes.rs:Circle.area",
    ) in contains  # impl Shape for
    assert ("src/geo/shapes.rs", "src/geo/shapes.rs:extra.helper") in contains  # inline module
