from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.errors import MalformedPayload
from bot.events import Acknowledge, Enqueue, EnqueueIndex, Ignore, route

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
        {"action": "opened", "issue": {"number": 0}, "repository": {"full_name": "a/b"},
         "installation": {"id": 1}},
        {"action": "opened", "issue": {"number": 1}, "repository": {"full_name": "a/b"},
         "installation": {"id": -5}},
    ],
)
def test_malformed(payload: dict[str, Any]) -> None:
    with pytest.raises(MalformedPayload):
        route("issues", payload, "d")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=30,
)
KEYS = st.sampled_from(["action", "issue", "comment", "repository", "installation", "sender"])
NEAR_VALID = st.fixed_dictionaries({
    "action": st.sampled_from(["opened", "created", "edited", "x"]),
    "issue": st.fixed_dictionaries({"number": st.integers(-2, 3), "state": st.text(max_size=6),
                                    "locked": st.booleans()}),
    "comment": st.fixed_dictionaries({"id": st.integers(-2, 3), "body": st.text(max_size=30)}),
    "repository": st.fixed_dictionaries({"full_name": st.text(max_size=12)}),
    "installation": st.fixed_dictionaries({"id": st.integers(-2, 3)}),
})


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["issues", "issue_comment", "ping", "push", "installation",
                        "installation_repositories"]),
       st.dictionaries(KEYS, JSON, max_size=6) | NEAR_VALID)
def test_any_payload_is_decided_or_rejected_as_malformed(event: str, payload: dict[str, Any]) -> None:
    try:
        decision = route(event, payload, "d")
    except MalformedPayload:
        return
    assert isinstance(decision, Enqueue | EnqueueIndex | Ignore | Acknowledge)
