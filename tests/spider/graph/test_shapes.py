"""Function shapes the coverage benchmark (``spider bench coverage``) found missing.

One fixture source per shape under ``fixtures/shapes/<language>/``; each test names the
function nodes (id -> line range) the shape must produce.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spider.graph import CodeGraph, build_graph
from spider.graph.extract import anonymous_export_name
from spider.settings import EngineSettings
from spider.source import DirectorySource

from .conftest import definitions

SHAPES = Path(__file__).resolve().parent / "fixtures" / "shapes"


@pytest.fixture(scope="module")
def graphs() -> dict[str, CodeGraph]:
    return {
        d.name: build_graph(DirectorySource(d), EngineSettings())
        for d in sorted(SHAPES.iterdir())
        if d.is_dir()
    }


def functions_of(cg: CodeGraph, path: str) -> dict[str, tuple[int, int]]:
    return {
        n: (start, end)
        for n, (kind, start, end) in definitions(cg).items()
        if kind == "function" and n.startswith(path + ":")
    }


CASES: dict[tuple[str, str], dict[str, tuple[int, int]]] = {
    # module.exports = function f() {} and `x && function f() {}`: the expression's own
    # name; a function that is the value of another definition keeps that definition's name
    ("javascript", "commonjs_default.js"): {
        "commonjs_default.js:httpAdapter": (1, 1),
        "commonjs_default.js:helper": (2, 2),
        "commonjs_default.js:named": (3, 3),
        "commonjs_default.js:other": (4, 4),
        "commonjs_default.js:httpAdapter2": (5, 5),
        "commonjs_default.js:obj.method": (6, 6),
        "commonjs_default.js:obj.arrow": (6, 6),
    },
    # module.exports = async (req, res) => {}: the anonymous export, named after its file
    ("javascript", "anonymous_module_exports.js"): {
        "anonymous_module_exports.js:anonymous_module_exports": (3, 6),
    },
    # export default function () {}: named after its file, not `default`
    ("javascript", "lib/adapters/xhr.js"): {
        "lib/adapters/xhr.js:xhr": (1, 3),
    },
    # an index file's anonymous export is named after its folder (a dayjs plugin)
    ("javascript", "src/plugin/utc/index.js"): {
        "src/plugin/utc/index.js:utc": (1, 4),
    },
    # a named function expression passed as an argument
    ("javascript", "named_callback.js"): {
        "named_callback.js:defineGetter": (1, 3),
        "named_callback.js:hostname": (5, 8),
        "named_callback.js:f": (10, 10),
    },
    # C++ conversion operators, plain, explicit and qualified: named by their text up to
    # the parameter list (no name token exists)
    ("cpp", "operators.cpp"): {
        "operators.cpp:result.operator bool": (3, 3),
        "operators.cpp:result.operator const char *": (4, 4),
        "operators.cpp:result.operator long&": (7, 7),
        "operators.cpp:doc.ref.operator doc&": (13, 16),
    },
    # C++ explicit template specialisations (`f<char>(...)`), the template line included
    ("cpp", "specialisation.cpp"): {
        "specialisation.cpp:find_bits": (3, 6),
        "specialisation.cpp:find_bits#2": (8, 10),
        "specialisation.cpp:Parser.get": (16, 19),
    },
}


@pytest.mark.parametrize(("language", "path"), sorted(CASES))
def test_shape(graphs: dict[str, CodeGraph], language: str, path: str) -> None:
    assert functions_of(graphs[language], path) == CASES[(language, path)]


def test_a_default_import_calls_the_anonymous_export(graphs: dict[str, CodeGraph]) -> None:
    """`import xhr from './adapters/xhr.js'; xhr()` reaches the file-named export."""
    g = graphs["javascript"].g
    assert g.has_edge("lib/axios.js:dispatchRequest", "lib/adapters/xhr.js:xhr", "invokes")


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("lib/adapters/xhr.js", "xhr"),
        ("src/plugin/utc/index.js", "utc"),
        ("index.js", "index"),
        ("api/top-langs.js", "top-langs"),
        ("src/a.config.mjs", "a"),
    ],
)
def test_anonymous_export_name(path: str, name: str) -> None:
    assert anonymous_export_name(path) == name
