"""Routing of the fix loop's events: merged pull requests and closed issues."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from bot.errors import MalformedPayload
from bot.events import Enqueue, Ignore, route
from contract.jobs import FIX_QUEUE, FIX_TASK_NAME, FixJob, task_of

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def pr_payload(action: str = "closed", merged: bool = True) -> dict[str, Any]:
    issue = json.loads((SAMPLES / "issues_opened" / "payload.json").read_text())
    return {"action": action, "number": 12,
            "pull_request": {"number": 12, "merged": merged, "state": "closed",
                             "title": "Fix", "body": "Fixes #42"},
            "repository": issue["repository"], "installation": issue["installation"],
            "sender": issue["sender"]}


def test_merged_pull_request_becomes_a_fix_job_on_its_own_queue() -> None:
    decision = route("pull_request", pr_payload(), "d-9")
    assert isinstance(decision, Enqueue) and isinstance(decision.job, FixJob)
    assert decision.job.as_kwargs() == {"installation_id": 51234567, "repo": "spider-bot/spider-bot",
                                        "delivery_id": "d-9", "pull_number": 12,
                                        "issue_number": None}
    assert task_of(decision.job) == (FIX_TASK_NAME, FIX_QUEUE)
    assert decision.job.trigger == "pull_request.merged:12"


@pytest.mark.parametrize(("action", "merged", "reason"), [
    ("closed", False, "without being merged"),
    ("opened", False, "pull_request.opened is not handled"),
    ("synchronize", False, "not handled"),
])
def test_other_pull_request_events_are_ignored(action: str, merged: bool, reason: str) -> None:
    decision = route("pull_request", pr_payload(action, merged), "d")
    assert isinstance(decision, Ignore) and reason in decision.reason


def test_closed_issue_becomes_a_fix_job() -> None:
    p = copy.deepcopy(json.loads((SAMPLES / "issues_opened" / "payload.json").read_text()))
    p["action"] = "closed"
    p["issue"]["state"] = "closed"
    decision = route("issues", p, "d")
    assert isinstance(decision, Enqueue) and isinstance(decision.job, FixJob)
    assert decision.job.issue_number == 42 and decision.job.pull_number is None
    p["issue"]["pull_request"] = {"url": "x"}
    assert isinstance(route("issues", p, "d"), Ignore)


def test_malformed_pull_request_payloads() -> None:
    p = pr_payload()
    del p["installation"]
    with pytest.raises(MalformedPayload):
        route("pull_request", p, "d")
    p = pr_payload()
    p["pull_request"]["number"] = "twelve"
    with pytest.raises(MalformedPayload):
        route("pull_request", p, "d")
    p = pr_payload()
    del p["pull_request"]
    with pytest.raises(MalformedPayload):
        route("pull_request", p, "d")


def test_fix_job_checks_its_fields() -> None:
    with pytest.raises(ValueError):
        FixJob(1, "o/r", "d")
    with pytest.raises(ValueError):
        FixJob(1, "o/r", "d", pull_number=1, issue_number=2)
    with pytest.raises(ValueError):
        FixJob(1, "../x", "d", pull_number=1)
