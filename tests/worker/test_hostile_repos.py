"""Hostile repositories through the worker: fetched into a mirror with git (hooks, submodules,
filters, fsck), indexed by the real engine, answered with one comment, or refused politely
when above the size limits. The repositories are built by ``tests.hostile``."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import redis

import worker.tasks as tasks
from contract.jobs import IssueJob
from contract.settings import AppSettings
from spider.comment.render import MARKER
from spider_devkit.fake_github import FakeGitHub
from tests.hostile import SECRET_FUNCTION, Hostile, git, hostile_repo, many_files_repo, safe_tree_of
from tests.worker.helpers import StubEngine
from worker.engine import SpiderEngine
from worker.errors import UnsafeRepository, is_transient
from worker.github import GitHubClient, InstallationTokens, RetryPolicy, TokenCache
from worker.mirror import Mirrors
from worker.pipeline import Deps, run_job

from .conftest import INSTALLATION

HOSTILE = "acme/hostile"
BODY = "handle() passes the request to route() unchanged, so headers are never normalised"


@pytest.fixture
def origin(tmp_path: Path, fake: FakeGitHub) -> Hostile:
    """The hostile repository where the worker fetches ``acme/hostile`` from, with a branch
    ``safe`` that git's fsck accepts (the same tree without its '..' entry)."""
    built = hostile_repo(tmp_path / "build")
    path = tmp_path / "origin" / HOSTILE
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(built.path), path)
    hostile = Hostile(path, built.markers, built.outside)
    git(path, "branch", "safe", safe_tree_of(hostile))
    return hostile


def deps_for(settings: AppSettings, client: redis.Redis, engine: object) -> Deps:
    policy = RetryPolicy(settings, sleep=lambda s: None)
    tokens = InstallationTokens(settings, TokenCache(client, settings), policy)
    return Deps(settings=settings, redis=client,
                github=lambda i: GitHubClient(settings, tokens, i, policy),
                mirrors=Mirrors(settings), engine=engine, policy=policy)  # type: ignore[arg-type]


def job(repo: str = HOSTILE, number: int = 1) -> IssueJob:
    return IssueJob(INSTALLATION, repo, number, f"d-{number}", "issues.opened")


def test_a_tree_git_refuses_is_a_permanent_failure(settings: AppSettings, origin: Hostile) -> None:
    mirrors = Mirrors(settings)
    with pytest.raises(UnsafeRepository, match="hasDotdot") as err:
        mirrors.fetch(HOSTILE, "main", None)
    assert not is_transient(err.value)  # retrying cannot help: no retries are spent
    pack_dir = mirrors.path_for(HOSTILE) / "objects" / "pack"
    assert not list(pack_dir.glob("tmp_*"))  # a failed fetch leaves nothing behind
    assert origin.fired() == []


def test_hostile_repository_gets_one_clean_comment(
    settings: AppSettings, redis_client: redis.Redis, fake: FakeGitHub, origin: Hostile
) -> None:
    fake.add_repo(HOSTILE, origin.path, default_branch="safe")
    fake.add_issue(HOSTILE, 1, "Requests are not normalised",
                   BODY + "; naive_name in app/naïve.py has the same problem")
    mirror = Mirrors(settings).path_for(HOSTILE)
    mirror.mkdir(parents=True)
    git(mirror, "init", "-q", "--bare")
    planted = origin.path.parent / "pwned-mirror-hook"
    for hook in ("reference-transaction", "post-update", "pre-receive", "post-merge"):
        path = mirror / "hooks" / hook
        path.write_text(f"#!/bin/sh\ntouch {planted}\n")
        path.chmod(0o755)
    deps = deps_for(settings.with_engine(first_stage="bm25", k=5), redis_client,
                    SpiderEngine())

    outcome = run_job(job(), deps)

    assert outcome.status == "created", outcome
    assert origin.fired() == [] and not planted.exists()
    (comment,) = fake.bot_comments(HOSTILE, 1)
    body = comment.body
    assert body.startswith(MARKER)
    names = re.findall(r"^\d+\. \[`([^`]+)`\]", body, flags=re.MULTILINE)
    assert len(names) == 5 and {"handle", "route", "naive_name"} <= set(names)
    # a file name that is not UTF-8: shown with U+FFFD, linked by its escaped bytes
    assert "in `app/na\ufffdve.py` L1-2" in body and f"/blob/{outcome.sha}/app/na%EFve.py#L1-L2)" in body
    assert SECRET_FUNCTION not in body and "passwd" not in body and "root:" not in body
    links = re.findall(r"\]\((https?://[^)\s]+)\)", body)
    sha = outcome.sha
    assert links and all(
        link.startswith((f"https://github.com/{HOSTILE}/blob/{sha}/",
                         f"https://github.com/{HOSTILE}/commit/{sha}")) for link in links)


def test_too_large_by_githubs_figure_gets_a_polite_comment(
    settings: AppSettings, redis_client: redis.Redis, fake: FakeGitHub, repo_path: Path
) -> None:
    fake.repos["acme/httpkit"].size_kb = 3_000_000
    fake.add_issue("acme/httpkit", 1, "Header parsing loses values", BODY)
    engine = StubEngine()
    deps = deps_for(settings.model_copy(update={"max_repo_kb": 2_000_000}), redis_client, engine)
    outcome = run_job(job("acme/httpkit"), deps)
    assert outcome.status == "too_large" and engine.calls == []
    (comment,) = fake.bot_comments("acme/httpkit", 1)
    assert comment.body.startswith(MARKER)
    assert "the repository is 2.9 GB, above the 1.9 GB this installation indexes" in comment.body
    assert not Mirrors(settings).path_for("acme/httpkit").exists()  # nothing was fetched
    # raised limit: the same comment becomes the list
    deps = deps_for(settings, redis_client, engine)
    fake.repos["acme/httpkit"].size_kb = 10
    assert run_job(job("acme/httpkit"), deps).status == "updated"
    (comment,) = fake.bot_comments("acme/httpkit", 1)
    assert "functions most likely" in comment.body


def test_a_mirror_larger_than_github_said_gets_a_polite_comment(
    settings: AppSettings, redis_client: redis.Redis, fake: FakeGitHub, origin: Hostile
) -> None:
    fake.add_repo(HOSTILE, origin.path, default_branch="safe")
    fake.repos[HOSTILE].size_kb = 1  # GitHub's figure lags; the fetched pack is the truth
    fake.add_issue(HOSTILE, 1, "Requests are not normalised", BODY)
    engine = StubEngine()
    deps = deps_for(settings.model_copy(update={"max_repo_kb": 50}), redis_client, engine)
    outcome = run_job(job(), deps)
    assert outcome.status == "too_large" and engine.calls == []
    assert "above the 50 KB this installation indexes" in fake.bot_comments(HOSTILE, 1)[0].body
    assert not Mirrors(settings).path_for(HOSTILE).exists()  # the oversized mirror is deleted


@pytest.mark.slow
def test_100000_source_files_get_a_polite_comment_before_any_parsing(
    settings: AppSettings, redis_client: redis.Redis, fake: FakeGitHub, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = many_files_repo(tmp_path / "build", 100_000, source_every=1)
    path = tmp_path / "origin" / "acme" / "many"
    shutil.move(str(repo), path)
    fake.add_repo("acme/many", path)
    fake.add_issue("acme/many", 1, "f0 returns the wrong value", BODY)
    engine = SpiderEngine()
    monkeypatch.setattr(engine, "index", lambda *a: pytest.fail("indexed anyway"))
    deps = deps_for(settings, redis_client, engine)
    outcome = run_job(job("acme/many"), deps)
    assert outcome.status == "too_large", outcome
    body = fake.bot_comments("acme/many", 1)[0].body
    assert "has 100000 source files, above the 20000 this installation indexes" in body


def test_the_task_ends_an_unsafe_repository_without_retrying(
    settings: AppSettings, redis_client: redis.Redis, fake: FakeGitHub, origin: Hostile,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.add_repo(HOSTILE, origin.path)  # main: the tree git refuses
    fake.add_issue(HOSTILE, 1, "Requests are not normalised", BODY)
    deps = deps_for(settings, redis_client, StubEngine())
    monkeypatch.setattr(tasks, "deps", lambda: deps)
    out = tasks.localize_issue.apply(kwargs=job().as_kwargs()).get()
    assert out["status"] == "failed" and "UnsafeRepository" in out["reason"]
    assert len(fake.requests("GET", path=f"/repos/{HOSTILE}")) == 1  # one try, no retry
    assert fake.bot_comments(HOSTILE, 1) == []
