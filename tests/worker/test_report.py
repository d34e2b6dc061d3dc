"""``spider-bot report``: the table, the HTML with plots, the bench export, ``db upgrade``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from spider.dataset import read_dataset
from worker import cli
from worker.report import rows, table_markdown
from worker.store import CommentRecord, ScoredFix, Store

PATCH = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n"


def fix(repo: str, issue: int, pull: int, rank: int | None, changed: list[str],
        days: int = 0) -> ScoredFix:
    outcome = "no_function_changed" if not changed else ("hit" if rank else "miss")
    return ScoredFix(repo=repo, issue_number=issue, pull_number=pull, comment_commit="a" * 40,
                     base_commit="b" * 40, k=3, listed_ids=["m.py:g", "m.py:f", "m.py:h"],
                     changed_functions=changed, moved={}, first_rank=rank,
                     recall_at_k=None if not changed else (1.0 if rank else 0.0),
                     outcome=outcome, problem_statement=f"Issue {issue}\nbody", patch=PATCH,
                     scored_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=days))


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    assert cli.main(["--database-url", url, "db", "upgrade"]) == 0
    store = Store(url)
    for i in range(1, 5):
        store.record_comment(CommentRecord("o/a", i, 100 + i, "a" * 40, 3, ["m.py:g", "m.py:f"]))
    store.record_comment(CommentRecord("o/b", 1, 200, "a" * 40, 3, ["m.py:g"]))
    store.record_fix(fix("o/a", 1, 11, 2, ["m.py:f"], 0))
    store.record_fix(fix("o/a", 2, 12, None, ["m.py:z"], 1))
    store.record_fix(fix("o/a", 3, 13, 1, ["m.py:g"], 2))
    store.record_fix(fix("o/a", 4, 14, None, [], 3))
    store.record_fix(fix("o/b", 1, 15, 3, ["m.py:f"], 4))
    store.close()
    return url


def test_table_rows(db: str) -> None:
    store = Store(db)
    table = rows(store.comments(), store.fixes())
    a = next(r for r in table if r.repo == "o/a")
    assert (a.answered, a.scored, a.with_function, a.hits) == (4, 4, 3, 2)
    assert a.median_rank == 1.5 and a.recall == pytest.approx(2 / 3)
    assert [r.repo for r in table] == ["o/a", "o/b", "all"]
    assert table[-1].answered == 5
    assert "| o/a | 4 | 4 | 3 | 2 (67%) | 1.50 | 0.67 |" in table_markdown(table)


def test_report_html_export_and_bench_reads_it(db: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    html, export = tmp_path / "r.html", tmp_path / "fixes.jsonl"
    assert cli.main(["--database-url", db, "report", "--repo", "o/a", "--html", str(html),
                     "--export", str(export)]) == 0
    out = capsys.readouterr().out
    assert "| o/a |" in out and "o/b" not in out
    page = html.read_text()
    assert page.count("<svg") == 2 and "Hit rate over time" in page and "Rank of the first hit" in page
    rows_ = [json.loads(line) for line in export.read_text().splitlines()]
    assert len(rows_) == 3  # the fix that changed no function is not a bench instance
    insts = read_dataset(export)
    assert insts[0].instance_id == "o__a-1-pr11" and insts[0].edit_functions == ["m.py:f"]
    assert insts[0].patch == PATCH and insts[0].base_commit == "b" * 40


def test_since_filters(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--database-url", db, "report", "--since", "2026-01-03", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {r["repo"]: r["fixes_scored"] for r in data} == {"o/a": 2, "o/b": 1, "all": 3}
