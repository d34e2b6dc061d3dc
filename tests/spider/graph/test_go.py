"""Go: methods attached to their receiver type across files, embedding, package imports."""

from __future__ import annotations

import pytest

from spider.graph import CodeGraph

from .conftest import build_fixture, definitions, edges


@pytest.fixture(scope="module")
def cg() -> CodeGraph:
    return build_fixture("go")


DEFINITIONS = {
    "server/routes.go:Server.banner": ("function", 3, 5),
    "server/routes.go:Server.listen": ("function", 7, 9),
    "server/routes.go:helperForRoutes": ("function", 11, 13),
    "server/server.go:Handler": ("class", 9, 11),
    "server/server.go:Base": ("class", 13, 13),
    "server/server.go:Server": ("class", 15, 18),
    "server/server.go:New": ("function", 20, 22),
    "server/server.go:Server.Start": ("function", 24, 27),
    "server/server.go:Base.Version": ("function", 29, 31),
    "util/strings.go:Clean": ("function", 5, 7),
    "util/strings.go:trim": ("function", 9, 11),
    "util/strings.go:Builder.Build": ("function", 14, 16),
    "util/strings.go:Builder": ("class", 18, 20),
}

INVOKES = {
    ("server/routes.go:Server.banner", "server/server.go:Base.Version"),
    ("server/routes.go:helperForRoutes", "server/server.go:New"),
    ("server/server.go:New", "util/strings.go:Clean"),
    ("server/server.go:Server.Start", "server/routes.go:Server.banner"),
    ("server/server.go:Server.Start", "server/routes.go:Server.listen"),
    ("util/strings.go:Builder.Build", "util/strings.go:Clean"),
    ("util/strings.go:Clean", "util/strings.go:trim"),
}

IMPORTS = {
    ("server/server.go", "util/strings.go"),
}

INHERITS = {
    ("server/server.go:Server", "server/server.go:Base"),
}


def test_definitions(cg: CodeGraph) -> None:
    assert definitions(cg) == DEFINITIONS


def test_edges(cg: CodeGraph) -> None:
    assert edges(cg, "invokes") == INVOKES
    assert edges(cg, "imports") == IMPORTS
    assert edges(cg, "inherits") == INHERITS


def test_stats(cg: CodeGraph) -> None:
    assert cg.stats.parsed == {"go": 3}
    assert cg.stats.skipped == {"tests": 1}


def test_methods_attach_to_their_receiver_type(cg: CodeGraph) -> None:
    contains = edges(cg, "contains")
    assert ("server/server.go:Server", "server/server.go:Server.Start") in contains
    assert ("server/server.go:Base", "server/server.go:Base.Version") in contains
    # the type is declared in another file of the package: the file holds the method
    assert ("server/routes.go", "server/routes.go:Server.banner") in contains
    # a method written before its type in the same file
    assert ("util/strings.go:Builder", "util/strings.go:Builder.Build") in contains
