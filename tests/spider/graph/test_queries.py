"""Query files: the ``;; inherits:`` and ``;; only-grammar:`` directives, and the shipped files."""

from __future__ import annotations

import re

import pytest

from spider.graph.extract import (
    QueryInheritanceError,
    QueryReader,
    load_query,
    query_lineage,
    query_source,
)
from spider.graph.languages import LANGUAGES, LanguageSpec

_COMMENT = re.compile(r";[^\n]*")


def reader(files: dict[str, str]) -> QueryReader:
    """Query files from a dict instead of the package."""

    def read(stem: str) -> str:
        if stem not in files:
            raise FileNotFoundError(stem)
        return files[stem]

    return read


def test_parents_come_first_without_their_directive() -> None:
    read = reader({"child": "; the child\n;; inherits: base\n(b) @b", "base": "(a) @a"})
    assert query_source("child", "g", read) == "(a) @a\n; the child\n(b) @b"


def test_each_ancestor_once_in_the_order_named() -> None:
    read = reader(
        {
            "top": ";; inherits: left, right\n(t)",
            "left": ";; inherits: root\n(l)",
            "right": ";; inherits: root\n(r)",
            "root": "(o)",
        }
    )
    assert [stem for stem, _ in query_lineage("top", read)] == ["root", "left", "right", "top"]
    assert query_source("top", "g", read).split() == ["(o)", "(l)", "(r)", "(t)"]


def test_a_parents_grammar_sections_follow_the_childs_grammar() -> None:
    read = reader({"child": ";; inherits: base\n(c)", "base": "(a)\n;; only-grammar: x\n(x)"})
    assert query_source("child", "x", read).split() == ["(a)", "(x)", "(c)"]
    assert query_source("child", "y", read).split() == ["(a)", "(c)"]


def test_a_cycle_is_refused() -> None:
    read = reader({"a": ";; inherits: b\n(a)", "b": ";; inherits: a\n(b)"})
    with pytest.raises(QueryInheritanceError, match="a -> b -> a"):
        query_source("a", "g", read)


def test_inheriting_itself_is_refused() -> None:
    with pytest.raises(QueryInheritanceError, match="a -> a"):
        query_lineage("a", reader({"a": ";; inherits: a\n(a)"}))


def test_an_unknown_parent_is_refused() -> None:
    read = reader({"child": ";; inherits: nowhere\n(c)"})
    with pytest.raises(QueryInheritanceError, match=re.escape("child.scm inherits 'nowhere'")):
        query_source("child", "g", read)


def test_a_missing_query_file_is_still_file_not_found() -> None:
    with pytest.raises(FileNotFoundError):
        query_source("nowhere", "g", reader({}))


def test_the_directive_must_precede_the_patterns() -> None:
    read = reader({"child": "(c)\n;; inherits: base", "base": "(a)"})
    with pytest.raises(QueryInheritanceError, match="before the patterns"):
        query_source("child", "g", read)


def test_the_shipped_children_and_their_parents() -> None:
    assert [stem for stem, _ in query_lineage("typescript")] == ["javascript", "typescript"]
    assert [stem for stem, _ in query_lineage("cpp")] == ["c", "cpp"]
    assert [stem for stem, _ in query_lineage("javascript")] == ["javascript"]


@pytest.mark.parametrize("spec", LANGUAGES, ids=lambda s: f"{s.query}-{s.grammar}")
def test_no_pattern_is_compiled_twice(spec: LanguageSpec) -> None:
    """A child that repeated a parent's pattern would record every call it matches twice."""
    query = load_query(spec.query, spec.grammar)
    source = query_source(spec.query, spec.grammar).encode()
    patterns = [
        " ".join(
            _COMMENT.sub(
                "",
                source[query.start_byte_for_pattern(i) : query.end_byte_for_pattern(i)].decode(),
            ).split()
        )
        for i in range(query.pattern_count)
    ]
    assert patterns, spec.query
    assert len(set(patterns)) == len(patterns), spec.query


def test_jsx_is_compiled_for_javascript_and_tsx_only() -> None:
    def has_jsx(stem: str, grammar: str) -> bool:
        return "jsx_opening_element" in query_source(stem, grammar)

    assert has_jsx("javascript", "javascript")
    assert has_jsx("typescript", "tsx")
    assert not has_jsx("typescript", "typescript")
