"""Index a repository ahead of its issues: fetch the default branch, build the graph and
embed every function into the cache, record the indexed head in Redis.

Queued by the bot on ``installation`` / ``installation_repositories`` and on pushes to the
default branch, and by an issue job that had to answer from a partial index. At most one
waits per repository (``contract.index_state``); it fetches the branch head when it runs,
so the newest head wins.

The repository lock is held for the fetch only (seconds): embedding, which takes minutes
on a large repository the first time, runs outside it, so an issue job of the same
repository never waits for it. That issue job ranks from what is cached (the embedding
cache is keyed by content, shared, and written every few batches while this job runs)
and, when too much is missing, takes the engine's cold path (``worker.engine``).
"""

from __future__ import annotations

import logging
import time

from contract import index_state
from contract.jobs import IndexJob
from worker import locks
from worker.deps import Deps
from worker.outcome import Outcome
from worker.repo_config import load_config

log = logging.getLogger(__name__)


class _Skip(Exception):
    """The index job ends here, for this reason (status ``skipped``)."""


def run_index(job: IndexJob, deps: Deps) -> Outcome:
    """Index ``job.repo``'s default branch head; skip when it is indexed already.

    Whatever the outcome (indexed, or found indexed), the issue jobs answered from a
    partial index of this repository are handed back to be run again (``reruns``)."""
    client = deps.redis
    try:
        outcome = _index(job, deps)
    except _Skip as skip:
        log.info("index job skipped", extra={"reason": str(skip)})
        outcome = Outcome(status="skipped", reason=str(skip))
    if outcome.status == "indexed" or outcome.reason.startswith("already indexed"):
        outcome.reruns = index_state.take_reruns(client, job.repo)
    return outcome


def _index(job: IndexJob, deps: Deps) -> Outcome:
    s = deps.settings
    client = deps.redis
    started = time.perf_counter()
    done = index_state.indexed(client, job.repo)
    if job.sha and done is not None and done.sha == job.sha:
        index_state.release(client, job.repo, job.task_id)
        raise _Skip(f"already indexed at {job.sha[:12]}")
    with deps.github(job.installation_id) as gh:
        repo = gh.repository(job.owner, job.name)
        if repo.archived:
            raise _Skip("the repository is archived")
        if repo.size > s.max_repo_kb:
            raise _Skip(f"the repository is {repo.size} KB, above {s.max_repo_kb} KB")
        cfg = load_config(gh, job.owner, job.name, repo.default_branch).config
        if not cfg.enabled:
            raise _Skip("disabled in .github/spider.yml")
        # the repository's include/exclude decide the graph (and so the cache keys issue
        # jobs look up); the full index embeds everything, whatever the cold settings say
        settings = s.engine.model_copy(update={**cfg.overrides(), "cold_pool": 0,
                                                "cold_always": False})
        with locks.held(client, locks.repo_lock_name(job.repo), ttl_s=s.lease_ttl_s,
                        wait_s=s.lock_wait_s):
            index_state.release(client, job.repo, job.task_id)  # a push from now queues anew
            fetched_at = index_state.now_us(client)
            t0 = time.perf_counter()
            checkout = deps.mirrors.fetch(job.repo, repo.default_branch, gh.token)
            files = deps.engine.source_files(checkout, settings)
            fetch_s = time.perf_counter() - t0
    if files > s.max_source_files:
        raise _Skip(f"{files} source files, above {s.max_source_files}")
    done = index_state.indexed(client, job.repo)
    if done is not None and done.sha == checkout.sha:
        raise _Skip(f"already indexed at {checkout.sha[:12]}")
    if done is not None and done.fetched_at > fetched_at:
        raise _Skip("a newer head was indexed meanwhile")
    t1 = time.perf_counter()
    index = deps.engine.index(checkout, settings)  # outside the repository lock
    index_s = time.perf_counter() - t1
    stats = dict(getattr(index, "stats", {}) or {})
    functions = int(stats.get("functions", len(getattr(index, "function_ids", []) or [])))
    recorded = index_state.record_indexed(client, job.repo, checkout.sha, fetched_at, functions)
    timings = {"fetch": round(fetch_s, 3), "index": round(index_s, 3),
               "total": round(time.perf_counter() - started, 3)}
    log.info("repository indexed", extra={"sha": checkout.sha, "functions": functions,
                                          "embedded": stats.get("embedded"),
                                          "recorded": recorded, "timings": timings})
    return Outcome(status="indexed", sha=checkout.sha, functions=functions,
                   embedded=int(stats.get("embedded", 0) or 0), recorded=recorded,
                   timings=timings)
