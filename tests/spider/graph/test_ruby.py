"""Ruby: modules as classes, mixins, calls without parentheses, Foo.new."""

from __future__ import annotations

import pytest

from spider.graph import CodeGraph

from .conftest import build_fixture, definitions, edges


@pytest.fixture(scope="module")
def cg() -> CodeGraph:
    return build_fixture("ruby")


DEFINITIONS = {
    "lib/zoo.rb:Zoo": ("class", 4, 8),
    "lib/zoo.rb:Zoo.open": ("function", 5, 7),
    "lib/zoo/animal.rb:Zoo": ("class", 3, 34),
    "lib/zoo/animal.rb:Zoo.Animal": ("class", 4, 18),
    "lib/zoo/animal.rb:Zoo.Animal.initialize": ("function", 7, 9),
    "lib/zoo/animal.rb:Zoo.Animal.speak": ("function", 11, 13),
    "lib/zoo/animal.rb:Zoo.Animal.sound": ("function", 15, 17),
    "lib/zoo/animal.rb:Zoo.Dog": ("class", 20, 33),
    "lib/zoo/animal.rb:Zoo.Dog.sound": ("function", 21, 24),
    "lib/zoo/animal.rb:Zoo.Dog.bark": ("function", 26, 28),
    "lib/zoo/animal.rb:Zoo.Dog.create": ("function", 30, 32),
    "lib/zoo/walkable.rb:Zoo": ("class", 1, 7),
    "lib/zoo/walkable.rb:Zoo.Walkable": ("class", 2, 6),
    "lib/zoo/walkable.rb:Zoo.Walkable.walk": ("function", 3, 5),
}

INVOKES = {
    ("lib/zoo.rb:Zoo.open", "lib/zoo/animal.rb:Zoo.Animal.initialize"),
    ("lib/zoo.rb:Zoo.open", "lib/zoo/animal.rb:Zoo.Animal.speak"),
    ("lib/zoo/animal.rb:Zoo.Animal.speak", "lib/zoo/animal.rb:Zoo.Animal.sound"),
    ("lib/zoo/animal.rb:Zoo.Dog.create", "lib/zoo/animal.rb:Zoo.Animal.initialize"),
    ("lib/zoo/animal.rb:Zoo.Dog.sound", "lib/zoo/animal.rb:Zoo.Dog.bark"),
    ("lib/zoo/animal.rb:Zoo.Dog.sound", "lib/zoo/walkable.rb:Zoo.Walkable.walk"),
}

IMPORTS = {
    ("lib/zoo.rb", "lib/zoo/animal.rb"),
    ("lib/zoo/animal.rb", "lib/zoo/walkable.rb"),
}

INHERITS = {
    ("lib/zoo/animal.rb:Zoo.Animal", "lib/zoo/walkable.rb:Zoo.Walkable"),
    ("lib/zoo/animal.rb:Zoo.Dog", "lib/zoo/animal.rb:Zoo.Animal"),
}


def test_definitions(cg: CodeGraph) -> None:
    assert definitions(cg) == DEFINITIONS


def test_edges(cg: CodeGraph) -> None:
    assert edges(cg, "invokes") == INVOKES
    assert edges(cg, "imports") == IMPORTS
    assert edges(cg, "inherits") == INHERITS


def test_stats(cg: CodeGraph) -> None:
    assert cg.stats.parsed == {"ruby": 3}
    assert cg.stats.skipped == {}
