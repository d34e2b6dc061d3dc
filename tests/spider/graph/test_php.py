"""PHP: namespaces, traits, static calls, require_once, parent::."""

from __future__ import annotations

import pytest

from spider.graph import CodeGraph

from .conftest import build_fixture, definitions, edges


@pytest.fixture(scope="module")
def cg() -> CodeGraph:
    return build_fixture("php")


DEFINITIONS = {
    "src/Http/UserController.php:UserController": ("class", 9, 16),
    "src/Http/UserController.php:UserController.show": ("function", 11, 15),
    "src/Http/helpers.php:respond": ("function", 3, 6),
    "src/Models/Model.php:Model": ("class", 5, 16),
    "src/Models/Model.php:Model.find": ("function", 7, 10),
    "src/Models/Model.php:Model.load": ("function", 12, 15),
    "src/Models/User.php:User": ("class", 7, 25),
    "src/Models/User.php:User.__construct": ("function", 11, 14),
    "src/Models/User.php:User.jsonSerialize": ("function", 16, 19),
    "src/Models/User.php:User.display": ("function", 21, 24),
    "src/Support/Formats.php:Formats": ("class", 5, 11),
    "src/Support/Formats.php:Formats.upper": ("function", 7, 10),
}

INVOKES = {
    ("src/Http/UserController.php:UserController.show", "src/Http/helpers.php:respond"),
    ("src/Http/UserController.php:UserController.show", "src/Models/Model.php:Model.find"),
    ("src/Http/UserController.php:UserController.show", "src/Models/User.php:User.__construct"),
    ("src/Models/Model.php:Model.find", "src/Models/Model.php:Model.load"),
    ("src/Models/User.php:User.display", "src/Support/Formats.php:Formats.upper"),
    ("src/Models/User.php:User.jsonSerialize", "src/Models/User.php:User.display"),
}

IMPORTS = {
    ("src/Http/UserController.php", "src/Http/helpers.php"),
    ("src/Http/UserController.php", "src/Models/User.php"),
    ("src/Http/UserController.php", "src/Models/User.php:User"),
    ("src/Models/User.php", "src/Support/Formats.php"),
    ("src/Models/User.php", "src/Support/Formats.php:Formats"),
}

INHERITS = {
    ("src/Models/User.php:User", "src/Models/Model.php:Model"),
    ("src/Models/User.php:User", "src/Support/Formats.php:Formats"),
}


def test_definitions(cg: CodeGraph) -> None:
    assert definitions(cg) == DEFINITIONS


def test_edges(cg: CodeGraph) -> None:
    assert edges(cg, "invokes") == INVOKES
    assert edges(cg, "imports") == IMPORTS
    assert edges(cg, "inherits") == INHERITS


def test_stats(cg: CodeGraph) -> None:
    assert cg.stats.parsed == {"php": 5}
    assert cg.stats.skipped == {}
