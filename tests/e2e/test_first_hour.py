"""End to end, a maintainer's first hour: ``delay_minutes`` waits through the real broker
(a countdown, no worker held) and stays silent on an issue a maintainer answered meanwhile;
an old issue edited after the installation is not backfilled, and ``/spider`` answers it.
A stack of its own per test: its repositories carry a ``.github/spider.yml`` the others
must not."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from spider_devkit.devstack import DevStack
from tests.worker.helpers import make_repo

from .conftest import ISSUE_BODY, ISSUE_TITLE, K, payload

pytestmark = pytest.mark.slow

DELAYED = "acme/triaged"  # delay_minutes: 1
EDITED = "acme/old"  # answers edited issues too
DELAY_S = 60


@pytest.fixture
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    workdir = tmp_path_factory.mktemp("first-hour")
    make_repo(workdir / "repos" / DELAYED, config="delay_minutes: 1\n")
    make_repo(workdir / "repos" / EDITED, config="triggers: [opened, edited]\n")
    env = {"SPIDER_K": str(K), "SPIDER_SELECTOR": "none", "SPIDER_LOG_JSON": "true"}
    with DevStack(workdir, env=env) as s:
        s.add_repo(DELAYED, workdir / "repos" / DELAYED)
        s.add_repo(EDITED, workdir / "repos" / EDITED)
        yield s


def deliver(stack: DevStack, sample: str, repo: str, number: int, **comment: object) -> str:
    p = payload(sample, number, **comment)
    p["repository"]["full_name"] = repo
    p["repository"]["name"] = repo.split("/")[1]
    resp = stack.deliver("issues" if sample.startswith("issues") else "issue_comment", p)
    assert resp.status_code == 202 and resp.json()["status"] == "queued", resp.text
    return str(resp.json()["task_id"])


def test_a_delayed_job_is_silent_on_an_answered_issue_and_answers_an_untouched_one(
        stack: DevStack) -> None:
    for number in (1, 2):
        stack.fake.add_issue(DELAYED, number, ISSUE_TITLE, ISSUE_BODY, labels=["needs-triage"])
    started = time.monotonic()
    answered, untouched = (deliver(stack, "issues_opened", DELAYED, n) for n in (1, 2))
    stack.fake.add_comment(DELAYED, 1, "Duplicate of #40, thanks!", user="maria",
                           association="MEMBER")
    stack.fake.add_comment(DELAYED, 2, "+1", user="passer-by", association="NONE")
    silent = stack.result(answered, timeout=DELAY_S + 180)
    assert silent == {"status": "skipped", "reason": "answered by @maria"}, silent
    assert time.monotonic() - started >= DELAY_S - 1  # it did wait
    assert stack.fake.bot_comments(DELAYED, 1) == []
    assert stack.result(untouched, timeout=180)["status"] == "created"
    assert len(stack.fake.bot_comments(DELAYED, 2)) == 1


def test_an_issue_older_than_the_installation_is_answered_only_when_asked(
        stack: DevStack) -> None:
    stack.fake.installation_created_at = "2026-06-01T00:00:00Z"
    stack.fake.add_issue(EDITED, 5, ISSUE_TITLE, ISSUE_BODY, created_at="2025-01-01T00:00:00Z")
    p = payload("issues_opened", 5)
    p["action"] = "edited"
    p["repository"]["full_name"], p["repository"]["name"] = EDITED, "old"
    resp = stack.deliver("issues", p)
    outcome = stack.result(resp.json()["task_id"])
    assert outcome["status"] == "skipped", outcome
    assert "opened before the app was installed here (2026-06-01)" in outcome["reason"]
    command = stack.fake.add_comment(EDITED, 5, "/spider", association="MEMBER")
    task = deliver(stack, "issue_comment_command", EDITED, 5, id=command.id, body=command.body)
    answered = stack.result(task)
    assert answered["status"] == "created", answered
    assert len(stack.fake.bot_comments(EDITED, 5)) == 1

