"""Helpers shared by the worker and end-to-end tests: tiny git repositories, a stub engine."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from spider.models import Hit, Issue, LLMRun, Localization, PartialIndex, Reason, RunSettings
from spider.settings import EngineSettings
from spider_devkit.devstack import RedisServer
from worker.mirror import Checkout


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A private redis-server for the session (import into a conftest to use)."""
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server.url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client of that Redis, emptied before each test."""
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    yield client
    client.close()


GIT_ID = ["-c", "user.email=test@example.com", "-c", "user.name=Test"]

TINY_REPO = {
    "httpkit/__init__.py": "",
    "httpkit/headers.py": (
        "def parse_header(line):\n"
        '    """Split one HTTP header line into a lower-case name and a value."""\n'
        '    name, _, value = line.partition(":")\n'
        "    return name.strip().lower(), value.strip()\n"
        "\n\n"
        "def format_header(name, value):\n"
        '    return f"{name.title()}: {value}"\n'
    ),
    "httpkit/session.py": (
        "from httpkit.headers import parse_header\n"
        "\n\n"
        "class Session:\n"
        "    def send(self, request):\n"
        "        response = self.adapter(request)\n"
        "        return self.read_headers(response)\n"
        "\n"
        "    def adapter(self, request):\n"
        "        return request\n"
        "\n"
        "    def read_headers(self, raw):\n"
        "        return dict(parse_header(line) for line in raw.splitlines() if line)\n"
    ),
    "httpkit/cookies.py": (
        "def parse_cookie(text):\n"
        '    return dict(part.split("=", 1) for part in text.split(";") if "=" in part)\n'
        "\n\n"
        "def cookie_header(jar):\n"
        '    return "; ".join(f"{k}={v}" for k, v in jar.items())\n'
    ),
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def make_repo(path: Path, files: dict[str, str] | None = None, *, config: str | None = None,
              branch: str = "main") -> str:
    """A git repository with ``files`` (and ``.github/spider.yml``) committed; returns the sha."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    write(path, files if files is not None else TINY_REPO, config=config)
    return commit(path, "initial")


def write(path: Path, files: dict[str, str], *, config: str | None = None) -> None:
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    if config is not None:
        (path / ".github").mkdir(exist_ok=True)
        (path / ".github" / "spider.yml").write_text(config)


def commit(path: Path, message: str) -> str:
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message)
    return git(path, "rev-parse", "HEAD")


class StubEngine:
    """Returns fixed hits from the tiny repository; records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.confidence: float | None = None  # what the engine estimates for the first hit
        self.cold = False  # index_for_issue finds most vectors missing (the cold path)
        self.indexed: list[tuple[str, EngineSettings]] = []  # full index builds (sha, settings)
        self.llm_failure: str | None = None  # an LLM pass stops with this (None: it finishes)

    def source_files(self, checkout: Checkout, settings: EngineSettings) -> int:
        return 4

    def index(self, checkout: Checkout, settings: EngineSettings) -> Checkout:
        self.indexed.append((checkout.sha, settings))
        return checkout

    def index_for_issue(self, checkout: Checkout, settings: EngineSettings, *,
                        embed_max: int) -> tuple[Checkout, bool]:
        return checkout, self.cold

    def locate(self, index: Checkout, issue: Issue, settings: EngineSettings) -> Localization:
        self.calls.append({"issue": issue, "k": settings.k, "edges": settings.edges,
                           "selector": settings.selector, "include": settings.include})
        hits = [
            Hit("httpkit/headers.py:parse_header", "httpkit/headers.py", "parse_header", 1, 4, 0.9,
                [Reason("hybrid", rank=1, score=0.9, detail="dense 1, BM25 2")]),
            Hit("httpkit/session.py:Session.read_headers", "httpkit/session.py",
                "Session.read_headers", 12, 13, 0.5,
                [Reason("expand", centre="httpkit/headers.py:parse_header", edge="invokes", hops=1),
                 Reason("hybrid", rank=5)]),
            Hit("httpkit/session.py:Session.send", "httpkit/session.py", "Session.send", 5, 7, 0.4,
                [Reason("hybrid", rank=2)]),
        ]
        partial = (PartialIndex(embedded_functions=settings.cold_pool, functions=15461)
                   if settings.cold_pool > 0 else None)
        self.calls[-1]["llm_roles"] = settings.active_llm_roles
        llm = None
        if settings.active_llm_roles:  # as the engine records an LLM pass that read 3 or none
            read = 0 if self.llm_failure else len(hits[: settings.k])
            if read:  # the reader raised the last one to the top
                hits = [hits[2], hits[0], hits[1]]
                hits[0].reasons.insert(0, Reason("read", rank=3, detail=settings.llm_model))
            llm = LLMRun("llm", settings.llm_model, settings.active_llm_roles, "pointwise",
                         read=read, raised=1 if read else 0, failure=self.llm_failure)
        return Localization(index.sha, hits[: settings.k],
                            RunSettings.of(settings, selector=settings.selector, partial=partial),
                            {"first_stage": 0.01, "expansion": 0.0, "total": 0.01},
                            confidence=self.confidence, llm=llm)
