"""The supported languages: file extensions, grammar, query file and import conventions.

Everything about a language's *syntax* lives in its query file
(``spider/graph/queries/<query>.scm``); this table only holds what a query cannot say:
which files belong to the language, how its import strings name files, and whether a
bare call inside a method can reach the class's other methods.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

ImportStyle = Literal["python", "module", "path"]


@dataclass(frozen=True)
class LanguageSpec:
    """How one language is parsed and how its imports are resolved."""

    name: str  # the language reported in node attributes and stats
    grammar: str  # tree_sitter_language_pack name
    query: str  # stem of the query file in spider/graph/queries/
    extensions: tuple[str, ...]
    family: str  # languages whose files may import one another
    import_style: ImportStyle  # python: dotted+relative dots; module: dotted; path: strings
    module_stems: tuple[str, ...] = ()  # file stems that stand for their directory
    path_suffixes: tuple[str, ...] = ()  # tried after an extensionless import path
    implicit_self_calls: bool = False  # a bare call in a method may target a sibling method
    bare_specifier_min_segments: int = 1  # non-relative path imports need this many segments
    import_targets_directory: bool = False  # Go: an import names a package directory


_JS_SUFFIXES = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")

LANGUAGES: tuple[LanguageSpec, ...] = (
    LanguageSpec(
        "python", "python", "python", (".py",), "python", "python", module_stems=("__init__",)
    ),
    LanguageSpec("java", "java", "java", (".java",), "jvm", "module", implicit_self_calls=True),
    LanguageSpec(
        "kotlin", "kotlin", "kotlin", (".kt", ".kts"), "jvm", "module", implicit_self_calls=True
    ),
    LanguageSpec(
        "csharp", "csharp", "csharp", (".cs",), "csharp", "module", implicit_self_calls=True
    ),
    LanguageSpec(
        "php", "php", "php", (".php",), "php", "module", path_suffixes=(".php",)
    ),
    # JS bare specifiers ("react") name npm packages: resolve only "pkg/sub"-like paths.
    LanguageSpec(
        "javascript",
        "javascript",
        "javascript",
        (".js", ".jsx", ".mjs", ".cjs"),
        "js",
        "path",
        module_stems=("index",),
        path_suffixes=_JS_SUFFIXES,
        bare_specifier_min_segments=2,
    ),
    LanguageSpec(
        "typescript",
        "typescript",
        "typescript",
        (".ts", ".mts", ".cts"),
        "js",
        "path",
        module_stems=("index",),
        path_suffixes=_JS_SUFFIXES,
        bare_specifier_min_segments=2,
    ),
    LanguageSpec(
        "typescript",
        "tsx",
        "typescript",
        (".tsx",),
        "js",
        "path",
        module_stems=("index",),
        path_suffixes=_JS_SUFFIXES,
        bare_specifier_min_segments=2,
    ),
    LanguageSpec("go", "go", "go", (".go",), "go", "path", import_targets_directory=True),
    LanguageSpec(
        "rust",
        "rust",
        "rust",
        (".rs",),
        "rust",
        "module",
        module_stems=("mod",),
        path_suffixes=(".rs",),
    ),
    LanguageSpec(
        "ruby",
        "ruby",
        "ruby",
        (".rb",),
        "ruby",
        "path",
        path_suffixes=(".rb",),
        implicit_self_calls=True,
    ),
    LanguageSpec("c", "c", "c", (".c",), "c", "path"),
    LanguageSpec(
        "cpp",
        "cpp",
        "cpp",
        (".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".ipp", ".tpp"),
        "c",
        "path",
        implicit_self_calls=True,
    ),
)

# A .h header is C++ when the repository holds any C++ source, else C.
AMBIGUOUS_HEADER = ".h"

_BY_EXTENSION: dict[str, LanguageSpec] = {ext: s for s in LANGUAGES for ext in s.extensions}
_BY_NAME: dict[str, LanguageSpec] = {}
for _spec in LANGUAGES:
    _BY_NAME.setdefault(_spec.name, _spec)
C_SPEC = _BY_NAME["c"]
CPP_SPEC = _BY_NAME["cpp"]


def language_names() -> list[str]:
    """The language names this package parses."""
    return sorted(_BY_NAME)


def extension_of(path: str) -> str:
    """The lower-cased extension of a path ("" when none)."""
    return PurePosixPath(path).suffix.lower()


def spec_for_path(path: str, *, headers_are_cpp: bool = False) -> LanguageSpec | None:
    """The language of a file from its extension, or None when unsupported."""
    ext = extension_of(path)
    if ext == AMBIGUOUS_HEADER:
        return CPP_SPEC if headers_are_cpp else C_SPEC
    return _BY_EXTENSION.get(ext)


def has_cpp_sources(paths: list[str]) -> bool:
    """Whether any path is a C++ file (so .h headers are parsed as C++)."""
    return any(_BY_EXTENSION.get(extension_of(p)) is CPP_SPEC for p in paths)
