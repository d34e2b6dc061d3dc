"""``spider-bot report``: the table, the HTML with plots, the bench export, ``db upgrade``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from spider.eval.dataset import read_dataset
from tests.worker.pg import pg_url, shared_pg_admin  # noqa: F401  (fixtures)
from worker import cli
from worker.report import render_html, rows, table_markdown
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


# --- what an operator meets first: no data, a mistyped URL, a database that is down ------


def test_no_data_says_what_fills_the_report_and_exits_3(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    assert cli.main(["--database-url", url, "db", "upgrade"]) == 0
    capsys.readouterr()
    assert cli.main(["--database-url", url, "report"]) == cli.EXIT_EMPTY == 3
    out, err = capsys.readouterr()
    assert out == "" and "No comment recorded and no fix scored yet" in err
    assert "merged fixes scored against the app's comments" in err
    assert cli.main(["--database-url", url, "report", "--json", "--repo", "o/a"]) == 3
    out, err = capsys.readouterr()
    assert json.loads(out) == [] and "yet for o/a" in err


def test_a_database_without_the_tables_is_empty_and_is_not_changed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import sqlite3

    path = tmp_path / "other.db"
    sqlite3.connect(path).close()
    before = path.read_bytes()
    assert cli.main(["--database-url", f"sqlite:///{path}", "report"]) == 3
    assert "has no spider-bot tables yet" in capsys.readouterr().err
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]


def test_a_mistyped_sqlite_url_is_refused_and_nothing_is_created(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--database-url", "sqlite:///no/such/dir/x.db", "report"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: no database at no/such/dir/x.db: the folder no/such/dir "
                          "does not exist") and err.count("\n") == 1
    assert cli.main(["--database-url", "sqlite:///typo.db", "report"]) == 1
    assert "no database at typo.db: no such file" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no folder, no empty database


def test_a_url_that_is_no_database_url_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--database-url", "postgres-ish://x", "report"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: not a database URL") and err.count("\n") == 1


def test_a_database_that_is_down_names_the_cause_in_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    from spider_devkit.devstack import free_port

    port = free_port()  # nothing listens there
    url = f"postgresql+psycopg://nobody:s3cret@127.0.0.1:{port}/none"
    assert cli.main(["--database-url", url, "report"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "s3cret" not in err
    assert err.startswith("error: database unavailable: ")
    assert f'port {port} failed: Connection refused' in err


def test_a_refused_login_names_the_cause(shared_pg_admin: str,  # noqa: F811
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from sqlalchemy.engine import make_url

    url = make_url(shared_pg_admin).set(username="no_such_role_x", password="pw", database="x")
    assert cli.main(["--database-url", url.render_as_string(hide_password=False), "report"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "pw@" not in err
    assert "no_such_role_x" in err and ("does not exist" in err or "authentication failed" in err)


def test_the_html_links_issues_and_pulls_escapes_text_and_counts_in_whole_numbers(
        db: str, tmp_path: Path) -> None:
    import re

    store = Store(db)
    store.record_fix(fix("o/a", 5, 16, 1, ["m.py:<lambda>"], 5))
    table, fixes = rows(store.comments(), store.fixes()), store.fixes()
    store.close()
    page = render_html(table, fixes)
    assert '<a href="https://github.com/o/a/issues/1">#1</a>' in page
    assert '<a href="https://github.com/o/a/pull/11">#11</a>' in page
    assert "m.py:&lt;lambda&gt;" in page and "<lambda>" not in page
    histogram = page[page.index("Rank of the first hit</h2>"):]
    histogram = histogram[:histogram.index("</svg>")]
    ticks = re.findall(r"<text[^>]*>([^<]+)</text>", histogram)
    numbers = [t.strip() for t in ticks if re.fullmatch(r"[\d.−-]+", t.strip())]
    assert numbers and all("." not in n for n in numbers), numbers


def test_spider_template_dir_overrides_the_report_file_by_file(tmp_path: Path) -> None:
    (tmp_path / "report.html.j2").write_text("<p>ours {{ generated }} {{ table | length }}</p>\n")
    page = render_html([], [], datetime(2026, 1, 2, tzinfo=UTC), template_dir=tmp_path)
    assert page == "<p>ours 2026-01-02 00:00 UTC 0</p>"
    assert "<h1>" in render_html([], [], template_dir=tmp_path / "none-here")  # the shipped one


@pytest.mark.parametrize("command", [["report"], ["db", "upgrade"]])
@pytest.mark.parametrize("url", ["mysql://root:s3cret@127.0.0.1/spider",
                                 "oracle://u:s3cret@db/x", "mssql+pyodbc://u:s3cret@dsn"])
def test_an_unsupported_database_is_refused_with_the_supported_ones(
        url: str, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--database-url", url, *command]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "s3cret" not in err
    assert err.startswith("error: unsupported database ")
    assert "sqlite (sqlite:///PATH)" in err and "postgresql (postgresql+psycopg://" in err


def test_a_supported_database_without_its_driver_names_the_one_to_use(
        capsys: pytest.CaptureFixture[str]) -> None:
    url = "postgresql+pg8000://u:s3cret@127.0.0.1/x"  # pg8000 is not installed
    assert cli.main(["--database-url", url, "db", "upgrade"]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "'pg8000' of postgresql is not installed" in err and "postgresql+psycopg://" in err


def test_db_upgrade_at_a_mistyped_sqlite_path_creates_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--database-url", "sqlite:///no/such/dir/x.db", "db", "upgrade"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: no database at no/such/dir/x.db: the folder no/such/dir "
                          "does not exist") and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []  # no folder, no empty database


def test_db_upgrade_creates_only_the_file_and_names_the_database(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--database-url", "sqlite:///typo.db", "db", "upgrade"]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"upgraded sqlite:///typo.db (the file {tmp_path / 'typo.db'}, "
                          "created) to revision ") and err.count("\n") == 1
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("typo.db-")] == ["typo.db"]
    assert cli.main(["--database-url", "sqlite:///typo.db", "db", "upgrade"]) == 0
    again = capsys.readouterr().err
    assert "created" not in again and "revision none" not in again


def test_db_upgrade_names_the_postgresql_database_without_its_password(
        pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    assert cli.main(["--database-url", pg_url, "db", "upgrade"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("upgraded postgresql+psycopg://") and "revision none" not in err
    assert pg_url.rsplit("/", 1)[1] in err
