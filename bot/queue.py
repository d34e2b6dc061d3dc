"""Hand a job to the worker through Celery by task name: the bot never imports the worker.

The publishing app is built here from the broker settings both sides share
(``contract.broker``); it knows no tasks, only the task name and queue of ``contract.jobs``.
"""

from __future__ import annotations

from typing import Protocol

from celery import Celery
from kombu.exceptions import KombuError, OperationalError

from bot.errors import QueueUnavailable
from contract.broker import celery_conf
from contract.jobs import Job, task_id_of, task_of
from contract.settings import AppSettings

# Publishing must not hold a webhook answer for long: GitHub times out after 10 s.
PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}


def make_publisher(settings: AppSettings) -> Celery:
    """A Celery app that only publishes jobs (no tasks registered, no worker settings)."""
    app = Celery("spider-bot")
    app.conf.update(**celery_conf(settings))
    return app


class Enqueuer(Protocol):
    """Something that queues a job and returns the task id."""

    def __call__(self, job: Job) -> str: ...


class CeleryEnqueuer:
    """Publishes ``localize_issue`` (or ``score_fix``, ``index_repository``) on its queue; the
    task id is the delivery id (an index job's adds its repository)."""

    def __init__(self, app: Celery) -> None:
        self._app = app

    def __call__(self, job: Job) -> str:
        name, queue = task_of(job)  # scoring and index jobs go to queues of their own
        try:
            result = self._app.send_task(
                name,
                kwargs=job.as_kwargs(),
                task_id=task_id_of(job),
                queue=queue,
                retry=True,
                retry_policy=PUBLISH_RETRY_POLICY,
            )
        except (KombuError, OperationalError, OSError) as exc:
            raise QueueUnavailable(f"broker: {type(exc).__name__}") from exc
        return str(result.id)
