"""Function shapes the coverage benchmark (``spider bench coverage``) found missing.

One fixture source per shape under ``fixtures/shapes/<language>/``; each test names the
function nodes (id -> line range) the shape must produce.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spider.graph import CodeGraph, build_graph
from spider.graph.extract import anonymous_export_name, display_name
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
    # module.exports = async (req, res) => {}: the default export, named `exports`
    ("javascript", "anonymous_module_exports.js"): {
        "anonymous_module_exports.js:exports": (3, 6),
    },
    # export default function () {}: named `default` in the graph (the id convention);
    # shown by its file's name (extract.display_name)
    ("javascript", "lib/adapters/xhr.js"): {
        "lib/adapters/xhr.js:default": (1, 3),
    },
    ("javascript", "src/plugin/utc/index.js"): {
        "src/plugin/utc/index.js:default": (1, 4),
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


@pytest.mark.parametrize(
    ("path", "name", "shown"),
    [
        ("lib/adapters/xhr.js", "default", "xhr"),
        ("src/plugin/utc/index.js", "default.proto.utcOffset", "utc.proto.utcOffset"),
        ("api/pin.js", "exports", "pin"),
        ("src/json.py", "JSONEncoder.default", "JSONEncoder.default"),
        ("src/enc.py", "default", "default"),  # Python may name a function `default`
        ("lib/x.js", "defaults.merge", "defaults.merge"),
    ],
)
def test_display_name_shows_an_anonymous_export_by_its_file(
    path: str, name: str, shown: str
) -> None:
    assert display_name(path, name) == shown
