"""The fix loop for real: the bot, a Celery worker, Redis, a private PostgreSQL and the fake
GitHub. An issue is answered, a pull request that fixes it is merged, the worker scores it
and edits the comment; PostgreSQL stopped during scoring delays it and loses nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spider.graph import build_graph
from spider.settings import EngineSettings
from spider.source import GitSource
from spider_devkit.devstack import INSTALLATION_ID, DevStack
from spider_devkit.fake_github import files_from_diff
from tests.e2e.conftest import ISSUE_BODY, ISSUE_TITLE, REPO, K, new_delivery
from tests.e2e.helpers import issue_payload
from tests.worker.helpers import commit, git, make_repo, write
from tests.worker.pg import PrivatePostgres, private_pg  # noqa: F401
from worker.store import Store

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory,
         private_pg: PrivatePostgres) -> Iterator[tuple[DevStack, Path]]:  # noqa: F811
    workdir = tmp_path_factory.mktemp("fixloop")
    origin = workdir / "repos" / REPO
    make_repo(origin)
    env = {"SPIDER_K": str(K), "SPIDER_SELECTOR": "none", "SPIDER_GITHUB_BACKOFF_S": "0.2",
           "SPIDER_RETRY_BACKOFF_S": "1", "SPIDER_RETRY_BACKOFF_MAX_S": "2",
           "SPIDER_LOG_JSON": "true", "SPIDER_DATABASE_URL": private_pg.url}
    with DevStack(workdir, env=env) as stack:
        stack.add_repo(REPO, origin)
        yield stack, origin


def pr_event(number: int, merged: bool = True) -> dict[str, Any]:
    return {"action": "closed", "number": number,
            "pull_request": {"number": number, "merged": merged, "state": "closed"},
            "repository": {"full_name": REPO, "name": REPO.split("/")[1]},
            "installation": {"id": INSTALLATION_ID}, "sender": {"login": "maintainer", "type": "User"}}


def answer(stack: DevStack, number: int) -> None:
    stack.fake.add_issue(REPO, number, ISSUE_TITLE, ISSUE_BODY)
    r = stack.deliver("issues", issue_payload(REPO, number, ISSUE_TITLE, ISSUE_BODY))
    assert stack.result(r.json()["task_id"])["status"] == "created"


def merge(stack: DevStack, origin: Path, number: int, edits: dict[str, str], body: str,
          merged: bool = True) -> None:
    base = git(origin, "rev-parse", "main")
    git(origin, "checkout", "-q", "-b", f"pr-{number}")
    write(origin, edits)
    head = commit(origin, f"change for #{number}")
    diff = git(origin, "diff", base, head) + "\n"
    git(origin, "checkout", "-q", "main")
    stack.fake.add_pull(REPO, number, f"PR {number}", body, base_sha=base, head_sha=head,
                        files=files_from_diff(diff), merged=merged)


def edit_inside(origin: Path, node_id: str) -> dict[str, str]:
    """An edit of the last line of a function's body (found in the repository's graph)."""
    graph = build_graph(GitSource(origin, "main"), EngineSettings())
    a = graph.g.nodes[node_id]
    path = origin / a["path"]
    lines = path.read_text().splitlines(keepends=True)
    end = int(a["end_line"])
    lines[end - 1] = lines[end - 1].rstrip("\n") + "  # fixed\n"
    return {a["path"]: "".join(lines)}


def store_of(stack: DevStack) -> Store:
    return Store(stack.process_env["SPIDER_DATABASE_URL"])


def test_merged_fix_of_the_second_listed_function(loop: tuple[DevStack, Path]) -> None:
    stack, origin = loop
    answer(stack, 5)
    store = store_of(stack)
    rec = store.comment(REPO, 5)
    assert rec is not None and len(rec.listed_ids) == K
    merge(stack, origin, 12, edit_inside(origin, rec.listed_ids[1]), "Fixes #5")
    delivery = new_delivery()
    r = stack.deliver("pull_request", pr_event(12), delivery_id=delivery)
    assert r.status_code == 202 and r.json()["status"] == "queued"
    out = stack.result(r.json()["task_id"])
    assert out["status"] == "scored", out
    fix = store.fix(REPO, 5, 12)
    assert fix is not None and fix.first_rank == 2 and fix.outcome == "hit"
    assert fix.changed_functions == [rec.listed_ids[1]]
    name = rec.listed_ids[1].split(":", 1)[1]
    body = stack.fake.bot_comments(REPO, 5)[-1].body
    assert f"The fix in #12 changed `{name}` (listed 2nd)." in body
    assert len(stack.fake.bot_comments(REPO, 5)) == 1

    # the same delivery twice: the bot drops it; a new delivery of the same event: one record
    again = stack.deliver("pull_request", pr_event(12), delivery_id=delivery)
    assert again.json()["status"] == "duplicate"
    other = stack.deliver("pull_request", pr_event(12))
    assert stack.result(other.json()["task_id"])["status"] == "scored"
    assert len([f for f in store.fixes(REPO) if f.pull_number == 12]) == 1
    store.close()


def test_unanswered_unmerged_and_docs_only(loop: tuple[DevStack, Path]) -> None:
    stack, origin = loop
    store = store_of(stack)
    stack.fake.add_issue(REPO, 30, "never answered", "no comment here")
    merge(stack, origin, 31, {"httpkit/cookies.py": "x = 1\n"}, "Fixes #30")
    r = stack.deliver("pull_request", pr_event(31))
    assert stack.result(r.json()["task_id"])["status"] == "skipped"
    assert store.fixes(REPO) == [] or all(f.issue_number != 30 for f in store.fixes(REPO))

    merge(stack, origin, 32, {"httpkit/cookies.py": "y = 1\n"}, "Fixes #5", merged=False)
    r = stack.deliver("pull_request", pr_event(32, merged=False))
    assert r.json()["status"] == "ignored"
    assert store.fix(REPO, 5, 32) is None

    answer(stack, 33)
    before = stack.fake.bot_comments(REPO, 33)[-1].body
    merge(stack, origin, 34, {"docs/guide.md": "How to use it.\n"}, "Closes #33")
    r = stack.deliver("pull_request", pr_event(34))
    assert stack.result(r.json()["task_id"])["status"] == "scored"
    fix = store.fix(REPO, 33, 34)
    assert fix is not None and fix.outcome == "no_function_changed"
    assert stack.fake.bot_comments(REPO, 33)[-1].body == before
    store.close()


def test_postgres_stopped_during_scoring(loop: tuple[DevStack, Path],
                                         private_pg: PrivatePostgres) -> None:  # noqa: F811
    stack, origin = loop
    answer(stack, 40)
    store = store_of(stack)
    rec = store.comment(REPO, 40)
    assert rec is not None
    store.close()
    merge(stack, origin, 41, edit_inside(origin, rec.listed_ids[0]), "resolves #40")
    private_pg.stop()
    try:
        r = stack.deliver("pull_request", pr_event(41))
        assert r.json()["status"] == "queued"  # the bot never needs the database
        deadline = time.monotonic() + 60
        while not any("scoring failed, will retry" in str(rec_.get("msg", ""))
                      for rec_ in stack.log_records("worker")):
            assert time.monotonic() < deadline, stack.log_tail("worker")
            time.sleep(0.5)
    finally:
        private_pg.start()
    out = stack.result(r.json()["task_id"], timeout=120)
    assert out["status"] == "scored", out
    store = store_of(stack)
    fix = store.fix(REPO, 40, 41)
    assert fix is not None and fix.first_rank == 1
    store.close()
    assert "The fix in #41 changed" in stack.fake.bot_comments(REPO, 40)[-1].body
