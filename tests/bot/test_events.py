from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from bot.errors import MalformedPayload
from bot.events import Acknowledge, Enqueue, Ignore, route

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def sample(name: str) -> dict[str, Any]:
    return json.loads((SAMPLES / name / "payload.json").read_text())


def test_opened_issue_becomes_a_job_of_ids_only() -> None:
    decision = route("issues", sample("issues_opened"), "d-1")
    assert isinstance(decision, Enqueue)
    assert decision.job.as_kwargs() == {
        "installation_id": 51234567, "repo": "spider-bot/spider-bot", "issue_number": 42,
        "delivery_id": "d-1", "trigger": "issues.opened",
    }


@pytest.mark.parametrize("action", ["reopened", "edited"])
def test_reopened_and_edited_are_queued_for_the_worker_to_check_config(action: str) -> None:
    p = sample("issues_opened")
    p["action"] = action
    decision = route("issues", p, "d")
    assert isinstance(decision, Enqueue) and decision.job.trigger == f"issues.{action}"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda p: p["issue"].update(locked=True), "locked"),
        (lambda p: p["issue"].update(state="closed"), "closed"),
        (lambda p: p["issue"].update(pull_request={"url": "x"}), "pull request"),
        (lambda p: p["issue"]["user"].update(type="Bot"), "opened by a bot"),
        (lambda p: p["sender"].update(login="renovate[bot]"), "by a bot"),
        (lambda p: p.update(action="deleted"), "not handled"),
    ],
)
def test_issue_skips(change: Any, reason: str) -> None:
    p = copy.deepcopy(sample("issues_opened"))
    change(p)
    decision = route("issues", p, "d")
    assert isinstance(decision, Ignore) and reason in decision.reason


def test_command_by_the_issue_author_is_allowed() -> None:
    p = sample("issue_comment_stranger_command")
    p["comment"]["user"] = p["issue"]["user"]
    decision = route("issue_comment", p, "d")
    assert isinstance(decision, Enqueue) and decision.job.trigger == "comment:3412345680"


def test_comment_edits_and_bot_comments_are_ignored() -> None:
    p = sample("issue_comment_command")
    assert isinstance(route("issue_comment", {**p, "action": "edited"}, "d"), Ignore)
    p["comment"]["user"]["type"] = "Bot"
    assert isinstance(route("issue_comment", p, "d"), Ignore)


@pytest.mark.parametrize("event", ["ping", "installation", "installation_repositories"])
def test_acknowledged(event: str) -> None:
    assert isinstance(route(event, {}, "d"), Acknowledge)


@pytest.mark.parametrize(
    "payload",
    [
        {"action": "opened"},
        {"action": "opened", "issue": {"number": "x"}, "repository": {"full_name": "a/b"}},
        {"action": "opened", "issue": {"number": 1}, "repository": {"full_name": "a/b"}},  # no installation
        {"action": "opened", "issue": {"number": 1}, "repository": {"full_name": "../etc"},
         "installation": {"id": 1}},
    ],
)
def test_malformed(payload: dict[str, Any]) -> None:
    with pytest.raises(MalformedPayload):
        route("issues", payload, "d")
