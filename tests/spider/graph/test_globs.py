"""Glob matching for exclusions and inclusions."""

from __future__ import annotations

import glob

import pytest

from spider.graph.globs import GlobSet
from spider.settings import DEFAULT_EXCLUDES


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("**/tests/**", "tests/x.py", True),  # a leading **/ matches zero directories
        ("**/tests/**", "a/tests/b/c.py", True),
        ("**/tests/**", "testsuite/x.py", False),
        ("**/tests/**", "a/contests/x.py", False),
        ("**/*.min.js", "static/app.min.js", True),
        ("**/*.min.js", "app.min.js", True),
        ("*.py", "deep/down/x.py", True),  # no slash: a name at any depth
        ("build", "pkg/build/x.py", True),  # a directory name excludes what is below it
        ("/docs/", "docs/a.py", True),  # anchored at the root
        ("/docs/", "pkg/docs/a.py", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/sub/a.py", False),  # * does not cross /
        ("a/**/b.py", "a/b.py", True),
        ("a/**/b.py", "a/x/y/b.py", True),
        ("file?.c", "file1.c", True),
        ("file?.c", "file10.c", False),
        ("[!x]y.c", "zy.c", True),
        ("[!x]y.c", "xy.c", False),
        ("**/*_test.go", "pkg/a_test.go", True),
        ("**/*.test.*", "src/a.test.ts", True),
    ],
)
def test_glob(pattern: str, path: str, expected: bool) -> None:
    assert GlobSet([pattern]).matches(path) is expected


def test_default_excludes() -> None:
    globs = GlobSet(DEFAULT_EXCLUDES)
    for path in (
        "tests/test_a.py",
        "src/foo/test/a.java",
        "node_modules/x/index.js",
        "conftest.py",
        "pkg/foo_test.go",
        "web/app.min.js",
        "types/x.d.ts",
    ):
        assert globs.matches(path), path
    for path in ("src/app.py", "lib/contest.py", "pkg/latest/x.go", "src/Testing.java"):
        assert not globs.matches(path), path


def test_empty_set_matches_nothing() -> None:
    assert not GlobSet([])
    assert not GlobSet(["", " "]).matches("a.py")


def test_very_deep_paths() -> None:
    deep = "/".join(["d"] * 3000) + "/x.py"
    assert GlobSet(["**/tests/**"]).matches(deep) is False
    assert GlobSet(["d/**"]).matches(deep) is True


def test_every_pattern_adds_to_the_set() -> None:
    """A leading ``!`` or ``#`` is a character here, not gitignore's negation or comment."""
    globs = GlobSet(["*.py", "!keep.py", "#notes.py"])
    assert globs.matches("keep.py") and globs.matches("pkg/other.py")
    assert GlobSet(["!keep.py"]).matches("pkg/!keep.py")
    assert GlobSet(["#notes.py"]).matches("#notes.py")
    assert not GlobSet(["!keep.py"]).matches("keep.py")


def test_backslash_is_a_character_and_escaped_literals_match_themselves() -> None:
    assert GlobSet(["a\\b.py"]).matches("a\\b.py")
    assert not GlobSet(["a\\b.py"]).matches("ab.py")
    odd = "x/[y]*?.py"
    literal = GlobSet(["/" + glob.escape(odd)])  # what the benchmark's include globs look like
    assert literal.matches(odd)
    assert not literal.matches("x/y.py") and not literal.matches("x/[y]ab.py")


def test_trailing_slash_names_a_directory_only() -> None:
    assert GlobSet(["build/"]).matches("build/x.py")
    assert not GlobSet(["build/"]).matches("build")
