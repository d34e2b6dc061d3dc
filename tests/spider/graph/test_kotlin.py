"""Kotlin: init blocks, secondary constructors, companion and object members, extension functions."""

from __future__ import annotations

import pytest

from spider.graph import CodeGraph

from .conftest import build_fixture, definitions, edges


@pytest.fixture(scope="module")
def cg() -> CodeGraph:
    return build_fixture("kotlin")


DEFINITIONS = {
    "src/main/kotlin/com/acme/Shapes.kt:Shape": ("class", 6, 10),
    "src/main/kotlin/com/acme/Shapes.kt:Shape.describe": ("function", 9, 9),
    "src/main/kotlin/com/acme/Shapes.kt:Circle": ("class", 12, 24),
    "src/main/kotlin/com/acme/Shapes.kt:Circle.init": ("function", 13, 15),
    "src/main/kotlin/com/acme/Shapes.kt:Circle.constructor": ("function", 17, 17),
    "src/main/kotlin/com/acme/Shapes.kt:Circle.area": ("function", 19, 19),
    "src/main/kotlin/com/acme/Shapes.kt:Circle.unit": ("function", 22, 22),
    "src/main/kotlin/com/acme/Shapes.kt:Ring": ("class", 26, 31),
    "src/main/kotlin/com/acme/Shapes.kt:Ring.area": ("function", 27, 30),
    "src/main/kotlin/com/acme/Shapes.kt:Ring.area.inner": ("function", 28, 28),
    "src/main/kotlin/com/acme/Shapes.kt:Shape.twice": ("function", 33, 33),
    "src/main/kotlin/com/acme/util/Util.kt:format": ("function", 3, 3),
    "src/main/kotlin/com/acme/util/Util.kt:Registry": ("class", 5, 11),
    "src/main/kotlin/com/acme/util/Util.kt:Registry.register": ("function", 8, 10),
}

INVOKES = {
    (
        "src/main/kotlin/com/acme/Shapes.kt:Circle.init",
        "src/main/kotlin/com/acme/util/Util.kt:Registry.register",
    ),
    (
        "src/main/kotlin/com/acme/Shapes.kt:Circle.unit",
        "src/main/kotlin/com/acme/Shapes.kt:Circle.constructor",
    ),
    (
        "src/main/kotlin/com/acme/Shapes.kt:Circle.unit",
        "src/main/kotlin/com/acme/Shapes.kt:Circle.init",
    ),
    (
        "src/main/kotlin/com/acme/Shapes.kt:Ring.area",
        "src/main/kotlin/com/acme/Shapes.kt:Ring.area.inner",
    ),
    (
        "src/main/kotlin/com/acme/Shapes.kt:Ring.area.inner",
        "src/main/kotlin/com/acme/Shapes.kt:Circle.area",
    ),
    (
        "src/main/kotlin/com/acme/Shapes.kt:Shape.describe",
        "src/main/kotlin/com/acme/Shapes.kt:Circle.area",
    ),
    (
        "src/main/kotlin/com/acme/Shapes.kt:Shape.describe",
        "src/main/kotlin/com/acme/Shapes.kt:Ring.area",
    ),
    (
        "src/main/kotlin/com/acme/Shapes.kt:Shape.describe",
        "src/main/kotlin/com/acme/util/Util.kt:format",
    ),
    (
        "src/main/kotlin/com/acme/Shapes.kt:Shape.twice",
        "src/main/kotlin/com/acme/Shapes.kt:Circle.area",
    ),
    (
        "src/main/kotlin/com/acme/Shapes.kt:Shape.twice",
        "src/main/kotlin/com/acme/Shapes.kt:Ring.area",
    ),
}

IMPORTS = {
    ("src/main/kotlin/com/acme/Shapes.kt", "src/main/kotlin/com/acme/util/Util.kt"),
    ("src/main/kotlin/com/acme/Shapes.kt", "src/main/kotlin/com/acme/util/Util.kt:Registry"),
    ("src/main/kotlin/com/acme/Shapes.kt", "src/main/kotlin/com/acme/util/Util.kt:format"),
}

INHERITS = {
    ("src/main/kotlin/com/acme/Shapes.kt:Circle", "src/main/kotlin/com/acme/Shapes.kt:Shape"),
    ("src/main/kotlin/com/acme/Shapes.kt:Ring", "src/main/kotlin/com/acme/Shapes.kt:Circle"),
}


def test_definitions(cg: CodeGraph) -> None:
    assert definitions(cg) == DEFINITIONS


def test_edges(cg: CodeGraph) -> None:
    assert edges(cg, "invokes") == INVOKES
    assert edges(cg, "imports") == IMPORTS
    assert edges(cg, "inherits") == INHERITS


def test_stats(cg: CodeGraph) -> None:
    assert cg.stats.parsed == {"kotlin": 2}
    assert cg.stats.skipped == {}
