"""Jobs published and not ended yet, kept in Redis, so a message the broker loses is
published again.

Why: Celery's Redis transport takes a message off its queue with ``BRPOP`` and only then,
in a second round trip, records it as unacknowledged. A worker killed between the two
(SIGKILL, out of memory, a lost machine) loses the message for good: it is neither queued
nor unacknowledged, so no visibility timeout ever restores it. The soak
(``tests/load/soak.py``) lost two jobs in thirty worker kills that way on two busy cores.

How: the bot records every job in one hash (:func:`record`) before it publishes it; a
worker removes it when the job ends, whatever the outcome (:func:`settle`). One worker of
the fleet at a time (a Redis lock) looks at the jobs older than ``lost_job_after_s``
(:func:`find_lost`): one that is in no queue and not unacknowledged is *suspect*; still
so at the next look, at least ``lost_job_after_s`` later, it is lost, and is published
again under its own task id (at most :data:`MAX_REPUBLISH` times, then given up with a log
line). Jobs are idempotent (one comment per issue, one record per fix), so a job wrongly
judged lost would only run twice.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import redis

from contract.jobs import Job, task_id_of, task_of

PENDING_KEY = "spider:pending"  # hash: task id -> JSON of PendingJob
SUSPECT_KEY = "spider:pending:suspect"  # hash: task id -> when first seen neither queued nor unacked
LOCK_KEY = "spider:pending:lock"
UNACKED_KEY = "unacked"  # kombu's Redis transport: delivery tag -> [message, exchange, key]
QUEUE_PATTERN = "spider*"  # the queues (and their priority steps) are named spider...
MAX_REPUBLISH = 3  # a job lost this many times is given up (a log line): something else is wrong
SCAN_COUNT = 500


@dataclass(frozen=True)
class PendingJob:
    """What it takes to publish a job again."""

    task_id: str
    task: str  # the Celery task name
    queue: str
    kwargs: dict[str, Any]
    at: float  # when it was (last) published, epoch seconds
    republished: int = 0

    def to_json(self) -> str:
        return json.dumps(vars(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: bytes | str) -> PendingJob:
        return cls(**json.loads(raw))


def record(client: redis.Redis, job: Job, *, now: float | None = None) -> PendingJob:
    """Remember ``job`` as published and not ended (call before publishing it)."""
    name, queue = task_of(job)
    entry = PendingJob(task_id_of(job), name, queue, job.as_kwargs(),
                       time.time() if now is None else now)
    client.hset(PENDING_KEY, entry.task_id, entry.to_json())
    return entry


def settle(client: redis.Redis, task_ids: Iterable[str]) -> None:
    """Forget jobs that ended (or were never published)."""
    ids = list(task_ids)
    if ids:
        client.pipeline().hdel(PENDING_KEY, *ids).hdel(SUSPECT_KEY, *ids).execute()


def _task_id(message: Any) -> str | None:
    """The task id in a message as kombu's Redis transport stores it."""
    if isinstance(message, list) and message:  # unacked: [message, exchange, routing key]
        message = message[0]
    if not isinstance(message, dict):
        return None
    headers = message.get("headers") or {}
    found = headers.get("id") or (message.get("properties") or {}).get("correlation_id")
    return str(found) if found else None


def in_broker(client: redis.Redis) -> set[str]:
    """Task ids of every message queued (any queue, any priority step) or unacknowledged."""
    ids: set[str] = set()
    raws: list[bytes] = []
    for key in client.scan_iter(match=QUEUE_PATTERN, count=SCAN_COUNT):
        if client.type(key) == b"list":
            raws.extend(client.lrange(key, 0, -1))
    raws.extend(client.hvals(UNACKED_KEY))
    for raw in raws:
        try:
            found = _task_id(json.loads(raw))
        except ValueError:
            continue
        if found:
            ids.add(found)
    return ids


def find_lost(client: redis.Redis, *, after_s: float, now: float | None = None) -> list[PendingJob]:
    """Jobs lost by the broker: recorded over ``after_s`` ago, and neither queued nor
    unacknowledged now nor at a look at least ``after_s`` ago. Marks new suspects, clears
    suspects that turned up. Read the pending jobs before the broker, so a job that ends
    (and leaves the broker) meanwhile is not mistaken for lost."""
    now = time.time() if now is None else now
    pending = {k.decode(): PendingJob.from_json(v) for k, v in client.hgetall(PENDING_KEY).items()}
    suspects = {k.decode(): float(v) for k, v in client.hgetall(SUSPECT_KEY).items()}
    present = in_broker(client)
    still = set(client.hkeys(PENDING_KEY))  # ended meanwhile: settled, gone from the hash
    lost: list[PendingJob] = []
    new: dict[str, float] = {}
    cleared = [t for t in suspects if t in present or t not in pending]
    for task_id, entry in pending.items():
        if task_id in present or task_id.encode() not in still or now - entry.at < after_s:
            continue
        since = suspects.get(task_id)
        if since is None:
            new[task_id] = now
        elif now - since >= after_s:
            lost.append(entry)
    pipe = client.pipeline()
    if new:
        pipe.hset(SUSPECT_KEY, mapping=new)
    if cleared:
        pipe.hdel(SUSPECT_KEY, *cleared)
    pipe.execute()
    return lost


def republished(client: redis.Redis, entry: PendingJob, *, now: float | None = None) -> None:
    """Record that a lost job was published again (its clock starts over)."""
    again = PendingJob(entry.task_id, entry.task, entry.queue, entry.kwargs,
                       time.time() if now is None else now, entry.republished + 1)
    client.pipeline().hset(PENDING_KEY, entry.task_id, again.to_json()).hdel(
        SUSPECT_KEY, entry.task_id).execute()


def take_turn(client: redis.Redis, owner: str, every_s: float) -> bool:
    """Whether this worker looks for lost jobs now (one of the fleet per interval)."""
    return bool(client.set(LOCK_KEY, owner, nx=True, ex=max(1, int(every_s))))
