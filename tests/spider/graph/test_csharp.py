"""C#: namespaces, constructors, expression-bodied members, local functions."""

from __future__ import annotations

import pytest

from spider.graph import CodeGraph

from .conftest import build_fixture, definitions, edges


@pytest.fixture(scope="module")
def cg() -> CodeGraph:
    return build_fixture("csharp")


DEFINITIONS = {
    "App/Program.cs:Program": ("class", 5, 12),
    "App/Program.cs:Program.Main": ("function", 7, 11),
    "Zoo/Animals.cs:IPet": ("class", 5, 8),
    "Zoo/Animals.cs:Animal": ("class", 10, 22),
    "Zoo/Animals.cs:Animal.Animal": ("function", 12, 15),
    "Zoo/Animals.cs:Animal.Describe": ("function", 21, 21),
    "Zoo/Animals.cs:Dog": ("class", 24, 40),
    "Zoo/Animals.cs:Dog.Dog": ("function", 26, 26),
    "Zoo/Animals.cs:Dog.Sound": ("function", 28, 31),
    "Zoo/Animals.cs:Dog.Greet": ("function", 33, 37),
    "Zoo/Animals.cs:Dog.Greet.Wrap": ("function", 35, 35),
    "Zoo/Animals.cs:Dog.Loud": ("function", 39, 39),
}

INVOKES = {
    ("App/Program.cs:Program.Main", "Zoo/Animals.cs:Dog.Dog"),
    ("App/Program.cs:Program.Main", "Zoo/Animals.cs:Dog.Greet"),
    ("Zoo/Animals.cs:Animal.Describe", "Zoo/Animals.cs:Dog.Sound"),
    ("Zoo/Animals.cs:Dog.Greet", "Zoo/Animals.cs:Animal.Describe"),
    ("Zoo/Animals.cs:Dog.Greet", "Zoo/Animals.cs:Dog.Greet.Wrap"),
    ("Zoo/Animals.cs:Dog.Sound", "Zoo/Animals.cs:Dog.Loud"),
}

IMPORTS = {
    ("App/Program.cs", "Zoo/Animals.cs"),
}

INHERITS = {
    ("Zoo/Animals.cs:Dog", "Zoo/Animals.cs:Animal"),
    ("Zoo/Animals.cs:Dog", "Zoo/Animals.cs:IPet"),
}


def test_definitions(cg: CodeGraph) -> None:
    assert definitions(cg) == DEFINITIONS


def test_edges(cg: CodeGraph) -> None:
    assert edges(cg, "invokes") == INVOKES
    assert edges(cg, "imports") == IMPORTS
    assert edges(cg, "inherits") == INHERITS


def test_stats(cg: CodeGraph) -> None:
    assert cg.stats.parsed == {"csharp": 2}
    assert cg.stats.skipped == {}
