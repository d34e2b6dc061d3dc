"""JavaScript and JSX: classes, arrows, prototype and object-literal members, CommonJS."""

from __future__ import annotations

import pytest

from spider.graph import CodeGraph

from .conftest import build_fixture, definitions, edges


@pytest.fixture(scope="module")
def cg() -> CodeGraph:
    return build_fixture("javascript")


DEFINITIONS = {
    "src/lib/util.js:helper": ("function", 1, 3),
    "src/lib/util.js:double": ("function", 5, 5),
    "src/lib/util.js:triple": ("function", 7, 9),
    "src/lib/util.js:quadruple": ("function", 11, 11),
    "src/shapes.js:Shape": ("class", 5, 21),
    "src/shapes.js:Shape.constructor": ("function", 6, 8),
    "src/shapes.js:Shape.area": ("function", 10, 12),
    "src/shapes.js:Shape.describe": ("function", 14, 16),
    "src/shapes.js:Shape.onClick": ("function", 18, 20),
    "src/shapes.js:Square": ("class", 23, 27),
    "src/shapes.js:Square.area": ("function", 24, 26),
    "src/shapes.js:makeShape": ("function", 29, 31),
    "src/shapes.js:Legacy": ("function", 33, 37),
    "src/shapes.js:Legacy.start": ("function", 34, 36),
    "src/shapes.js:Legacy.run": ("function", 39, 41),
    "src/shapes.js:api.get": ("function", 44, 46),
    "src/shapes.js:api.post": ("function", 47, 49),
    "src/shapes.js:fetchIt": ("function", 52, 54),
    "src/widget.jsx:Widget": ("function", 3, 3),
    "src/widget.jsx:Button": ("function", 5, 7),
}

INVOKES = {
    ("src/lib/util.js:double", "src/lib/util.js:helper"),
    ("src/lib/util.js:quadruple", "src/lib/util.js:double"),
    ("src/lib/util.js:triple", "src/lib/util.js:helper"),
    ("src/shapes.js:Legacy.run", "src/shapes.js:Legacy.start"),
    ("src/shapes.js:Legacy.start", "src/shapes.js:fetchIt"),
    ("src/shapes.js:Shape.describe", "src/shapes.js:Shape.area"),
    ("src/shapes.js:Shape.onClick", "src/shapes.js:Shape.describe"),
    ("src/shapes.js:Square.area", "src/lib/util.js:double"),
    ("src/shapes.js:Square.area", "src/lib/util.js:helper"),
    ("src/shapes.js:Square.area", "src/lib/util.js:triple"),
    ("src/shapes.js:api.get", "src/shapes.js:fetchIt"),
    ("src/shapes.js:api.post", "src/shapes.js:api.get"),
    ("src/shapes.js:makeShape", "src/shapes.js:Shape.constructor"),
    ("src/widget.jsx:Button", "src/shapes.js:Shape.describe"),
    ("src/widget.jsx:Button", "src/shapes.js:makeShape"),
    ("src/widget.jsx:Widget", "src/widget.jsx:Button"),
}

IMPORTS = {
    ("src/shapes.js", "src/lib/util.js"),
    ("src/shapes.js", "src/lib/util.js:helper"),
    ("src/shapes.js", "src/lib/util.js:triple"),
    ("src/widget.jsx", "src/shapes.js"),
}

INHERITS = {
    ("src/shapes.js:Square", "src/shapes.js:Shape"),
}


def test_definitions(cg: CodeGraph) -> None:
    assert definitions(cg) == DEFINITIONS


def test_edges(cg: CodeGraph) -> None:
    assert edges(cg, "invokes") == INVOKES
    assert edges(cg, "imports") == IMPORTS
    assert edges(cg, "inherits") == INHERITS


def test_stats(cg: CodeGraph) -> None:
    assert cg.stats.parsed == {"javascript": 3}
    assert cg.stats.skipped == {"vendored": 1}


def test_members_and_their_containers(cg: CodeGraph) -> None:
    contains = edges(cg, "contains")
    assert ("src/shapes.js:Shape", "src/shapes.js:Shape.onClick") in contains  # class field arrow
    assert ("src/shapes.js", "src/shapes.js:Legacy.run") in contains  # prototype member
    assert ("src/shapes.js:Legacy", "src/shapes.js:Legacy.start") in contains  # this.f = ...
    assert ("src/shapes.js", "src/shapes.js:api.get") in contains  # object-literal member
    assert cg.node("src/widget.jsx").language == "javascript"
