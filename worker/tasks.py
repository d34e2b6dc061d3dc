"""The Celery tasks: ids in, an outcome out. Each is a few lines around its job's work;
attempt caps, retries, waits for a turn, metrics and logging are ``worker.task_runner``'s
(one skeleton for the three), and the work itself is ``worker.pipeline.run_job`` (an
issue), ``worker.indexing.run_index`` (a repository) and ``worker.scoring.score_fix``
(a merged fix). What follows a run killed at the hard time limit is here: it is Celery's.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

import redis
from celery import Task
from celery.exceptions import TimeLimitExceeded

from contract import index_state
from contract.jobs import (
    FIX_QUEUE,
    FIX_TASK_NAME,
    INDEX_QUEUE,
    INDEX_TASK_NAME,
    LLM_QUEUE,
    TASK_NAME,
    FixJob,
    IndexJob,
    IssueJob,
)
from contract.redis_client import redis_client
from contract.settings import AppSettings, get_settings
from worker.celery_app import app
from worker.deps import Deps
from worker.engine import SpiderEngine
from worker.github import GitHubClient, InstallationTokens, RetryPolicy, TokenCache
from worker.mirror import Mirrors
from worker.outcome import Outcome
from worker.pipeline import could_not_finish, run_job
from worker.store import Store
from worker.task_runner import FIX_TASK, INDEX_TASK, ISSUE_TASK, run_task

log = logging.getLogger(__name__)

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
        engine=SpiderEngine(keep_functions=settings.worker_index_cache_functions),
        policy=policy,
        store=Store(settings.database_url_or_default),  # connects on first use only
        queue_index=lambda job: queue_index(client, settings, job),
        queue_llm=queue_llm_pass,
    )


def queue_llm_pass(job: IssueJob) -> None:
    """Publish an issue's LLM pass on its own queue, under its own task id (one per
    delivery: a redelivered first answer publishes the same id again)."""
    localize_issue.apply_async(kwargs={**job.as_kwargs(), "llm_pass": True},
                               task_id=f"{job.delivery_id}:llm", queue=LLM_QUEUE)


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
                   hard_limit_hits: int = 0, after_index: bool = False,
                   waited: dict[str, Any] | None = None, delays: int = 0,
                   llm_pass: bool = False, listed: list[str] | None = None) -> dict[str, Any]:
    """Localize one issue and post or update its comment (``after_index``: again, once the
    full index of a repository it answered from a partial index is there; ``waited``:
    after the repository's ``delay_minutes``; ``llm_pass``: the configured LLM reads the
    list and the comment is edited; ``listed``: what a first answer ranked without history
    listed, so the run after indexing edits only a changed list; see
    ``worker.pipeline.run_job``)."""
    job = IssueJob(installation_id, repo, issue_number, delivery_id, trigger)

    def work(d: Deps) -> Outcome:
        if hard_limit_hits >= HARD_LIMIT_RUNS:  # killed twice: only say so
            return could_not_finish(job, d)
        if hard_limit_hits:
            if llm_pass:  # the LLM pass ran out of time: the first answer stands
                return Outcome(status="skipped", reason="LLM pass killed at the time limit")
            return run_job(job, d, cheaper=True, waited=waited)
        return run_job(job, d, after_index=after_index, waited=waited, llm_pass=llm_pass,
                       listed=listed)

    starts_id = str(self.request.id) + (f"/h{hard_limit_hits}" if hard_limit_hits else "")
    trigger = f"{trigger}+llm" if llm_pass else trigger
    return run_task(self, ISSUE_TASK, deps(), job, work, deferrals=deferrals, delays=delays,
                    starts_id=starts_id, delivery_id=delivery_id, repo=repo,
                    issue=issue_number, trigger=trigger)


@app.task(name=FIX_TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True,
          max_retries=None, queue=FIX_QUEUE)
def score_fix(self: Task, installation_id: int, repo: str, delivery_id: str,
              pull_number: int | None = None, issue_number: int | None = None) -> dict[str, Any]:
    """Score a merged fix against our comment, record it, and show it in the comment.

    Transient failures (the database away, GitHub 5xx, a repository lock held) are retried
    with backoff up to ``fix_max_retries`` times: scoring can wait, an issue job cannot.
    """
    from worker.scoring import score_fix as score

    job = FixJob(installation_id, repo, delivery_id, pull_number, issue_number)

    def work(d: Deps) -> Outcome:
        result = score(job, d, d.store)
        log.info("scoring done", extra={"status": result.status, "reason": result.reason,
                                        "recorded": result.fixes})
        return result

    return run_task(self, FIX_TASK, deps(), job, work, delivery_id=delivery_id, repo=repo,
                    pull=pull_number, issue=issue_number)


@app.task(name=INDEX_TASK_NAME, bind=True, acks_late=True, reject_on_worker_lost=True,
          max_retries=None, queue=INDEX_QUEUE)
def index_repository(self: Task, installation_id: int, repo: str, delivery_id: str,
                     sha: str = "", reason: str = "push", deferrals: int = 0) -> dict[str, Any]:
    """Index a repository's default branch ahead of its issues; then run again the issue
    jobs that were answered from a partial index of it."""
    from worker.indexing import run_index

    job = IndexJob(installation_id, repo, delivery_id, sha, reason)

    def work(d: Deps) -> Outcome:
        result = run_index(job, d)
        _run_again(result.reruns)
        return result

    return run_task(self, INDEX_TASK, deps(), job, work, deferrals=deferrals,
                    delivery_id=delivery_id, repo=repo, trigger=job.trigger)


def _run_again(reruns: list[dict[str, Any]]) -> None:
    """Publish the issue jobs answered from a partial index again, under new task ids."""
    for kwargs in reruns:
        try:
            job = IssueJob(kwargs["installation_id"], kwargs["repo"], kwargs["issue_number"],
                           kwargs["delivery_id"], kwargs["trigger"])
            again = {**job.as_kwargs(), "after_index": True}
            if isinstance(kwargs.get("listed"), list):  # answered before history was fetched
                again["listed"] = [str(i) for i in kwargs["listed"]]
            localize_issue.apply_async(kwargs=again,
                                       task_id=f"{job.delivery_id}:indexed")
        except Exception as exc:  # the partial comment stays; `/spider` refreshes it
            log.warning("issue job not run again after indexing",
                        extra={"error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        log.info("issue job run again after indexing", extra={"issue": job.issue_number})
