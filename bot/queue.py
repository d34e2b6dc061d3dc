"""Hand a job to the worker through Celery by task name: the bot never imports the tasks."""

from __future__ import annotations

from typing import Protocol

from celery import Celery
from kombu.exceptions import KombuError, OperationalError

from bot.errors import QueueUnavailable
from worker.jobs import QUEUE, TASK_NAME, IssueJob

# Publishing must not hold a webhook answer for long: GitHub times out after 10 s.
PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}


class Enqueuer(Protocol):
    """Something that queues a job and returns the task id."""

    def __call__(self, job: IssueJob) -> str: ...


class CeleryEnqueuer:
    """Publishes ``localize_issue`` on the worker's queue; the task id is the delivery id."""

    def __init__(self, app: Celery) -> None:
        self._app = app

    def __call__(self, job: IssueJob) -> str:
        try:
            result = self._app.send_task(
                TASK_NAME,
                kwargs=job.as_kwargs(),
                task_id=job.delivery_id,
                queue=QUEUE,
                retry=True,
                retry_policy=PUBLISH_RETRY_POLICY,
            )
        except (KombuError, OperationalError, OSError) as exc:
            raise QueueUnavailable(f"broker: {type(exc).__name__}") from exc
        return str(result.id)
