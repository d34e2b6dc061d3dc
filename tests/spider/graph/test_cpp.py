"""C++: .h headers parsed as C++, out-of-line methods, namespaces, templates."""

from __future__ import annotations

from pathlib import Path

import pytest

from spider.graph import CodeGraph

from .conftest import build_fixture, definitions, edges


@pytest.fixture(scope="module")
def cg() -> CodeGraph:
    return build_fixture("cpp")


DEFINITIONS = {
    "src/main.cpp:main": ("function", 3, 7),
    "src/shape.cpp:Shape.label": ("function", 5, 5),
    "src/shape.cpp:Circle.area": ("function", 7, 7),
    "src/shape.cpp:twice": ("function", 9, 12),
    "src/shape.h:Shape": ("class", 6, 14),
    "src/shape.h:Shape.~Shape": ("function", 8, 8),
    "src/shape.h:Shape.describe": ("function", 10, 10),
    "src/shape.h:Circle": ("class", 16, 23),
    "src/shape.h:Circle.Circle": ("function", 18, 18),
}

INVOKES = {
    ("src/main.cpp:main", "src/shape.cpp:Circle.area"),
    ("src/main.cpp:main", "src/shape.cpp:twice"),
    ("src/main.cpp:main", "src/shape.h:Circle.Circle"),
    ("src/shape.h:Shape.describe", "src/shape.cpp:Circle.area"),
    ("src/shape.h:Shape.describe", "src/shape.cpp:Shape.label"),
}

IMPORTS = {
    ("src/main.cpp", "src/shape.h"),
    ("src/shape.cpp", "src/shape.h"),
}

INHERITS = {
    ("src/shape.h:Circle", "src/shape.h:Shape"),
}


def test_definitions(cg: CodeGraph) -> None:
    assert definitions(cg) == DEFINITIONS


def test_edges(cg: CodeGraph) -> None:
    assert edges(cg, "invokes") == INVOKES
    assert edges(cg, "imports") == IMPORTS
    assert edges(cg, "inherits") == INHERITS


def test_stats(cg: CodeGraph) -> None:
    assert cg.stats.parsed == {"cpp": 3}
    assert cg.stats.skipped == {}


def test_headers_are_cpp_beside_cpp_sources(cg: CodeGraph) -> None:
    assert cg.node("src/shape.h").language == "cpp"
    # an out-of-line definition whose class is in another file hangs off its own file
    assert ("src/shape.cpp", "src/shape.cpp:Circle.area") in edges(cg, "contains")


def test_methods_of_template_specialisations_keep_their_class_scope(tmp_path: Path) -> None:
    from spider.graph import build_graph
    from spider.settings import EngineSettings
    from spider.source import DirectorySource

    (tmp_path / "main.cpp").write_text("int main() { return 0; }\n")
    (tmp_path / "ranges.h").write_text(
        "template <typename R, typename Char>\n"
        "struct formatter<R, Char, enable_if_t<is_range<R>::value>> {\n"
        "  auto parse(int ctx) { return ctx; }\n"
        "};\n"
        "template <> struct formatter<std::vector<bool>::reference> {\n"
        "  auto parse(int ctx) { return ctx; }\n"
        "};\n"
    )
    cg = build_graph(DirectorySource(tmp_path), EngineSettings())
    methods = sorted(n for n in cg.functions() if n.endswith(".parse"))
    assert methods == [
        "ranges.h:formatter<R,Char,enable_if_t<is_range<R>::value>>.parse",
        "ranges.h:formatter<std::vector<bool>::reference>.parse",
    ]  # two ids, not parse and parse#2
