"""Which jobs a bot's answer to a delivery queued, keyed by the Celery task id it used.

The bot answers ``{"status": "queued", "task_id": ...}`` for an issue job, whose task id is
its delivery id, and ``{"status": "queued", "task_id": ..., "task_ids": [...]}`` for index
jobs (a push, an installation), one a repository, each named ``index:<repo>:<delivery>``
(``contract.jobs.task_id_of``, ``bot/app.py``). A harness that waited for
``celery-task-meta-<delivery>`` would wait for an index job that never has that id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from contract import pending

DONE = ("created", "updated", "unchanged", "skipped")  # an issue job that ended as it should
INDEX_DONE = ("indexed", "skipped")  # an index job that ended as it should (worker.indexing)
QUEUED = "queued"  # the bot's answer when it published at least one job
RESULT_PREFIX = "celery-task-meta-"  # Celery's Redis result backend: one key per task id


@dataclass(frozen=True)
class QueuedJob:
    """One job a delivery queued."""

    task_id: str  # the Celery task id the bot published it under
    delivery_id: str
    index: bool  # an index job (push, installation), else an issue job

    @property
    def done(self) -> tuple[str, ...]:
        """The outcomes that mean this job ended as it should."""
        return INDEX_DONE if self.index else DONE


def queued_jobs(delivery_id: str, answer: Mapping[str, Any]) -> list[QueuedJob]:
    """The jobs the bot's answer to one delivery says it queued (none unless ``queued``)."""
    if answer.get("status") != QUEUED:
        return []
    index_ids = answer.get("task_ids")
    if index_ids is not None:
        return [QueuedJob(str(t), delivery_id, index=True) for t in index_ids]
    return [QueuedJob(str(answer["task_id"]), delivery_id, index=False)]


def queues_empty(client: redis.Redis) -> bool:
    """No message waiting in any queue (every priority step), none unacknowledged, and no
    job published and not ended (``contract.pending``). A job a worker publishes (the index
    job an issue job asks for, the issue job an index job runs again) is queued before the
    job that published it is acknowledged, so two empty looks in a row mean nothing is left."""
    for key in client.scan_iter(match=pending.QUEUE_PATTERN, count=pending.SCAN_COUNT):
        if client.type(key) == b"list" and client.llen(key):
            return False
    return not client.hlen(pending.UNACKED_KEY) and not client.hlen(pending.PENDING_KEY)


def finished(raw: bytes | str | None) -> dict[str, Any] | None:
    """A job's outcome from its stored Celery result (the value of ``RESULT_PREFIX + task
    id``), or None while it has not ended: the task's own result, or ``failed`` with the
    reason where it raised or returned no outcome."""
    if raw is None:
        return None
    meta = json.loads(raw)
    status, value = meta.get("status"), meta.get("result")
    if status not in ("SUCCESS", "FAILURE"):
        return None
    if status == "SUCCESS" and isinstance(value, dict) and "status" in value:
        return value
    return {"status": "failed", "reason": f"{status}: {value}"[:300]}


def read_outcomes(client: redis.Redis, task_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The outcomes of the jobs among ``task_ids`` that have ended (see :func:`finished`),
    by task id, read 500 result keys at a time."""
    done: dict[str, dict[str, Any]] = {}
    for i in range(0, len(task_ids), 500):
        chunk = task_ids[i : i + 500]
        for tid, raw in zip(chunk, client.mget([RESULT_PREFIX + t for t in chunk]), strict=True):
            outcome = finished(raw)
            if outcome is not None:
                done[tid] = outcome
    return done
