"""Java: packages, overloaded constructors, nested types, static imports, super calls."""

from __future__ import annotations

import pytest

from spider.graph import CodeGraph

from .conftest import build_fixture, definitions, edges


@pytest.fixture(scope="module")
def cg() -> CodeGraph:
    return build_fixture("java")


DEFINITIONS = {
    "src/main/java/com/acme/Animal.java:Animal": ("class", 3, 15),
    "src/main/java/com/acme/Animal.java:Animal.Animal": ("function", 6, 8),
    "src/main/java/com/acme/Animal.java:Animal.describe": ("function", 12, 14),
    "src/main/java/com/acme/Dog.java:Dog": ("class", 6, 38),
    "src/main/java/com/acme/Dog.java:Dog.Dog": ("function", 7, 9),
    "src/main/java/com/acme/Dog.java:Dog.Dog#2": ("function", 11, 13),
    "src/main/java/com/acme/Dog.java:Dog.sound": ("function", 15, 18),
    "src/main/java/com/acme/Dog.java:Dog.describe": ("function", 20, 23),
    "src/main/java/com/acme/Dog.java:Dog.Tag": ("class", 25, 29),
    "src/main/java/com/acme/Dog.java:Dog.Tag.render": ("function", 26, 28),
    "src/main/java/com/acme/Dog.java:Dog.Size": ("class", 31, 37),
    "src/main/java/com/acme/Dog.java:Dog.Size.weight": ("function", 34, 36),
    "src/main/java/com/acme/Named.java:Named": ("class", 3, 5),
    "src/main/java/com/acme/util/Strings.java:Strings": ("class", 3, 13),
    "src/main/java/com/acme/util/Strings.java:Strings.Strings": ("function", 4, 4),
    "src/main/java/com/acme/util/Strings.java:Strings.trim": ("function", 6, 8),
    "src/main/java/com/acme/util/Strings.java:Strings.shout": ("function", 10, 12),
}

INVOKES = {
    (
        "src/main/java/com/acme/Animal.java:Animal.describe",
        "src/main/java/com/acme/Dog.java:Dog.sound",
    ),
    (
        "src/main/java/com/acme/Dog.java:Dog.Dog#2",
        "src/main/java/com/acme/util/Strings.java:Strings.trim",
    ),
    (
        "src/main/java/com/acme/Dog.java:Dog.Tag.render",
        "src/main/java/com/acme/util/Strings.java:Strings.trim",
    ),
    (
        "src/main/java/com/acme/Dog.java:Dog.describe",
        "src/main/java/com/acme/Animal.java:Animal.describe",
    ),
    (
        "src/main/java/com/acme/Dog.java:Dog.describe",
        "src/main/java/com/acme/Dog.java:Dog.Tag.render",
    ),
    (
        "src/main/java/com/acme/Dog.java:Dog.sound",
        "src/main/java/com/acme/util/Strings.java:Strings.shout",
    ),
    (
        "src/main/java/com/acme/util/Strings.java:Strings.shout",
        "src/main/java/com/acme/util/Strings.java:Strings.trim",
    ),
}

IMPORTS = {
    ("src/main/java/com/acme/Dog.java", "src/main/java/com/acme/util/Strings.java"),
    ("src/main/java/com/acme/Dog.java", "src/main/java/com/acme/util/Strings.java:Strings"),
    ("src/main/java/com/acme/Dog.java", "src/main/java/com/acme/util/Strings.java:Strings.shout"),
}

INHERITS = {
    ("src/main/java/com/acme/Animal.java:Animal", "src/main/java/com/acme/Named.java:Named"),
    ("src/main/java/com/acme/Dog.java:Dog", "src/main/java/com/acme/Animal.java:Animal"),
}


def test_definitions(cg: CodeGraph) -> None:
    assert definitions(cg) == DEFINITIONS


def test_edges(cg: CodeGraph) -> None:
    assert edges(cg, "invokes") == INVOKES
    assert edges(cg, "imports") == IMPORTS
    assert edges(cg, "inherits") == INHERITS


def test_stats(cg: CodeGraph) -> None:
    assert cg.stats.parsed == {"java": 4}
    assert cg.stats.skipped == {"tests": 1}
