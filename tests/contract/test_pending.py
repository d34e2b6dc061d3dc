"""Jobs the broker loses are found and published again (contract.pending, worker.rescue):
a message taken off its queue by a worker killed before it recorded the message as
unacknowledged is neither queued nor unacknowledged; two looks ``after_s`` apart find it,
and it is published again under its task id. Real Redis, real Celery publishing."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis

from bot.queue import CeleryEnqueuer, make_publisher
from contract import pending
from contract.jobs import FIX_QUEUE, QUEUE, FixJob, IssueJob
from contract.settings import AppSettings
from worker.rescue import rescue

GUID = "0b9b1d7e-9f0c-4d55-8f5c-3c0f1f6a0001"
AFTER_S = 60.0


@pytest.fixture
def publisher(redis_url: str) -> Iterator[object]:
    app = make_publisher(AppSettings(redis_url=redis_url))
    yield app
    app.close()


def _publish(client: redis.Redis, app: object, job: IssueJob | FixJob, at: float) -> str:
    pending.record(client, job, now=at)
    return CeleryEnqueuer(app)(job)  # type: ignore[arg-type]


def test_a_message_lost_between_brpop_and_unacked_is_published_again(
        redis_client: redis.Redis, publisher: object) -> None:
    job = IssueJob(7, "acme/alpha", 3, GUID, "issues.opened")
    task_id = _publish(redis_client, publisher, job, at=1000.0)
    assert pending.find_lost(redis_client, after_s=AFTER_S, now=2000.0) == []  # queued
    # a worker takes the message and is killed before recording it as unacknowledged
    raw = redis_client.rpop(QUEUE)
    assert raw is not None and redis_client.llen(QUEUE) == 0
    assert pending.find_lost(redis_client, after_s=AFTER_S, now=2000.0) == []  # suspect only
    assert pending.find_lost(redis_client, after_s=AFTER_S, now=2030.0) == []  # too soon
    (lost,) = pending.find_lost(redis_client, after_s=AFTER_S, now=2060.0)
    assert lost.task_id == task_id == GUID and lost.queue == QUEUE
    assert lost.kwargs == job.as_kwargs()

    assert rescue(redis_client, publisher, after_s=0) == [GUID]  # published again
    (again,) = redis_client.lrange(QUEUE, 0, -1)
    message = json.loads(again)
    assert message["headers"]["id"] == GUID and message["headers"]["task"] == "spider.localize_issue"
    entry = pending.PendingJob.from_json(redis_client.hget(pending.PENDING_KEY, GUID) or b"")
    assert entry.republished == 1
    pending.settle(redis_client, [GUID])  # the job ended
    assert redis_client.hlen(pending.PENDING_KEY) == 0 and redis_client.hlen(pending.SUSPECT_KEY) == 0


def test_queued_unacknowledged_young_and_ended_jobs_are_not_lost(
        redis_client: redis.Redis, publisher: object) -> None:
    issue = IssueJob(7, "acme/alpha", 4, "0b9b1d7e-9f0c-4d55-8f5c-3c0f1f6a0002", "issues.opened")
    fix = FixJob(7, "acme/alpha", "0b9b1d7e-9f0c-4d55-8f5c-3c0f1f6a0003", pull_number=12)
    _publish(redis_client, publisher, issue, at=1000.0)
    _publish(redis_client, publisher, fix, at=1000.0)
    # the fix job's message is held by a live worker: unacknowledged, as kombu records it
    raw = redis_client.rpop(FIX_QUEUE)
    assert raw is not None
    redis_client.hset(pending.UNACKED_KEY, "tag-1", json.dumps([json.loads(raw), "", FIX_QUEUE]))
    young = IssueJob(7, "acme/alpha", 5, "0b9b1d7e-9f0c-4d55-8f5c-3c0f1f6a0004", "issues.opened")
    pending.record(redis_client, young, now=1990.0)  # recorded, its publishing under way
    assert pending.find_lost(redis_client, after_s=AFTER_S, now=2000.0) == []
    pending.settle(redis_client, [young.delivery_id])
    for now in (2100.0, 2200.0):
        assert pending.find_lost(redis_client, after_s=AFTER_S, now=now) == []
    # an ended job is settled: never looked at again, even once gone from the broker
    redis_client.rpop(QUEUE)
    pending.settle(redis_client, [issue.delivery_id])
    for now in (2300.0, 2400.0):
        assert pending.find_lost(redis_client, after_s=AFTER_S, now=now) == []


def test_a_job_lost_again_and_again_is_given_up(redis_client: redis.Redis,
                                                publisher: object) -> None:
    job = IssueJob(7, "acme/alpha", 6, "0b9b1d7e-9f0c-4d55-8f5c-3c0f1f6a0005", "issues.opened")
    _publish(redis_client, publisher, job, at=0.0)
    for _ in range(pending.MAX_REPUBLISH):
        redis_client.delete(QUEUE)
        assert rescue(redis_client, publisher, after_s=0) == []
        assert rescue(redis_client, publisher, after_s=0) == [job.delivery_id]
    redis_client.delete(QUEUE)
    rescue(redis_client, publisher, after_s=0)
    assert rescue(redis_client, publisher, after_s=0) == []  # given up: forgotten, a log line
    assert redis_client.hlen(pending.PENDING_KEY) == 0
