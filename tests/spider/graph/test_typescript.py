"""TypeScript and TSX: interfaces, abstract classes, namespaces, decorators, overloads."""

from __future__ import annotations

import pytest

from spider.graph import CodeGraph

from .conftest import build_fixture, definitions, edges


@pytest.fixture(scope="module")
def cg() -> CodeGraph:
    return build_fixture("typescript")


DEFINITIONS = {
    "src/components/Badge.tsx:Badge": ("function", 5, 7),
    "src/components/Badge.tsx:Pill": ("function", 9, 9),
    "src/models.ts:Named": ("class", 1, 3),
    "src/models.ts:Kind": ("class", 5, 8),
    "src/models.ts:Entity": ("class", 10, 16),
    "src/models.ts:Entity.name": ("function", 13, 15),
    "src/models.ts:User": ("class", 18, 29),
    "src/models.ts:User.constructor": ("function", 19, 21),
    "src/models.ts:User.id": ("function", 23, 25),
    "src/models.ts:User.greet": ("function", 27, 28),
    "src/models.ts:Format.upper": ("function", 32, 34),
    "src/models.ts:label": ("function", 37, 39),
    "src/models.ts:overload": ("function", 43, 45),
    "src/service.ts:Service": ("class", 4, 16),
    "src/service.ts:Service.enroll": ("function", 7, 11),
    "src/service.ts:Service.describe": ("function", 13, 15),
}

INVOKES = {
    ("src/components/Badge.tsx:Badge", "src/components/Badge.tsx:Pill"),
    ("src/components/Badge.tsx:Badge", "src/models.ts:Entity.name"),
    ("src/components/Badge.tsx:Badge", "src/service.ts:Service.enroll"),
    ("src/models.ts:Entity.name", "src/models.ts:User.id"),
    ("src/models.ts:Entity.name", "src/models.ts:label"),
    ("src/models.ts:User.greet", "src/models.ts:Entity.name"),
    ("src/models.ts:label", "src/models.ts:Format.upper"),
    ("src/service.ts:Service.enroll", "src/models.ts:User.constructor"),
    ("src/service.ts:Service.describe", "src/models.ts:User.id"),
    ("src/service.ts:Service.describe", "src/models.ts:label"),
}

IMPORTS = {
    ("src/components/Badge.tsx", "src/service.ts"),
    ("src/components/Badge.tsx", "src/service.ts:Service"),
    ("src/service.ts", "src/models.ts"),
    ("src/service.ts", "src/models.ts:Named"),
    ("src/service.ts", "src/models.ts:User"),
    ("src/service.ts", "src/models.ts:label"),
}

INHERITS = {
    ("src/models.ts:Entity", "src/models.ts:Named"),
    ("src/models.ts:User", "src/models.ts:Entity"),
}


def test_definitions(cg: CodeGraph) -> None:
    assert definitions(cg) == DEFINITIONS


def test_edges(cg: CodeGraph) -> None:
    assert edges(cg, "invokes") == INVOKES
    assert edges(cg, "imports") == IMPORTS
    assert edges(cg, "inherits") == INHERITS


def test_stats(cg: CodeGraph) -> None:
    assert cg.stats.parsed == {"typescript": 3}
    assert cg.stats.skipped == {"vendored": 1}


def test_tsx_and_declaration_files(cg: CodeGraph) -> None:
    assert cg.node("src/components/Badge.tsx").language == "typescript"
    assert "src/models.d.ts" not in cg.g  # excluded by default
    assert cg.node("src/models.ts:User.greet").text.startswith("@memo()")
