"""Index jobs from installation and push deliveries: routing, and at most one waiting per
repository (the newest head recorded, a burst of pushes coalesced)."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import redis
from fastapi.testclient import TestClient

from bot.errors import QueueUnavailable
from bot.events import (
    MAX_INDEX_REPOS_PER_DELIVERY,
    Acknowledge,
    EnqueueIndex,
    Ignore,
    route,
)
from bot.signature import sign
from contract import index_state
from contract.jobs import INDEX_QUEUE, IndexJob, task_of
from tests.bot.conftest import SECRET, RecordingQueue

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
REPO = "spider-bot/spider-bot"


def sample(name: str) -> dict[str, Any]:
    return copy.deepcopy(json.loads((SAMPLES / name / "payload.json").read_text()))


def push(sha: str, **changes: Any) -> dict[str, Any]:
    p = sample("push")
    p.update(after=sha, **changes)
    return p


def deliver(client: TestClient, event: str, payload: dict[str, Any]) -> Any:
    body = json.dumps(payload).encode()
    headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": str(uuid.uuid4()),
               "Content-Type": "application/json", "X-Hub-Signature-256": sign(SECRET, body)}
    return client.post("/webhook", content=body, headers=headers)


def test_a_push_to_the_default_branch_asks_for_an_index_job() -> None:
    decision = route("push", push("b" * 40), "d1")
    assert isinstance(decision, EnqueueIndex)
    (job,) = decision.jobs
    assert (job.repo, job.sha, job.reason, job.installation_id) == (REPO, "b" * 40, "push", 51234567)
    assert task_of(job) == ("spider.index_repository", INDEX_QUEUE)
    assert job.task_id == f"index:{REPO}:d1"


def test_pushes_elsewhere_and_branch_deletions_are_ignored() -> None:
    assert route("push", push("b" * 40, ref="refs/heads/dev"), "d") == Ignore(
        "push to a branch other than the default branch")
    assert route("push", push("b" * 40, ref="refs/tags/v1.0"), "d") == Ignore(
        "push to a branch other than the default branch")
    assert route("push", push("0" * 40, deleted=True), "d") == Ignore("the push deleted the branch")


def test_installation_indexes_its_repositories_and_other_actions_are_acknowledged() -> None:
    p = sample("installation_created")
    p["repositories"] = [{"full_name": f"acme/r{i}"} for i in range(MAX_INDEX_REPOS_PER_DELIVERY + 5)]
    decision = route("installation", p, "d1")
    assert isinstance(decision, EnqueueIndex)
    assert len(decision.jobs) == MAX_INDEX_REPOS_PER_DELIVERY  # the rest: on first issue
    assert len({j.task_id for j in decision.jobs}) == len(decision.jobs)
    assert {j.reason for j in decision.jobs} == {"installation"} and {j.sha for j in decision.jobs} == {""}
    p["action"] = "deleted"
    assert isinstance(route("installation", p, "d2"), Acknowledge)
    added = sample("installation_repositories_added")
    added["action"] = "removed"
    assert isinstance(route("installation_repositories", added, "d3"), Acknowledge)


def test_index_job_arguments_are_checked() -> None:
    for bad in ({"repo": "../etc"}, {"sha": "HEAD"}, {"reason": "whim"}, {"installation_id": 0}):
        kwargs = {"installation_id": 1, "repo": "acme/a", "delivery_id": "d", **bad}
        try:
            IndexJob(**kwargs)  # type: ignore[arg-type]
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad}")


def test_a_burst_of_pushes_queues_one_job_and_records_the_newest_head(
        client: TestClient, queue: RecordingQueue, redis_client: redis.Redis) -> None:
    answers = [deliver(client, "push", push(c * 40)).json() for c in "abcde"]
    assert answers[0]["status"] == "queued"
    assert [a["status"] for a in answers[1:]] == ["coalesced"] * 4
    assert len(queue.jobs) == 1 and queue.jobs[0].sha == "a" * 40
    assert index_state.wanted(redis_client, REPO) == "e" * 40  # the waiting job fetches the head
    assert index_state.pending(redis_client, REPO) == queue.jobs[0].task_id
    # the job starts fetching: from now on a push queues a fresh job (for a newer head)
    index_state.release(redis_client, REPO, queue.jobs[0].task_id)
    assert deliver(client, "push", push("f" * 40)).json()["status"] == "queued"
    assert [j.sha for j in queue.jobs] == ["a" * 40, "f" * 40]


def test_another_repository_is_not_coalesced(client: TestClient, queue: RecordingQueue) -> None:
    assert deliver(client, "push", push("a" * 40)).json()["status"] == "queued"
    other = push("a" * 40)
    other["repository"]["full_name"] = "spider-bot/other"
    assert deliver(client, "push", other).json()["status"] == "queued"
    assert [j.repo for j in queue.jobs] == [REPO, "spider-bot/other"]


def test_installation_skips_repositories_with_a_waiting_job(
        client: TestClient, queue: RecordingQueue) -> None:
    assert deliver(client, "push", push("a" * 40)).json()["status"] == "queued"
    p = sample("installation_created")
    p["repositories"] = [{"full_name": REPO}, {"full_name": "spider-bot/new"}]
    answer = deliver(client, "installation", p).json()
    assert answer["status"] == "queued" and answer["coalesced"] == 1
    assert answer["task_ids"] == [f"index:spider-bot/new:{queue.jobs[1].delivery_id}"]


def test_a_failed_enqueue_forgets_the_request(client: TestClient, queue: RecordingQueue,
                                              redis_client: redis.Redis) -> None:
    queue.fail = QueueUnavailable("broker down")
    resp = deliver(client, "push", push("a" * 40))
    assert resp.status_code == 503
    assert index_state.pending(redis_client, REPO) is None  # a redelivery will queue it
    queue.fail = None
    assert deliver(client, "push", push("a" * 40)).json()["status"] == "queued"


def test_repositories_added_later_have_their_addition_time_recorded(
        client: TestClient, queue: RecordingQueue, redis_client: redis.Redis) -> None:
    from datetime import UTC, datetime

    from contract import installs

    added = sample("installation_repositories_added")
    decision = route("installation_repositories", added, "d1")
    assert isinstance(decision, EnqueueIndex)
    names = tuple(r["full_name"] for r in added["repositories_added"])
    assert decision.added == names  # every one, not only those indexed ahead
    assert route("installation", sample("installation_created"), "d2").added == ()  # type: ignore[union-attr]
    # issue events carry only the installation's id: the worker applies the rule
    assert set(sample("issues_opened")["installation"]) == {"id", "node_id"}

    before = datetime.now(UTC)
    assert deliver(client, "installation_repositories", added).json()["status"] == "queued"
    when = installs.repo_added_at(redis_client, names[0])
    assert when is not None and when >= before.replace(microsecond=0)
