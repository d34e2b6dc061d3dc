"""The store on SQLite and on PostgreSQL: migrations, idempotent records, outages."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import inspect

from tests.worker.pg import PrivatePostgres, pg_url, private_pg, shared_pg_admin  # noqa: F401
from worker.store import CommentRecord, ScoredFix, Store, StoreUnavailable


def a_fix(pull: int = 3) -> ScoredFix:
    return ScoredFix(repo="o/r", issue_number=1, pull_number=pull, comment_commit="a" * 40,
                     base_commit="b" * 40, k=2, listed_ids=["m.py:f", "m.py:g"],
                     changed_functions=["m.py:g"], moved={}, first_rank=2, recall_at_k=1.0,
                     outcome="hit")


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'x' / 'spider.db'}"
    return request.getfixturevalue("pg_url")


def test_migrations_and_idempotent_records(url: str) -> None:
    store = Store(url)
    try:
        store.record_comment(CommentRecord("o/r", 1, 10, "a" * 40, 2, ["m.py:f", "m.py:g"]))
        store.record_comment(CommentRecord("o/r", 1, 10, "c" * 40, 2, ["m.py:g", "m.py:f"]))
        rec = store.comment("o/r", 1)
        assert rec is not None and rec.commit_sha == "c" * 40 and rec.listed_ids == ["m.py:g", "m.py:f"]
        assert len(store.comments()) == 1
        assert store.record_fix(a_fix()) is True
        assert store.record_fix(a_fix()) is False  # a redelivery, a retry
        tables = set(inspect(store.engine).get_table_names())
        assert {"posted_comments", "scored_fixes", "alembic_version"} <= tables
    finally:
        store.close()


def test_two_workers_record_one_fix(url: str) -> None:
    Store(url).fixes()  # schema in place first
    results: list[bool] = []
    stores = [Store(url) for _ in range(4)]
    threads = [threading.Thread(target=lambda s=s: results.append(s.record_fix(a_fix())))
               for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [False, False, False, True]
    assert len(stores[0].fixes()) == 1
    for s in stores:
        s.close()


def test_database_down_is_transient_then_it_is_back(private_pg: PrivatePostgres) -> None:  # noqa: F811
    store = Store(private_pg.url)
    try:
        store.record_fix(a_fix(1))
        private_pg.stop()
        with pytest.raises(StoreUnavailable):
            store.record_fix(a_fix(2))
        private_pg.start()
        assert store.record_fix(a_fix(2)) is True
        assert [f.pull_number for f in store.fixes()] == [1, 2]
    finally:
        store.close()


def test_unreachable_database_at_start_is_transient(tmp_path: Path) -> None:
    store = Store("postgresql+psycopg://nobody@127.0.0.1:1/none")
    with pytest.raises(StoreUnavailable):
        store.comment("o/r", 1)
