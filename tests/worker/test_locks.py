"""Leases: locks and slots renew themselves while held and free themselves when the holder
dies; slots cap concurrent jobs per installation and per repository."""

from __future__ import annotations

import shutil
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import redis

from contract.jobs import IssueJob
from contract.settings import AppSettings
from spider_devkit.fake_github import FakeGitHub
from tests.worker.helpers import StubEngine
from worker import locks
from worker.errors import Busy, NotYourTurn, Throttled
from worker.github import GitHubClient, InstallationTokens, RetryPolicy, TokenCache
from worker.mirror import Mirrors
from worker.pipeline import Deps, run_job

from .conftest import INSTALLATION, REPO

TTL_S = 0.6  # short leases: the tests below wait a few TTLs


def test_slots_cap_holders_and_free_on_release(redis_client: redis.Redis) -> None:
    with locks.slot(redis_client, "repo:a/b", limit=2, ttl_s=30), \
            locks.slot(redis_client, "repo:a/b", limit=2, ttl_s=30):
        with pytest.raises(Throttled), locks.slot(redis_client, "repo:a/b", limit=2, ttl_s=30):
            pass
        with locks.slot(redis_client, "repo:c/d", limit=2, ttl_s=30):  # another repository
            pass
    assert locks.slot_holders(redis_client, "repo:a/b") == 0
    with locks.slot(redis_client, "repo:a/b", limit=2, ttl_s=30):
        pass


def test_a_dead_holders_slot_and_lock_free_themselves(redis_client: redis.Redis) -> None:
    # A holder that died: it took a slot and a lock and never renewed or released them.
    redis_client.eval(locks._ACQUIRE, 1, locks.SLOTS_PREFIX + "installation:9", "dead", 1,
                      int(TTL_S * 1000))
    redis_client.lock(locks.KEY_PREFIX + "issue:a/b#1", timeout=TTL_S).acquire()
    with pytest.raises(Throttled), locks.slot(redis_client, "installation:9", limit=1, ttl_s=30):
        pass
    with pytest.raises(Busy), locks.held(redis_client, "issue:a/b#1", ttl_s=30, wait_s=0):
        pass
    time.sleep(TTL_S * 1.5)
    with locks.slot(redis_client, "installation:9", limit=1, ttl_s=30), \
            locks.held(redis_client, "issue:a/b#1", ttl_s=30, wait_s=0):
        pass


def test_a_live_holder_keeps_its_leases_past_their_ttl(redis_client: redis.Redis) -> None:
    with locks.slot(redis_client, "repo:a/b", limit=1, ttl_s=TTL_S), \
            locks.held(redis_client, "repo:a/b", ttl_s=TTL_S, wait_s=0):
        time.sleep(TTL_S * 4)  # renewed every third of the TTL meanwhile
        with pytest.raises(Throttled), locks.slot(redis_client, "repo:a/b", limit=1, ttl_s=30):
            pass
        with pytest.raises(Busy), locks.held(redis_client, "repo:a/b", ttl_s=30, wait_s=0):
            pass
    with locks.slot(redis_client, "repo:a/b", limit=1, ttl_s=30), \
            locks.held(redis_client, "repo:a/b", ttl_s=30, wait_s=0):
        pass


class Overlap(StubEngine):
    """Records how many jobs are inside ``locate`` at once, per repository and in total."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self.now: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()

    def locate(self, index, issue, settings):  # type: ignore[no-untyped-def]
        repo = str(index.git_dir).split("mirrors/")[1].removesuffix(".git")
        with self._lock:
            for key in (repo, "installation"):
                self.now[key] += 1
                self.peak[key] = max(self.peak[key], self.now[key])
        time.sleep(0.3)  # long enough for the other threads to try
        with self._lock:
            for key in (repo, "installation"):
                self.now[key] -= 1
        return super().locate(index, issue, settings)


def test_concurrency_limits_per_installation_and_per_repository(
    settings: AppSettings, redis_client: redis.Redis, fake: FakeGitHub, repo_path: Path
) -> None:
    # Three repositories of one installation, two issues each: without the repository limit
    # two jobs of a repository would overlap; without the installation limit, three.
    repos = [REPO, "acme/other", "acme/third"]
    for name in repos[1:]:
        copy = repo_path.parent / name.split("/")[1]
        shutil.copytree(repo_path, copy)
        fake.add_repo(name, copy)
    s = settings.model_copy(update={"max_jobs_per_installation": 2, "max_jobs_per_repo": 1})
    engine = Overlap()
    policy = RetryPolicy(s, sleep=lambda _: None)
    tokens = InstallationTokens(s, TokenCache(redis_client, s), policy)
    deps = Deps(settings=s, redis=redis_client,
                github=lambda i: GitHubClient(s, tokens, i, policy),
                mirrors=Mirrors(s), engine=engine, policy=policy)
    jobs = [IssueJob(INSTALLATION, repo, n, f"d-{repo}-{n}", "issues.opened")
            for repo in repos for n in (1, 2)]
    for j in jobs:
        fake.add_issue(j.repo, j.issue_number, "Header parsing loses values",
                       "parse_header splits at every colon so the port of Host is lost")
    waits: Counter[str] = Counter()
    statuses: list[str] = []

    def worker(j: IssueJob) -> None:
        for _ in range(400):  # a job waits its turn, as the task's deferral would
            try:
                statuses.append(run_job(j, deps).status)
                return
            except NotYourTurn as exc:
                waits[type(exc).__name__] += 1
                time.sleep(0.05)
        statuses.append("gave up")

    threads = [threading.Thread(target=worker, args=(j,)) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(statuses) == ["created"] * len(jobs)
    assert all(engine.peak[repo] == 1 for repo in repos), engine.peak
    assert engine.peak["installation"] <= 2, engine.peak
    assert waits["Throttled"] > 0
    for j in jobs:
        assert len(fake.bot_comments(j.repo, j.issue_number)) == 1
