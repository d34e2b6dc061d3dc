"""The LLM pass: the first answer never waits for a model; the pass runs as its own job and
edits the one comment when the LLM finished, and leaves it standing when it did not."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from contract.jobs import IssueJob
from contract.metrics import METRICS_KEY, RECORDER
from contract.settings import AppSettings
from spider.settings import EngineSettings
from spider_devkit.fake_github import FakeGitHub
from tests.worker.helpers import StubEngine, commit, write
from worker.github import GitHubClient, InstallationTokens, RetryPolicy, TokenCache
from worker.mirror import Mirrors
from worker.pipeline import Deps, run_job

from .conftest import INSTALLATION, REPO

BODY = "parse_header drops the value when the header line contains a second colon, e.g. Host: a:80"
LLM = {"llm_base_url": "http://127.0.0.1:9/v1", "llm_model": "qwen2.5-coder:1.5b",
       "llm_roles": ("read",)}


@pytest.fixture
def engine() -> StubEngine:
    return StubEngine()


@pytest.fixture
def queued() -> list[IssueJob]:
    return []


@pytest.fixture
def deps(settings: AppSettings, redis_client: redis.Redis, engine: StubEngine,
         queued: list[IssueJob]) -> Deps:
    settings = settings.model_copy(
        update={"engine": EngineSettings(**{**settings.engine.model_dump(), **LLM})})
    policy = RetryPolicy(settings, sleep=lambda s: None)
    tokens = InstallationTokens(settings, TokenCache(redis_client, settings), policy)
    return Deps(settings=settings, redis=redis_client,
                github=lambda i: GitHubClient(settings, tokens, i, policy),
                mirrors=Mirrors(settings), engine=engine, policy=policy,
                queue_llm=queued.append)


def job() -> IssueJob:
    return IssueJob(INSTALLATION, REPO, 1, "d1", "issues.opened")


def test_first_answer_without_the_llm_then_the_pass_edits_the_comment(
        deps: Deps, fake: FakeGitHub, engine: StubEngine, queued: list[IssueJob]) -> None:
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    first = run_job(job(), deps)
    assert first.status == "created" and engine.calls[0]["llm_roles"] == ()
    assert queued == [job()]
    (ours,) = fake.bot_comments(REPO, 1)
    assert "`qwen2.5-coder:1.5b` is reading this list with the issue" in ours.body
    assert "re-read" not in ours.body
    RECORDER.flush(deps.redis)
    second = run_job(job(), deps, llm_pass=True)
    assert second.status == "updated" and second.comment_id == ours.id
    assert engine.calls[1]["llm_roles"] == ("read",)
    assert queued == [job()]  # the pass queues nothing more
    (edited,) = fake.bot_comments(REPO, 1)
    assert "the top 3 re-read with the issue by qwen2.5-coder:1.5b" in edited.body
    assert "qwen2.5-coder:1.5b judged it likely to need the edit (raised from 3rd)" in edited.body
    assert "is reading this list" not in edited.body
    RECORDER.flush(deps.redis)
    assert deps.redis.hget(METRICS_KEY, "c|spider_llm_passes|edited") == b"1"


def test_an_llm_that_fails_leaves_the_first_answer_standing(
        deps: Deps, fake: FakeGitHub, engine: StubEngine) -> None:
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    run_job(job(), deps)
    (ours,) = fake.bot_comments(REPO, 1)
    engine.llm_failure = "LLMUnavailable: http://127.0.0.1:9/v1: APIConnectionError"
    out = run_job(job(), deps, llm_pass=True)
    assert out.status == "skipped" and "APIConnectionError" in out.reason
    (still,) = fake.bot_comments(REPO, 1)
    assert still.body == ours.body
    assert not fake.requests("PATCH", f"/issues/comments/{ours.id}")
    RECORDER.flush(deps.redis)
    assert deps.redis.hget(METRICS_KEY, "c|spider_llm_passes|kept") == b"1"


def test_a_repository_can_turn_the_llm_off(
        deps: Deps, fake: FakeGitHub, repo_path: Path, engine: StubEngine,
        queued: list[IssueJob]) -> None:
    write(repo_path, {}, config="llm: false\n")
    commit(repo_path, "no llm here")
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    assert run_job(job(), deps).status == "created"
    assert queued == [] and engine.calls[0]["llm_roles"] == ()
    assert "is reading this list" not in fake.bot_comments(REPO, 1)[0].body
    out = run_job(job(), deps, llm_pass=True)  # a pass queued before the file changed
    assert out.status == "skipped" and len(engine.calls) == 1


def test_a_partial_answer_leaves_the_pass_to_the_run_after_indexing(
        deps: Deps, fake: FakeGitHub, engine: StubEngine, queued: list[IssueJob]) -> None:
    engine.cold = True
    deps.settings = deps.settings.model_copy(update={"issue_cold_pool": 500})
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    assert run_job(job(), deps).status == "created"
    assert queued == []
    engine.cold = False
    run_job(job(), deps, after_index=True)
    assert queued == [job()]


def test_an_llm_selector_asked_for_by_name_also_waits_for_the_pass() -> None:
    from worker.pipeline import first_answer_settings

    s = EngineSettings(anthropic_api_key="sk-x", selector="anthropic")
    first = first_answer_settings(s)
    assert first.selector_name == "offline" and first.active_llm_roles == ()
    assert s.active_llm_roles == ("select",)  # what the pass runs
    server = EngineSettings(llm_base_url="http://127.0.0.1:9/v1", llm_model="m", selector="llm")
    assert first_answer_settings(server).selector_name == "offline"
