"""End to end: signed webhooks into the real bot, jobs through Redis into a real Celery worker,
comments onto a fake GitHub. Each test uses its own issue number."""

from __future__ import annotations

import re

import pytest

from spider_devkit.devstack import DevStack
from tests.worker.helpers import git

from .conftest import ISSUE_BODY, ISSUE_TITLE, REPO, K, new_delivery, payload

pytestmark = pytest.mark.slow

SENTINEL_OFFSET = 100  # a test's sentinel job opens its own issue number plus this


def head(stack: DevStack) -> str:
    return git(stack.workdir / "repos" / REPO, "rev-parse", "HEAD")


def permalinks(body: str) -> list[str]:
    return re.findall(rf"\(https://github\.com/{REPO}/blob/([0-9a-f]{{40}})/[^)#\s]+#L\d+(?:-L\d+)?\)",
                      body)


def open_issue(stack: DevStack, number: int) -> dict[str, object]:
    stack.fake.add_issue(REPO, number, ISSUE_TITLE, ISSUE_BODY)
    resp = stack.deliver("issues", payload("issues_opened", number))
    assert resp.status_code == 202, resp.text
    assert resp.json()["status"] == "queued"
    return stack.result(resp.json()["task_id"])


def after_every_earlier_job(stack: DevStack, number: int) -> None:
    """Open a sentinel issue and wait for its job to end. The stack's one worker process
    takes one job at a time (prefetch 1, acks late) in the order they were queued, so once
    the sentinel has ended, every job queued before it (one that should not exist) has too.
    """
    assert stack.workers == 1 and stack.worker_concurrency == 1, "the order needs one worker slot"
    assert open_issue(stack, number + SENTINEL_OFFSET)["status"] == "created"


def test_opened_issue_gets_exactly_one_comment_with_k_permalinks(stack: DevStack) -> None:
    outcome = open_issue(stack, 1)
    assert outcome["status"] == "created", outcome
    (comment,) = stack.fake.comments_on(REPO, 1)
    assert comment.app_id == stack.fake.app_id
    assert permalinks(comment.body) == [head(stack)] * K
    assert "session.py" in comment.body and "headers.py" in comment.body


def test_spider_command_edits_the_same_comment(stack: DevStack) -> None:
    open_issue(stack, 2)
    (first,) = stack.fake.bot_comments(REPO, 2)
    command = stack.fake.add_comment(REPO, 2, "/spider k=2 edges=contains", association="MEMBER")
    resp = stack.deliver("issue_comment", payload("issue_comment_command", 2, id=command.id,
                                                  body=command.body))
    assert resp.json()["status"] == "queued", resp.text
    outcome = stack.result(resp.json()["task_id"])
    assert outcome["status"] == "updated" and outcome["comment_id"] == first.id
    (edited,) = stack.fake.bot_comments(REPO, 2)
    assert edited.id == first.id and len(permalinks(edited.body)) == 2
    # the details say what ran (the stack runs no selector, so contains edges expand nothing)
    assert "no graph expansion: selector none" in edited.body
    assert len(stack.fake.requests("PATCH", f"/issues/comments/{first.id}")) == 1
    assert len(stack.fake.requests("POST", "/issues/2/comments")) == 1


def test_the_same_delivery_twice_runs_one_job(stack: DevStack) -> None:
    stack.fake.add_issue(REPO, 3, ISSUE_TITLE, ISSUE_BODY)
    delivery = new_delivery()
    first = stack.deliver("issues", payload("issues_opened", 3), delivery_id=delivery)
    again = stack.deliver("issues", payload("issues_opened", 3), delivery_id=delivery)
    assert first.json()["status"] == "queued" and again.json()["status"] == "duplicate"
    stack.result(first.json()["task_id"])
    after_every_earlier_job(stack, 3)  # a second job, had one been queued, has ended
    assert len(stack.fake.requests("GET", path=f"/repos/{REPO}/issues/3")) == 1
    assert len(stack.fake.bot_comments(REPO, 3)) == 1


def test_bad_signature_is_401_and_nothing_is_queued(stack: DevStack) -> None:
    stack.fake.add_issue(REPO, 4, ISSUE_TITLE, ISSUE_BODY)
    delivery = new_delivery()
    resp = stack.deliver("issues", payload("issues_opened", 4), delivery_id=delivery,
                         secret="not-the-secret-at-all")
    assert resp.status_code == 401
    client = stack.redis_client()
    assert client.exists(f"spider:delivery:{delivery}") == 0
    assert client.exists(f"celery-task-meta-{delivery}") == 0
    after_every_earlier_job(stack, 4)
    assert stack.fake.requests(contains="/issues/4") == []
    assert client.exists(f"celery-task-meta-{delivery}") == 0


def test_comment_on_a_pull_request_is_ignored(stack: DevStack) -> None:
    stack.fake.add_issue(REPO, 5, "Fix header parsing", "Fixes it", pull_request=True)
    p = payload("issue_comment_pull_request", 5)
    resp = stack.deliver("issue_comment", p)
    assert resp.status_code == 202 and resp.json() == {"status": "ignored",
                                                       "reason": "comment on a pull request"}
    after_every_earlier_job(stack, 5)
    assert stack.fake.requests(contains="/issues/5") == []


def test_github_500_then_200_still_posts_once(stack: DevStack) -> None:
    stack.fake.inject("POST", rf"^/repos/{REPO}/issues/6/comments$", 500)
    outcome = open_issue(stack, 6)
    assert outcome["status"] == "created", outcome
    assert len(stack.fake.bot_comments(REPO, 6)) == 1
    posts = stack.fake.requests("POST", "/issues/6/comments")
    assert [c.status for c in posts] == [500, 201]


def test_secondary_rate_limit_waits_for_retry_after(stack: DevStack) -> None:
    stack.fake.inject("GET", rf"^/repos/{REPO}/issues/7$", 403, headers={"retry-after": "2"},
                      body={"message": "You have exceeded a secondary rate limit. Please wait."})
    outcome = open_issue(stack, 7)
    assert outcome["status"] == "created", outcome
    gets = stack.fake.requests("GET", path=f"/repos/{REPO}/issues/7")
    assert [c.status for c in gets] == [403, 200]
    assert gets[1].at - gets[0].at >= 2.0
    assert len(stack.fake.bot_comments(REPO, 7)) == 1
