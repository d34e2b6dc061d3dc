"""Closing keywords, as GitHub reads them (pure)."""

from __future__ import annotations

import pytest

from worker.closing import KEYWORDS, closed_issues, closing_references

REPO = "acme/httpkit"


@pytest.mark.parametrize("keyword", KEYWORDS)
def test_every_keyword_any_case(keyword: str) -> None:
    assert closing_references(f"{keyword} #5", REPO) == [5]
    assert closing_references(f"{keyword.upper()}: #6", REPO) == [6]
    assert closing_references(f"This {keyword.title()} acme/httpkit#7.", REPO) == [7]


@pytest.mark.parametrize(("text", "expected"), [
    ("Fixes https://github.com/acme/httpkit/issues/12", [12]),
    ("Fixes https://github.com/ACME/HTTPKIT/issues/12", [12]),
    ("Fixes https://github.com/other/httpkit/issues/12", []),  # another repository
    ("fixes other/repo#3 and fixes #4", [4]),
    ("Fixes #5, closes #6, resolves #5", [5, 6]),
    ("See #5; related to #6", []),  # no keyword
    ("prefixes #5", []),  # not a word of its own
    ("fixes#5", []),  # GitHub needs a space
    ("fix #5x", []),
    ("`fixes #5` in code", []),
    ("```\nfixes #5\n```", []),
    ("<!-- fixes #5 -->", []),
    ("fixes #0", []),
    ("fixes #99999999999", []),
    ("", []),
    (None, []),
])
def test_references(text: str | None, expected: list[int]) -> None:
    assert closing_references(text, REPO) == expected


def test_enterprise_host_and_union() -> None:
    assert closing_references("fixes https://ghe.example/acme/httpkit/issues/3", REPO,
                              host="ghe.example") == [3]
    assert closing_references("fixes https://github.com/acme/httpkit/issues/3", REPO,
                              host="ghe.example") == []
    assert closed_issues(["Fix it", "closes #2", None, "commit\n\nfixes #1\nfixes #2"], REPO) == [2, 1]
