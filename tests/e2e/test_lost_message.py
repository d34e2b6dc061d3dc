"""A message lost by the broker is published again (found by the soak, tests/load/soak.py):
Celery's Redis transport takes a message off its queue (BRPOP) and records it as
unacknowledged in a second round trip; a worker SIGKILLed between the two loses it, and no
visibility timeout brings it back. Here the message is taken off the queue before any
worker runs (what the dead worker did); the worker started afterwards finds the job lost
(``SPIDER_LOST_JOB_AFTER_S``) and publishes it again, and the issue gets its one comment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from contract import pending
from contract.jobs import QUEUE
from spider_devkit.devstack import DevStack
from tests.worker.helpers import make_repo

from .helpers import issue_payload

pytestmark = pytest.mark.slow

REPO = "acme/httpkit"
TITLE = "Header values containing a colon are cut off"
BODY = ("parse_header splits the header line at every colon, so `Host: example.com:8080` loses "
        "the port, and Session.read_headers returns the wrong value.")
ENV = {"SPIDER_K": "3", "SPIDER_SELECTOR": "none", "SPIDER_FIRST_STAGE": "bm25",
       "SPIDER_LOG_JSON": "true", "SPIDER_LOST_JOB_AFTER_S": "1"}


@pytest.fixture
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    workdir = tmp_path_factory.mktemp("lost")
    make_repo(workdir / "repos" / REPO)
    with DevStack(workdir, env=ENV, workers=0) as s:  # no worker yet: the message waits
        s.add_repo(REPO, workdir / "repos" / REPO)
        yield s


def test_a_message_taken_by_a_worker_killed_before_it_recorded_it_is_not_lost(
        stack: DevStack) -> None:
    stack.fake.add_issue(REPO, 1, TITLE, BODY)
    resp = stack.deliver("issues", issue_payload(REPO, 1, TITLE, BODY))
    assert resp.status_code == 202 and resp.json()["status"] == "queued", resp.text
    task = str(resp.json()["task_id"])
    client = stack.redis_client()
    try:
        assert client.rpop(QUEUE) is not None  # taken by a worker that died at once
        assert client.llen(QUEUE) == 0 and not client.hlen("unacked")
        assert client.hexists(pending.PENDING_KEY, task)
        stack.start_worker("worker")
        outcome = stack.result(task, timeout=90)
        assert outcome["status"] == "created", outcome
        assert len(stack.fake.bot_comments(REPO, 1)) == 1
        assert not client.hexists(pending.PENDING_KEY, task)  # settled when it ended
        assert any(r.get("msg") == "lost job published again" and r.get("task_id") == task
                   for r in stack.log_records("worker"))
    finally:
        client.close()
