"""Fixtures of the bot tests: a private Redis, settings, and the app with a recording queue."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from bot.app import build_state, create_app
from contract.jobs import IssueJob
from contract.settings import AppSettings
from tests.worker import helpers

SECRET = "test-webhook-secret-0123456789"

redis_url = helpers.redis_url  # a private redis-server for the session
redis_client = helpers.redis_client  # emptied before each test


@pytest.fixture
def settings(redis_url: str, tmp_path: Path) -> AppSettings:
    return AppSettings(redis_url=redis_url, webhook_secret=SECRET,
                       webhook_max_body_bytes=64 * 1024, _env_file=None)


class RecordingQueue:
    """Stands in for Celery: records jobs, or fails when told to."""

    def __init__(self) -> None:
        self.jobs: list[IssueJob] = []
        self.fail: Exception | None = None

    def __call__(self, job: IssueJob) -> str:
        if self.fail is not None:
            raise self.fail
        self.jobs.append(job)
        return job.delivery_id


@pytest.fixture
def queue() -> RecordingQueue:
    return RecordingQueue()


@pytest.fixture
def client(settings: AppSettings, redis_client: redis.Redis, queue: RecordingQueue) -> Iterator[TestClient]:
    state = build_state(settings, redis_client=redis_client, enqueue=queue)
    with TestClient(create_app(state)) as c:
        yield c
