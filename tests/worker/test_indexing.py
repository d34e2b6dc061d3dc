"""Index jobs (worker/indexing.py) and the issue job's cold path (worker/pipeline.py): a
real mirror and fake GitHub, a stub engine."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from contract import index_state
from contract.jobs import IndexJob, IssueJob
from contract.settings import AppSettings
from spider_devkit.fake_github import FakeGitHub
from tests.worker.helpers import StubEngine, commit, git, write
from worker import locks
from worker.github import GitHubClient, InstallationTokens, RetryPolicy, TokenCache
from worker.indexing import run_index
from worker.mirror import Mirrors
from worker.pipeline import Deps, run_job

from .conftest import INSTALLATION, REPO

BODY = "parse_header drops the value when the header line contains a second colon, e.g. Host: a:80"


@pytest.fixture
def engine() -> StubEngine:
    return StubEngine()


@pytest.fixture
def queued() -> list[IndexJob]:
    return []


@pytest.fixture
def deps(settings: AppSettings, redis_client: redis.Redis, engine: StubEngine,
         queued: list[IndexJob]) -> Deps:
    policy = RetryPolicy(settings, sleep=lambda s: None)
    tokens = InstallationTokens(settings, TokenCache(redis_client, settings), policy)

    def queue_index(job: IndexJob) -> None:  # what worker.tasks.queue_index does, minus Celery
        if index_state.request(redis_client, job.repo, job.task_id, job.sha, 60):
            queued.append(job)

    return Deps(settings=settings, redis=redis_client,
                github=lambda i: GitHubClient(settings, tokens, i, policy),
                mirrors=Mirrors(settings), engine=engine, policy=policy, queue_index=queue_index)


def index_job(sha: str = "", delivery: str = "d1") -> IndexJob:
    return IndexJob(INSTALLATION, REPO, delivery, sha, "push" if sha else "installation")


def test_an_index_job_indexes_the_head_and_records_it(deps: Deps, repo_path: Path,
                                                      engine: StubEngine,
                                                      redis_client: redis.Redis) -> None:
    head = git(repo_path, "rev-parse", "HEAD")
    job = index_job(head)
    assert index_state.request(redis_client, REPO, job.task_id, head, 60)
    out = run_index(job, deps)
    assert out.status == "indexed" and out.sha == head and out.recorded
    assert [sha for sha, _ in engine.indexed] == [head]
    assert engine.indexed[0][1].cold_pool == 0  # the full index embeds everything
    assert index_state.indexed(redis_client, REPO).sha == head
    assert index_state.pending(redis_client, REPO) is None  # released when it fetched
    # the same head again (a redelivery, a second installation event): nothing to do
    again = run_index(index_job(head, "d2"), deps)
    assert again.status == "skipped" and again.reason.startswith("already indexed")
    assert run_index(index_job("", "d3"), deps).reason.startswith("already indexed")
    assert len(engine.indexed) == 1


def test_the_newest_head_wins(deps: Deps, repo_path: Path, engine: StubEngine,
                              redis_client: redis.Redis) -> None:
    old = git(repo_path, "rev-parse", "HEAD")
    write(repo_path, {"httpkit/extra.py": "def extra():\n    pass\n"})
    new = commit(repo_path, "more")
    # a job queued for the old head runs after the new push: it fetches, so indexes, the new
    out = run_index(index_job(old), deps)
    assert out.sha == new and index_state.indexed(redis_client, REPO).sha == new
    # a slow job whose fetch was older never overwrites the newer record
    done = index_state.indexed(redis_client, REPO)
    assert not index_state.record_indexed(redis_client, REPO, old, done.fetched_at - 1, 3)
    assert index_state.indexed(redis_client, REPO).sha == new


def test_an_index_job_holds_the_repository_lock_only_to_fetch(
        deps: Deps, engine: StubEngine, redis_client: redis.Redis) -> None:
    held_while_indexing: list[bool] = []
    real_index = engine.index

    def index(checkout, settings):  # type: ignore[no-untyped-def]
        try:  # an issue job of the same repository can take the lock now
            with locks.held(redis_client, locks.repo_lock_name(REPO), ttl_s=5, wait_s=0):
                held_while_indexing.append(False)
        except locks.Busy:
            held_while_indexing.append(True)
        return real_index(checkout, settings)

    engine.index = index  # type: ignore[method-assign]
    assert run_index(index_job(), deps).status == "indexed"
    assert held_while_indexing == [False]


def test_an_issue_on_a_cold_repository_is_answered_from_a_partial_index_then_again(
        deps: Deps, fake: FakeGitHub, engine: StubEngine, queued: list[IndexJob],
        redis_client: redis.Redis) -> None:
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    engine.cold = True
    job = IssueJob(INSTALLATION, REPO, 1, "d1", "issues.opened")
    first = run_job(job, deps)
    assert first.status == "created"
    (ours,) = fake.bot_comments(REPO, 1)
    pool = deps.settings.issue_cold_pool  # what the stub engine reports it embedded
    assert (f"Made from a partial index (the repository is being indexed: {pool:,} of 15,461 "
            "functions embedded); this comment is updated once indexing completes.") in ours.body
    assert [(j.repo, j.reason) for j in queued] == [(REPO, "issue")]  # the full index
    # the index job runs, records the head and hands the issue job back to run again
    engine.cold = False
    out = run_index(queued[0], deps)
    assert out.status == "indexed" and index_state.indexed(redis_client, REPO) is not None
    assert [r["issue_number"] for r in out.reruns] == [1] and out.reruns[0]["after_index"]
    assert index_state.take_reruns(redis_client, REPO) == []  # handed back once
    again = run_job(job, deps, after_index=True)
    assert again.status == "updated" and again.comment_id == ours.id
    (ours,) = fake.bot_comments(REPO, 1)
    assert "partial index" not in ours.body


def test_a_rerun_still_partial_promises_nothing_and_asks_for_no_more_runs(
        deps: Deps, fake: FakeGitHub, engine: StubEngine, redis_client: redis.Redis) -> None:
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    engine.cold = True
    run_job(IssueJob(INSTALLATION, REPO, 1, "d1", "issues.opened"), deps, after_index=True)
    (ours,) = fake.bot_comments(REPO, 1)
    assert "a later run (`/spider`) ranks from the full index" in ours.body
    assert "is updated once" not in ours.body
    assert index_state.take_reruns(redis_client, REPO) == []


def test_a_warm_repository_is_answered_from_the_full_index(
        deps: Deps, fake: FakeGitHub, engine: StubEngine, queued: list[IndexJob]) -> None:
    deps.mirrors.fetch(REPO, "main", None)  # the index job on install fetched its history
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    assert run_job(IssueJob(INSTALLATION, REPO, 1, "d1", "issues.opened"), deps).status == "created"
    assert "partial index" not in fake.bot_comments(REPO, 1)[0].body
    assert queued == []


def test_the_cold_path_can_be_turned_off(deps: Deps, fake: FakeGitHub, engine: StubEngine,
                                         queued: list[IndexJob]) -> None:
    deps.settings = deps.settings.model_copy(update={"issue_cold_pool": 0})
    deps.mirrors.fetch(REPO, "main", None)  # with its history: nothing left to fetch later
    engine.cold = True  # index_for_issue is not asked: the job embeds everything itself
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    run_job(IssueJob(INSTALLATION, REPO, 1, "d1", "issues.opened"), deps)
    assert "partial index" not in fake.bot_comments(REPO, 1)[0].body
    assert len(engine.indexed) == 1 and queued == []


def test_history_is_fetched_after_the_first_answer_which_is_edited_only_if_it_changes(
        deps: Deps, fake: FakeGitHub, engine: StubEngine, queued: list[IndexJob],
        redis_client: redis.Redis, repo_path: Path) -> None:
    write(repo_path, {"httpkit/extra.py": "def extra():\n    return 1\n"})
    commit(repo_path, "Add extra")  # a history below the head
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    job = IssueJob(INSTALLATION, REPO, 1, "d1", "issues.opened")
    assert run_job(job, deps).status == "created"  # ranked from the head alone
    git_dir = deps.mirrors.path_for(REPO)
    head = git(repo_path, "rev-parse", "HEAD")
    assert git(git_dir, "rev-list", head).split() == [head]  # no history window waited for
    assert index_state.indexed(redis_client, REPO) is None  # the index job still has work
    (first,) = fake.bot_comments(REPO, 1)
    assert "partial index" not in first.body
    out = run_index(queued[0], deps)  # fetches the window, hands the issue job back
    assert out.status == "indexed" and len(git(git_dir, "rev-list", head).split()) > 1
    (rerun,) = out.reruns
    assert rerun["after_index"] and rerun["listed"] == [
        "httpkit/headers.py:parse_header", "httpkit/session.py:Session.read_headers",
        "httpkit/session.py:Session.send"]
    again = run_job(job, deps, after_index=True, listed=rerun["listed"])
    assert again.status == "unchanged"  # the same list: the comment is not edited
    assert fake.bot_comments(REPO, 1)[0].body == first.body
    changed = run_job(job, deps, after_index=True, listed=["elsewhere.py:f"])
    assert changed.reason != again.reason  # another list: published (same body here: kept)
