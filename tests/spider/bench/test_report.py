"""Markdown tables of a summary."""

from __future__ import annotations

from spider.bench.report import markdown_report, markdown_table


def test_markdown_table_rows_and_rounding() -> None:
    text = markdown_table({"dense": {"n": 3, "R@20": 0.66666, "MRR@20": 0.5}})
    lines = text.splitlines()
    assert lines[0] == "| method | n | R@1 | R@5 | R@10 | R@20 | A@20 | MRR@20 |"
    assert lines[2] == "| dense | 3 | 0.000 | 0.000 | 0.000 | 0.667 | 0.000 | 0.500 |"


def test_markdown_report_has_per_repo_and_provenance() -> None:
    summary = {
        "methods": {"bm25": {"n": 1, "R@20": 1.0}},
        "per_repo": {"bm25": {"a/b": {"n": 1, "R@20": 1.0}}},
        "command": "spider bench x", "date": "d", "machine": "m",
    }
    text = markdown_report(summary, "bm25")
    assert "| bm25: repository |" in text and "| a/b | 1 |" in text
    assert text.endswith("`spider bench x` · d · m")


def test_repository_subsets_average_over_their_instances() -> None:
    summary = {
        "methods": {"bm25": {"n": 4, "R@20": 0.5}},
        "per_repo": {
            "bm25": {
                "a/big": {"n": 3, "R@20": 0.0, "MRR@20": 0.0},
                "c/small": {"n": 1, "R@20": 1.0, "MRR@20": 0.5},
                "d/other": {"n": 2, "R@20": 0.5, "MRR@20": 1.0},
            }
        },
    }
    only = markdown_report(summary, only=["a/big", "c/small"])
    assert "| bm25 | 4 | 0.000 | 0.000 | 0.000 | 0.250 | 0.000 | 0.125 |" in only
    skip = markdown_report(summary, skip=["a/big"])
    assert "| bm25 | 3 | 0.000 | 0.000 | 0.000 | 0.667 | 0.000 | 0.833 |" in skip
