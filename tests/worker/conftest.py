"""Fixtures of the worker tests: a private Redis, an app key, a fake GitHub, a tiny repo."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from contract.settings import AppSettings
from spider.settings import EngineSettings
from spider_devkit.devstack import app_key_pair
from spider_devkit.fake_github import FakeGitHub
from tests.worker import helpers
from tests.worker.helpers import make_repo

APP_ID = 4242
INSTALLATION = 7
REPO = "acme/httpkit"

redis_url = helpers.redis_url  # a private redis-server for the session
redis_client = helpers.redis_client  # emptied before each test


@pytest.fixture(scope="session")
def app_keys() -> tuple[str, str]:
    return app_key_pair()


@pytest.fixture
def repo_path(tmp_path: Path) -> Path:
    path = tmp_path / "origin" / REPO
    make_repo(path)
    return path


@pytest.fixture
def fake(app_keys: tuple[str, str], repo_path: Path) -> Iterator[FakeGitHub]:
    gh = FakeGitHub(app_id=APP_ID, public_key_pem=app_keys[1], installation_id=INSTALLATION)
    gh.add_repo(REPO, repo_path)
    with gh.serve():
        yield gh


@pytest.fixture
def settings(fake: FakeGitHub, app_keys: tuple[str, str], redis_url: str, tmp_path: Path) -> AppSettings:
    return AppSettings(
        _env_file=None,
        redis_url=redis_url,
        github_app_id=APP_ID,
        github_private_key=app_keys[0],
        github_api_url=fake.base_url,
        git_url_template=str(tmp_path / "origin" / "{owner}" / "{name}"),
        github_backoff_s=0.01,
        github_max_inline_wait_s=5,
        engine=EngineSettings(cache_dir=tmp_path / "cache", selector="none", k=3),
    )
