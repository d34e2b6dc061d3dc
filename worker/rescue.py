"""Publish again the jobs the broker lost (see ``contract.pending`` for why and how).

Every worker's main process runs a timer (:class:`RescueTimer`); every
``SPIDER_LOST_JOB_AFTER_S`` one worker of the fleet (a Redis lock) looks for jobs that the
bot published, that have not ended, and that are in no queue and not unacknowledged at two
looks that far apart, and publishes each again under its task id, on its queue, with its
arguments. ``spider_lost_jobs_total{outcome}`` counts ``republished`` and ``given_up``.
"""

from __future__ import annotations

import logging
import random
import threading
from typing import Protocol

import redis

from contract import pending
from contract.metrics import RECORDER
from contract.redis_client import redis_client
from contract.settings import AppSettings

log = logging.getLogger(__name__)

REDIS_TIMEOUT_S = 10.0
TICKS_PER_INTERVAL = 2  # each worker looks for the lock this often per interval


class Publisher(Protocol):
    """Publishes a task by name (a Celery app's ``send_task``)."""

    def send_task(self, name: str, *, kwargs: dict[str, object], task_id: str,
                  queue: str) -> object: ...


def rescue(client: redis.Redis, publisher: Publisher, after_s: float) -> list[str]:
    """One look: publish every lost job again (or give it up); their task ids."""
    done: list[str] = []
    for entry in pending.find_lost(client, after_s=after_s):
        if entry.republished >= pending.MAX_REPUBLISH:
            log.error("lost job given up", extra={"task_id": entry.task_id, "task": entry.task,
                                                   "republished": entry.republished})
            pending.settle(client, [entry.task_id])
            RECORDER.count("spider_lost_jobs", "given_up")
            continue
        pending.republished(client, entry)
        publisher.send_task(entry.task, kwargs=entry.kwargs, task_id=entry.task_id,
                            queue=entry.queue)
        log.warning("lost job published again", extra={"task_id": entry.task_id,
                                                        "task": entry.task,
                                                        "republished": entry.republished + 1})
        RECORDER.count("spider_lost_jobs", "republished")
        done.append(entry.task_id)
    return done


class RescueTimer(threading.Thread):
    """A daemon thread in each worker's main process; see the module docstring."""

    def __init__(self, settings: AppSettings, owner: str, publisher: Publisher) -> None:
        super().__init__(daemon=True, name="spider-rescue")
        self._settings = settings
        self._owner = owner
        self._publisher = publisher
        self._client: redis.Redis | None = None
        self.stopped = threading.Event()

    def tick_s(self) -> float:
        """Seconds to the next look for the lock, spread so workers do not look together."""
        return self._settings.lost_job_after_s / TICKS_PER_INTERVAL * random.uniform(0.75, 1.25)

    def run(self) -> None:
        while not self.stopped.wait(self.tick_s()):
            self.tick()

    def tick(self) -> list[str]:
        """Take the lock and look, or not; never raises (the timer must live on)."""
        after_s = self._settings.lost_job_after_s
        try:
            if self._client is None:
                self._client = redis_client(self._settings, timeout_s=REDIS_TIMEOUT_S)
            if not pending.take_turn(self._client, self._owner, after_s):
                return []
            return rescue(self._client, self._publisher, after_s)
        except redis.RedisError as exc:
            log.warning("lost jobs not looked for: Redis unavailable",
                        extra={"error": type(exc).__name__})
            return []
        except Exception as exc:  # the broker refused a publish: the next look tries again
            log.warning("looking for lost jobs failed",
                        extra={"error": f"{type(exc).__name__}: {exc}"[:300]})
            return []
        finally:
            if self._client is not None:
                RECORDER.flush(self._client)

    def stop(self) -> None:
        """Stop before the next tick."""
        self.stopped.set()
