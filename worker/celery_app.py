"""The Celery application (``celery -A worker.celery_app worker``), Redis as broker.

Reliability: a task is acknowledged only when it ends (``acks_late``). If its pool process
dies, the worker requeues it at once (``reject_on_worker_lost``); if the whole worker
dies (SIGKILL, a lost machine), Redis still holds it as unacknowledged and a surviving
worker restores it once ``visibility_timeout`` has passed. ``tasks.first_starts`` caps how
often one message may start. The visibility timeout exceeds the hard time limit and the
longest retry or deferral countdown, so a task still running is never handed to a second
worker. Each process takes one task at a time. None of this survives Redis losing its data:
run Redis with ``appendonly yes`` (docs/reliability.md).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import Celery, signals
from kombu import Queue

from contract import logs
from contract.broker import celery_conf
from contract.jobs import FIX_QUEUE, FIX_TASK_NAME, INDEX_QUEUE, INDEX_TASK_NAME, QUEUES
from contract.settings import AppSettings, SettingsError, get_settings

RESULT_TTL_S = 24 * 3600  # outcomes are kept a day, for the replay command and debugging
MAX_TASKS_PER_CHILD = 100  # a fresh process now and then bounds leaks of a long-lived model
RESULT_STORE_RETRIES = 12  # backing off up to 10 s each: about a minute of Redis away


def make_celery(settings: AppSettings) -> Celery:
    """The worker's Celery app: the shared broker settings plus the consumer's own."""
    app = Celery("spider", include=["worker.tasks"])
    app.conf.update(
        **celery_conf(settings),
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_soft_time_limit=settings.task_soft_time_limit_s,
        task_time_limit=settings.task_time_limit_s,
        result_expires=RESULT_TTL_S,
        # an outcome reached while Redis restarts is stored once it is back, not lost
        result_backend_always_retry=True,
        result_backend_max_retries=RESULT_STORE_RETRIES,
        task_track_started=True,
        worker_max_tasks_per_child=MAX_TASKS_PER_CHILD,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        # issue, scoring and index jobs: a plain worker takes all three, always from the
        # first non-empty queue in this order (contract.broker: queue_order_strategy), so a
        # waiting issue job goes before any waiting index job; `-Q spider` takes only issues
        task_queues=tuple(Queue(q) for q in QUEUES),
        task_routes={FIX_TASK_NAME: {"queue": FIX_QUEUE}, INDEX_TASK_NAME: {"queue": INDEX_QUEUE}},
    )
    return app


app = make_celery(get_settings())


@signals.setup_logging.connect
def _setup_logging(**_: Any) -> None:
    """Use spider's structured logs instead of Celery's own format."""
    settings = get_settings()
    logs.configure(settings.log_level, json_lines=settings.log_json)


@signals.worker_init.connect
def _check_settings(**_: Any) -> None:
    """Fail fast at start when the app's identity or limits are missing or wrong."""
    _setup_logging()  # Celery sets logging up only after this signal: its lines would be lost
    log = logging.getLogger(__name__)
    try:
        get_settings().check_worker()
    except SettingsError as exc:
        log.critical("worker cannot start: %s", exc)
        raise SystemExit(2) from exc  # Celery logs and swallows Exceptions raised here
    log.info("worker settings checked")
    _import_document_encoder(log)


def _import_document_encoder(log: logging.Logger) -> None:
    """Import the document encoder's libraries in the main process, before the pool forks:
    every child then has them (shared pages), and a first answer on a never-indexed
    repository does not wait about 5 s for torch (with the torch backends only)."""
    import spider

    t0 = time.perf_counter()
    if spider.import_document_encoder(get_settings().engine):
        log.info("document encoder imported in %.1f s", time.perf_counter() - t0)


@signals.worker_process_init.connect
def _preload_query_encoder(**_: Any) -> None:
    """Make this pool process's query encoder session in the background (ONNX Runtime's
    threads cannot cross a fork, so each process makes its own): the first warm answer
    does not wait for it."""
    import spider

    spider.preload_query_encoder(get_settings().engine)


_redelivery: list[Any] = []  # the timers of this worker's main process


@signals.worker_ready.connect
def _start_redelivery(sender: Any = None, **_: Any) -> None:
    """Start the redelivery timer (worker/redeliver.py) and the lost-job timer
    (worker/rescue.py) in the worker's main process; one worker of the fleet runs each at a
    time (a Redis lock)."""
    settings = get_settings()
    if _redelivery:
        return
    if settings.redeliver_enabled:
        from worker.redeliver import RedeliveryTimer

        timer = RedeliveryTimer(settings, owner=str(getattr(sender, "hostname", "") or "worker"))
        timer.start()
        _redelivery.append(timer)


    from worker.rescue import RescueTimer

    rescue = RescueTimer(settings, owner=str(getattr(sender, "hostname", "") or "worker"),
                         publisher=app)
    rescue.start()
    _redelivery.append(rescue)


@signals.worker_shutdown.connect
def _stop_redelivery(**_: Any) -> None:
    for timer in _redelivery:
        timer.stop()
