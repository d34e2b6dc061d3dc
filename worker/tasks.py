"""The Celery task: ids in, an outcome out. Retries, waits, attempt caps, metrics and
logging live here; the work itself is ``worker.pipeline.run_job``.

Two kinds of "later": a transient failure (GitHub 5xx, a timeout, a rate limit) is retried
with exponential backoff at most ``max_retries`` times; a job that finds its installation's
or repository's slots full, or its issue or repository locked, waits its turn
(``deferrals``, growing delays, at most ``max_deferrals``) without using up a retry.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import redis
from celery import Task
from celery.exceptions import Reject, SoftTimeLimitExceeded, TimeLimitExceeded

from contract import index_state, logs
from contract.jobs import (
    FIX_QUEUE,
    FIX_TASK_NAME,
    INDEX_QUEUE,
    INDEX_TASK_NAME,
    TASK_NAME,
    FixJob,
    IndexJob,
    IssueJob,
)
from contract.metrics import RECORDER
from contract.redis_client import redis_client
from contract.settings import AppSettings, get_settings
from worker.celery_app import app
from worker.deps import Deps
from worker.engine import SpiderEngine
from worker.errors import NotYourTurn, RateLimited, is_transient
from worker.github import GitHubClient, InstallationTokens, RetryPolicy, TokenCache
from worker.mirror import Mirrors
from worker.outcome import Outcome
from worker.pipeline import could_not_finish, run_job
from worker.store import Store

log = logging.getLogger(__name__)

STARTS_KEY_PREFIX = "spider:starts:"
STARTS_TTL_S = 24 * 3600  # long enough to span every redelivery of one message
REDIS_TIMEOUT_S = 10.0


@lru_cache(maxsize=1)
def deps() -> Deps:
    """The real dependencies, built once per worker process (after the fork)."""
    settings = get_settings()
    client = redis_client(settings, timeout_s=REDIS_TIMEOUT_S)  # plain Redis or Sentinel
    policy = RetryPolicy(settings)
    tokens = InstallationTokens(settings, TokenCache(client, settings), policy)
    return Deps(
        settings=settings,
        redis=client,
        github=lambda installation_id: GitHubClient(settings, tokens, installation_id, policy),
        mirrors=Mirrors(settings),
        engine=SpiderEngine(),
        policy=policy,
        store=Store(settings.database_url_or_default),  # connects on first use only
        queue_index=lambda job: queue_index(client, settings, job),
    )


def queue_index(client: redis.Redis, settings: AppSettings, job: IndexJob) -> bool:
    """Publish an index job unless one already waits for its repository; True if published."""
    if not index_state.request(client, job.repo, job.task_id, job.sha,
                               settings.index_pending_ttl_s):
        return False
    try:
        index_repository.apply_async(kwargs=job.as_kwargs(), task_id=job.task_id,
                                     queue=INDEX_QUEUE)
    except Exception:
        index_state.release(client, job.repo, job.task_id)
        raise
    return True


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


# A run killed at the hard time limit (the soft limit did not stop it: a C extension that
# does not return, a loop that swallows the exception) is run again once with cheaper
# settings (worker.plan.CHEAPER_SETTINGS); if that is killed too, a third run only
# posts the polite "could not finish" comment. Never a silent end.
HARD_LIMIT_RUNS = 2


class LocalizeTask(Task):
    """The class of ``localize_issue``: what follows a run killed at the hard time limit."""

    def on_failure(self, exc: BaseException, task_id: str, args: Any, kwargs: Any,
                   einfo: Any) -> None:
        if isinstance(exc, TimeLimitExceeded):
            after_hard_time_limit(self, exc, task_id, dict(kwargs or {}))


def after_hard_time_limit(task: Task, exc: BaseException, task_id: str,
                          kwargs: dict[str, Any]) -> None:
    """In the worker's main process, once Celery has killed the pool process at the hard
    time limit (it then marks the task failed and acknowledges the message): publish the
    job again under the same task id, one more hit counted, and mark the task as retrying
    so that its outcome is the next run's."""
    hits = int(kwargs.get("hard_limit_hits", 0)) + 1
    where = {"delivery_id": kwargs.get("delivery_id"), "repo": kwargs.get("repo"),
             "issue": kwargs.get("issue_number"), "hard_limit_hits": hits}
    if hits > HARD_LIMIT_RUNS:  # the comment run itself was killed: nothing cheaper is left
        log.error("job gave up: killed at the hard time limit again", extra=where)
        return
    try:
        task.backend.mark_as_retry(task_id, exc)
        task.apply_async(kwargs={**kwargs, "hard_limit_hits": hits}, task_id=task_id)
    except Exception as err:  # Redis away at that very moment
        log.error("job lost after the hard time limit: not published again",
                  extra={**where, "error": type(err).__name__})
        return
    log.warning("job killed at the hard time limit: run again "
                + ("with cheaper settings" if hits < HARD_LIMIT_RUNS else "to say so"),
                extra=where)


@app.task(name=TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True,
          base=LocalizeTask,
          max_retries=None)  # the limits are ours: failures and deferrals are counted apart
def localize_issue(self: Task, installation_id: int, repo: str, issue_number: int,
                   delivery_id: str, trigger: str, deferrals: int = 0,
                   hard_limit_hits: int = 0, after_index: bool = False) -> dict[str, Any]:
    """Localize one issue and post or update its comment (``after_index``: again, once the
    full index of a repository it answered from a partial index is there)."""
    d = deps()
    settings = d.settings
    job = IssueJob(installation_id, repo, issue_number, delivery_id, trigger)
    retries = int(self.request.retries or 0)
    failures = max(0, retries - deferrals)
    started = time.perf_counter()
    outcome = "failed"
    with logs.bind(delivery_id=delivery_id, repo=repo, issue=issue_number, trigger=trigger,
                   attempt=failures + 1):
        try:
            try:
                starts_id = str(self.request.id) + (f"/h{hard_limit_hits}"
                                                    if hard_limit_hits else "")
                if not first_starts(d.redis, starts_id, retries,
                                    settings.max_deliveries):
                    log.error("message dropped: it was started too many times")
                    return Outcome(status="failed",
                                   reason="its worker was lost repeatedly").as_dict()
                if hard_limit_hits >= HARD_LIMIT_RUNS:
                    result = could_not_finish(job, d)
                elif hard_limit_hits:
                    result = run_job(job, d, cheaper=True)
                else:
                    result = run_job(job, d, after_index=after_index)
            except NotYourTurn as exc:
                outcome = "deferred"  # unless _defer gives up and returns
                given_up = _defer(self, exc, job, deferrals, settings)
            except SoftTimeLimitExceeded as exc:
                outcome = "retried"  # unless _retry_or_fail gives up and returns
                given_up = _retry_or_fail(self, exc, failures, settings, transient=True)
            except Exception as exc:
                outcome = "retried"
                given_up = _retry_or_fail(self, exc, failures, settings,
                                          transient=is_transient(exc))
            else:
                outcome = result.status
                return result.as_dict()
            outcome = "failed"
            return given_up
        finally:
            RECORDER.count("spider_jobs", outcome)
            RECORDER.observe("spider_job_seconds", time.perf_counter() - started)
            RECORDER.flush(d.redis)


def _defer(task: Task, exc: NotYourTurn, job: IssueJob, deferrals: int,
           settings: AppSettings) -> dict[str, Any]:
    if deferrals >= settings.max_deferrals:
        log.error("job gave up waiting for its turn",
                  extra={"error": str(exc), "deferrals": deferrals})
        return Outcome(status="failed", reason=f"waited {deferrals} times: {exc}").as_dict()
    delay = defer_delay(deferrals, settings)
    log.info("job waits its turn", extra={"reason": str(exc), "in_s": round(delay, 1),
                                          "deferrals": deferrals + 1})
    with _requeue_if_the_broker_is_away():
        raise task.retry(countdown=delay, kwargs={**_current_kwargs(task), **job.as_kwargs(),
                                                  "deferrals": deferrals + 1},
                         max_retries=None)


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
                   *, transient: bool) -> dict[str, Any]:
    if transient and failures < settings.max_retries:
        delay = retry_delay(exc, failures, settings)
        log.warning("job failed, will retry", extra={"error": str(exc), "in_s": round(delay, 1)})
        with _requeue_if_the_broker_is_away():
            raise task.retry(exc=exc, countdown=delay, max_retries=None)
    if transient:
        log.error("job failed after retries", extra={"error": str(exc), "retries": failures})
    elif isinstance(exc, Exception) and type(exc).__module__.startswith(("worker.", "spider.")):
        log.error("job failed", extra={"error": f"{type(exc).__name__}: {exc}"})
    else:
        log.exception("job failed unexpectedly")
    return Outcome(status="failed", reason=f"{type(exc).__name__}: {exc}").as_dict()


@app.task(name=FIX_TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True,
          max_retries=None, queue=FIX_QUEUE)
def score_fix(self: Task, installation_id: int, repo: str, delivery_id: str,
              pull_number: int | None = None, issue_number: int | None = None) -> dict[str, Any]:
    """Score a merged fix against our comment, record it, and show it in the comment.

    Transient failures (the database away, GitHub 5xx, a repository lock held) are retried
    with backoff up to ``fix_max_retries`` times: scoring can wait, an issue job cannot.
    """
    from worker.scoring import score_fix as run

    d = deps()
    settings = d.settings
    job = FixJob(installation_id, repo, delivery_id, pull_number, issue_number)
    retries = int(self.request.retries or 0)
    with logs.bind(delivery_id=delivery_id, repo=repo, pull=pull_number, issue=issue_number,
                   attempt=retries + 1):
        try:
            if not first_starts(d.redis, str(self.request.id), retries, settings.max_deliveries):
                log.error("scoring dropped: it was started too many times")
                return Outcome("skipped", "its worker was lost repeatedly").as_dict()
            result = run(job, d, d.store)
        except Exception as exc:
            if is_transient(exc) and retries < settings.fix_max_retries:
                delay = retry_delay(exc, retries, settings)
                log.warning("scoring failed, will retry",
                            extra={"error": f"{type(exc).__name__}: {exc}"[:300],
                                   "in_s": round(delay, 1)})
                with _requeue_if_the_broker_is_away():
                    raise self.retry(exc=exc, countdown=delay, max_retries=None) from exc
            log.exception("scoring failed")
            return Outcome("failed", f"{type(exc).__name__}: {exc}"[:500]).as_dict()
        finally:
            RECORDER.flush(d.redis)
        log.info("scoring done", extra={"status": result.status, "reason": result.reason,
                                        "recorded": result.fixes})
        return result.as_dict()


# An index job cut by the soft time limit goes on where it stopped (the embedding cache is
# written every few batches), so it is retried like a transient failure.
@app.task(name=INDEX_TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True,
          max_retries=None, queue=INDEX_QUEUE)
def index_repository(self: Task, installation_id: int, repo: str, delivery_id: str,
                     sha: str = "", reason: str = "push", deferrals: int = 0) -> dict[str, Any]:
    """Index a repository's default branch ahead of its issues; then run again the issue
    jobs that were answered from a partial index of it."""
    from worker.indexing import run_index

    d = deps()
    settings = d.settings
    job = IndexJob(installation_id, repo, delivery_id, sha, reason)
    retries = int(self.request.retries or 0)
    failures = max(0, retries - deferrals)
    started = time.perf_counter()
    outcome = "failed"
    with logs.bind(delivery_id=delivery_id, repo=repo, trigger=job.trigger, attempt=failures + 1):
        try:
            try:
                if not first_starts(d.redis, str(self.request.id), retries,
                                    settings.max_deliveries):
                    log.error("index job dropped: it was started too many times")
                    return Outcome("skipped", "its worker was lost repeatedly").as_dict()
                result = run_index(job, d)
            except NotYourTurn as exc:  # the repository's lock (another job fetching)
                outcome = "deferred"
                if deferrals >= settings.max_deferrals:
                    log.error("index job gave up waiting for its turn", extra={"error": str(exc)})
                    outcome = "failed"
                    return Outcome("skipped", f"waited {deferrals} times").as_dict()
                with _requeue_if_the_broker_is_away():
                    raise self.retry(countdown=defer_delay(deferrals, settings),
                                     kwargs={**job.as_kwargs(), "deferrals": deferrals + 1},
                                     max_retries=None) from exc
            except SoftTimeLimitExceeded as exc:
                outcome = "retried"
                given_up = _retry_or_fail(self, exc, failures, settings, transient=True)
            except Exception as exc:
                outcome = "retried"
                given_up = _retry_or_fail(self, exc, failures, settings,
                                          transient=is_transient(exc))
            else:
                outcome = result.status
                _run_again(result.reruns)
                return result.as_dict()
            outcome = "failed"
            return given_up
        finally:
            RECORDER.count("spider_index_jobs", outcome)
            RECORDER.observe("spider_index_job_seconds", time.perf_counter() - started)
            RECORDER.flush(d.redis)


def _run_again(reruns: list[dict[str, Any]]) -> None:
    """Publish the issue jobs answered from a partial index again, under new task ids."""
    for kwargs in reruns:
        try:
            job = IssueJob(kwargs["installation_id"], kwargs["repo"], kwargs["issue_number"],
                           kwargs["delivery_id"], kwargs["trigger"])
            localize_issue.apply_async(kwargs={**job.as_kwargs(), "after_index": True},
                                       task_id=f"{job.delivery_id}:indexed")
        except Exception as exc:  # the partial comment stays; `/spider` refreshes it
            log.warning("issue job not run again after indexing",
                        extra={"error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        log.info("issue job run again after indexing", extra={"issue": job.issue_number})
