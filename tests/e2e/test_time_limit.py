"""No silent end at the hard time limit, with real processes: two Celery workers whose
engine ignores the soft time limit (tests/e2e/stubborn_worker.py), a hard limit of a few
seconds. A run killed there is run again with cheaper settings (BM25, no selector, a
smaller pool) and comments; a job killed again gets the polite "could not finish" comment."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from contract.jobs import TASK_NAME
from spider_devkit.devstack import DevStack
from tests.worker.helpers import make_repo

from .helpers import issue_payload, records_of

pytestmark = pytest.mark.slow

REPO = "acme/httpkit"
K = 3
BODY = ("parse_header splits the header line at every colon, so `Host: example.com:8080` loses "
        "the port, and Session.read_headers returns the wrong value.")
HARD_S = 12
ENV = {
    "SPIDER_K": str(K),
    "SPIDER_SELECTOR": "offline",
    "SPIDER_FIRST_STAGE": "hybrid",  # the usual settings: the stubborn index is killed
    "SPIDER_LOG_JSON": "true",
    "SPIDER_TASK_SOFT_TIME_LIMIT_S": str(HARD_S - 2),
    "SPIDER_TASK_TIME_LIMIT_S": str(HARD_S),
    "SPIDER_BROKER_VISIBILITY_TIMEOUT_S": "60",
    "SPIDER_RETRY_BACKOFF_S": "0.5",
    "SPIDER_RETRY_BACKOFF_MAX_S": "2",
    "SPIDER_DEFER_DELAY_S": "0.5",
    "SPIDER_DEFER_DELAY_MAX_S": "2",
    "SPIDER_LEASE_TTL_S": "3",
    "SPIDER_GITHUB_BACKOFF_S": "0.1",
    "SPIDER_REDELIVER_ENABLED": "false",
}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    workdir = tmp_path_factory.mktemp("time-limit")
    make_repo(workdir / "repos" / REPO)
    with DevStack(workdir, env=ENV, workers=2,
                  celery_app="tests.e2e.stubborn_worker") as s:
        s.add_repo(REPO, workdir / "repos" / REPO)
        yield s


def open_issue(stack: DevStack, number: int, title: str) -> str:
    stack.fake.add_issue(REPO, number, title, BODY)
    resp = stack.deliver("issues", issue_payload(REPO, number, title, BODY))
    assert resp.json()["status"] == "queued", resp.text
    return str(resp.json()["task_id"])


def final_result(stack: DevStack, task_id: str, timeout: float) -> dict[str, object]:
    """The task's outcome once its last run is done. Celery stores the killed run's
    TimeLimitExceeded before the worker marks the task as retrying and publishes it again,
    so for a moment the task reads as failed: wait through that window."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return stack.result(task_id, timeout=max(1.0, deadline - time.monotonic()))
        except RuntimeError as exc:
            if "TimeLimitExceeded" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def worker_messages(stack: DevStack, task: str) -> list[str]:
    return [str(r.get("msg")) for n in stack.worker_names for r in records_of(stack, n, task)]


def test_a_job_killed_at_the_hard_limit_is_run_cheaper_then_says_it_could_not_finish(
        stack: DevStack) -> None:
    started = time.monotonic()
    cheaper = open_issue(stack, 1, "Header values containing a colon are cut off")
    stuck = open_issue(stack, 2, "[always] Header values containing a colon are cut off")

    outcome = final_result(stack, cheaper, timeout=HARD_S * 3 + 90)
    assert outcome["status"] == "created", outcome
    print(f"\nkilled once, then cheaper: comment {time.monotonic() - started:.1f} s after")
    (comment,) = stack.fake.bot_comments(REPO, 1)
    assert "cheaper method" in comment.body
    assert len(re.findall(rf"\(https://github\.com/{REPO}/blob/[0-9a-f]{{40}}/", comment.body)) == K
    assert "- Method: BM25;" in comment.body  # what the cheaper run ranked with

    outcome = final_result(stack, stuck, timeout=HARD_S * 4 + 90)
    assert outcome["status"] == "timed_out", outcome
    print(f"killed twice: the polite comment {time.monotonic() - started:.1f} s after")
    (comment,) = stack.fake.bot_comments(REPO, 2)
    assert "could not finish" in comment.body and "blob/" not in comment.body
    creations = stack.fake.requests("POST", path=f"/repos/{REPO}/issues/2/comments")
    assert [c.status for c in creations] == [201]

    logs = "\n".join(stack.log_tail(n, 200_000) for n in stack.worker_names)
    # Celery's own line, for the issue jobs: run 1 of each, run 2 of one. (The index job the
    # first answer queues to fetch the history window runs the stubborn index too, and is
    # killed as well: it is not an issue job and says nothing on the issue.)
    kills = re.findall(r"Hard time limit \(\S+s\) exceeded for ([\w.]+)\[", logs)
    assert [k for k in kills if k == TASK_NAME] == [TASK_NAME] * 3, kills
    assert "job killed at the hard time limit: run again with cheaper settings" in logs
    assert "job killed at the hard time limit: run again to say so" in logs
    assert "job could not finish: said so in the comment" in worker_messages(stack, stuck)
