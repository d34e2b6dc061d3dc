"""The skeleton every task shares: attempt caps, retries, waits for a turn, metrics, logs.

Two kinds of "later": a transient failure (GitHub 5xx, a timeout, a rate limit) is retried
with exponential backoff at most ``max_retries`` times; a job that finds its installation's
or repository's slots full, or its issue or repository locked, waits its turn
(``deferrals``, growing delays, at most ``max_deferrals``) without using up a retry. A
message whose worker was lost too often is dropped. :func:`run_task` does all of that
around one job's work; a :class:`TaskKind` says how each kind of task differs.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

import redis
from celery import Task
from celery.exceptions import Reject, SoftTimeLimitExceeded

from contract import logs, pending
from contract.jobs import Job
from contract.metrics import RECORDER
from contract.settings import AppSettings
from worker.deps import Deps
from worker.errors import Delayed, NotYourTurn, RateLimited, is_transient
from worker.outcome import Outcome, Status

log = logging.getLogger(__name__)

STARTS_KEY_PREFIX = "spider:starts:"
STARTS_TTL_S = 24 * 3600  # long enough to span every redelivery of one message
MAX_REASON_CHARS = 500  # a failure's reason in the task's result (the log has the rest)


@dataclass(frozen=True)
class TaskKind:
    """How one kind of task treats the ways a run can end."""

    noun: str  # in log lines: "job failed, will retry"
    max_retries: Callable[[AppSettings], int]  # retries of transient failures
    defers: bool = True  # NotYourTurn waits its turn; else it is a transient failure
    soft_limit_retried: bool = True  # a run cut by the soft time limit is retried
    jobs_metric: str | None = None  # counter of how runs ended (by status)
    seconds_metric: str | None = None  # histogram of run durations
    lost_status: Status = "failed"  # the result of a message started too many times
    gave_up_status: Status = "failed"  # the result of a job that waited too many times


ISSUE_TASK = TaskKind("job", lambda s: s.max_retries, jobs_metric="spider_jobs",
                      seconds_metric="spider_job_seconds")
# An index job cut by the soft time limit goes on where it stopped (the embedding cache is
# written every few batches), so it is retried like a transient failure.
INDEX_TASK = TaskKind("index job", lambda s: s.max_retries, jobs_metric="spider_index_jobs",
                      seconds_metric="spider_index_job_seconds", lost_status="skipped",
                      gave_up_status="skipped")
# Scoring can wait, an issue job cannot: more retries, and a lock held is one of them.
FIX_TASK = TaskKind("scoring", lambda s: s.fix_max_retries, defers=False,
                    soft_limit_retried=False, lost_status="skipped")


def run_task(task: Task, kind: TaskKind, d: Deps, job: Job, work: Callable[[Deps], Outcome],
             *, deferrals: int = 0, delays: int = 0, starts_id: str | None = None,
             **log_fields: Any) -> dict[str, Any]:
    """Run ``work`` as one attempt of ``task`` and return the result to store: the
    outcome's JSON form, or a failed one; raise Celery's Retry to run again later.
    ``starts_id``: the id this message's starts are counted under (default: the task id);
    ``delays``: the legs of a ``delay_minutes`` wait so far (like deferrals, no failure)."""
    settings = d.settings
    retries = int(task.request.retries or 0)
    failures = max(0, retries - deferrals - delays)
    started = time.perf_counter()
    ended = "failed"
    with logs.bind(**log_fields, attempt=failures + 1):
        try:
            try:
                if not first_starts(d.redis, starts_id or str(task.request.id), retries,
                                    settings.max_deliveries):
                    log.error(f"{kind.noun} dropped: it was started too many times")
                    return Outcome(kind.lost_status,
                                   "its worker was lost repeatedly").as_dict()
                result = work(d)
            except Delayed as exc:
                ended = "delayed"
                _delay(task, exc, job, delays)
            except Exception as exc:
                if kind.defers and isinstance(exc, NotYourTurn):
                    ended = "deferred"  # unless _defer gives up and returns
                    given_up = _defer(task, exc, job, deferrals, settings, kind)
                else:
                    ended = "retried"  # unless _retry_or_fail gives up and returns
                    transient = is_transient(exc) or (
                        kind.soft_limit_retried and isinstance(exc, SoftTimeLimitExceeded))
                    given_up = _retry_or_fail(task, exc, failures, settings,
                                              transient=transient, kind=kind)
            else:
                ended = result.status
                return result.as_dict()
            ended = "failed"
            return given_up
        finally:
            if ended not in RUNS_AGAIN:
                _settle(d.redis, str(task.request.id))
            if kind.jobs_metric:
                RECORDER.count(kind.jobs_metric, ended)
            if kind.seconds_metric:
                RECORDER.observe(kind.seconds_metric, time.perf_counter() - started)
            RECORDER.flush(d.redis)


RUNS_AGAIN = ("retried", "deferred", "delayed")  # a run that published the job again


def _settle(client: redis.Redis, task_id: str) -> None:
    """The job ended: it is no longer pending (contract.pending). Best effort: a record left
    behind only makes the job run once more, idempotently."""
    try:
        pending.settle(client, [task_id])
    except redis.RedisError as exc:
        log.warning("ended job not settled: Redis unavailable", extra={"error": type(exc).__name__})


def retry_delay(exc: BaseException, retries: int, settings: AppSettings) -> float:
    """Seconds before the next try: GitHub's own wait when it gave one, else exponential
    backoff with jitter (half fixed, half random, so retries neither stampede nor stall)."""
    if isinstance(exc, RateLimited) and exc.retry_after is not None:
        delay = exc.retry_after + random.uniform(1, 5)
    else:
        delay = settings.retry_backoff_s * 2**retries
        delay = delay / 2 + random.uniform(0, delay / 2)
    return min(delay, settings.retry_backoff_max_s)


def first_starts(client: redis.Redis, task_id: str, retries: int, cap: int) -> bool:
    """Count starts of this message; False once it has started more than ``cap`` times.

    With ``acks_late`` and ``reject_on_worker_lost`` a message whose worker dies (out of
    memory, killed) is delivered again; a message that kills every worker must stop.
    """
    key = f"{STARTS_KEY_PREFIX}{task_id}:{retries}"
    pipe = client.pipeline()
    pipe.incr(key)
    pipe.expire(key, STARTS_TTL_S)
    starts = int(pipe.execute()[0])
    return starts <= cap


def defer_delay(deferrals: int, settings: AppSettings) -> float:
    """Seconds before a job that found its slot or lock taken looks again: growing by half
    each time, capped, then spread over [d, 2d) so waiting jobs do not wake together."""
    delay = min(settings.defer_delay_s * 1.5**deferrals, settings.defer_delay_max_s)
    return delay + random.uniform(0, delay)


def _defer(task: Task, exc: NotYourTurn, job: Job, deferrals: int, settings: AppSettings,
           kind: TaskKind = ISSUE_TASK) -> dict[str, Any]:
    """Run the job again after :func:`defer_delay` (no retry used up), or give up."""
    if deferrals >= settings.max_deferrals:
        log.error(f"{kind.noun} gave up waiting for its turn",
                  extra={"error": str(exc), "deferrals": deferrals})
        return Outcome(kind.gave_up_status, f"waited {deferrals} times: {exc}").as_dict()
    delay = defer_delay(deferrals, settings)
    log.info(f"{kind.noun} waits its turn", extra={"reason": str(exc), "in_s": round(delay, 1),
                                                   "deferrals": deferrals + 1})
    with _requeue_if_the_broker_is_away():
        raise task.retry(countdown=delay, kwargs={**_current_kwargs(task), **job.as_kwargs(),
                                                  "deferrals": deferrals + 1},
                         max_retries=None) from exc


def _delay(task: Task, exc: Delayed, job: Job, delays: int) -> NoReturn:
    """Publish the job again after the wait it asked for (``delay_minutes``): a message
    with a countdown, no slot or lock held meanwhile, no retry used up."""
    log.info("job waits before it looks again",
             extra={"in_s": round(exc.countdown, 1), "delays": delays + 1})
    with _requeue_if_the_broker_is_away():
        raise task.retry(countdown=exc.countdown,
                         kwargs={**_current_kwargs(task), **job.as_kwargs(), **exc.kwargs,
                                 "delays": delays + 1},
                         max_retries=None) from exc


def _current_kwargs(task: Task) -> dict[str, Any]:
    """The running message's kwargs (``hard_limit_hits`` must survive a deferral)."""
    return dict(getattr(getattr(task, "request", None), "kwargs", None) or {})


@contextmanager
def _requeue_if_the_broker_is_away() -> Iterator[None]:
    """A retry is a new message; when Redis cannot take it (a restart, a failover), Celery
    rejects the current one *without* requeueing it, and the job would be lost. Reject it
    with requeueing instead: Redis puts it back, or, if still away, keeps it unacknowledged
    and a worker restores it after the visibility timeout."""
    try:
        yield
    except Reject as rejected:
        log.warning("retry not published: the message goes back to the queue",
                    extra={"error": str(rejected.reason)})
        raise Reject(rejected.reason, requeue=True) from rejected


def _retry_or_fail(task: Task, exc: BaseException, failures: int, settings: AppSettings,
                   *, transient: bool, kind: TaskKind = ISSUE_TASK) -> dict[str, Any]:
    """Run the job again after :func:`retry_delay` when a retry may help and is left; else
    log the failure by its kind and return the failed outcome."""
    if transient and failures < kind.max_retries(settings):
        delay = retry_delay(exc, failures, settings)
        log.warning(f"{kind.noun} failed, will retry",
                    extra={"error": f"{type(exc).__name__}: {exc}"[:300], "in_s": round(delay, 1)})
        with _requeue_if_the_broker_is_away():
            raise task.retry(exc=exc, countdown=delay, max_retries=None)
    if transient:
        log.error(f"{kind.noun} failed after retries",
                  extra={"error": str(exc), "retries": failures})
    elif isinstance(exc, Exception) and type(exc).__module__.startswith(("worker.", "spider.")):
        log.error(f"{kind.noun} failed", extra={"error": f"{type(exc).__name__}: {exc}"})
    else:
        log.exception(f"{kind.noun} failed unexpectedly")
    return Outcome("failed", f"{type(exc).__name__}: {exc}"[:MAX_REASON_CHARS]).as_dict()
