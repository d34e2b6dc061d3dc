from __future__ import annotations

import pytest
import redis

import worker.tasks as tasks
from worker.errors import GitHubRefused, GitHubUnavailable, RateLimited
from worker.pipeline import Outcome
from worker.settings import AppSettings


def test_retry_delay_is_exponential_with_jitter_and_capped() -> None:
    s = AppSettings(_env_file=None, retry_backoff_s=10, retry_backoff_max_s=100)
    for retries in range(4):
        d = tasks.retry_delay(GitHubUnavailable("x"), retries, s)
        assert 10 * 2**retries / 2 <= d <= min(10 * 2**retries, 100)
    assert tasks.retry_delay(GitHubUnavailable("x"), 10, s) <= 100


def test_retry_delay_honours_rate_limits() -> None:
    s = AppSettings(_env_file=None)
    assert 120 < tasks.retry_delay(RateLimited("x", 120), 0, s) <= 125


def test_a_message_may_start_a_capped_number_of_times(redis_client: redis.Redis) -> None:
    assert tasks.first_starts(redis_client, "t1", 0, cap=2)
    assert tasks.first_starts(redis_client, "t1", 0, cap=2)
    assert not tasks.first_starts(redis_client, "t1", 0, cap=2)  # lost twice: dropped
    assert tasks.first_starts(redis_client, "t1", 1, cap=2)  # a retry is a new start


@pytest.fixture
def fake_run(monkeypatch: pytest.MonkeyPatch, settings: AppSettings, redis_client: redis.Redis):
    deps = type("D", (), {"settings": settings.model_copy(update={"max_retries": 2}),
                          "redis": redis_client})()
    monkeypatch.setattr(tasks, "deps", lambda: deps)
    outcomes: list[object] = []

    def run(job: object, d: object) -> Outcome:
        result = outcomes.pop(0)
        if isinstance(result, Exception):
            raise result
        return result  # type: ignore[return-value]

    monkeypatch.setattr(tasks, "run_job", run)
    return outcomes


KW = {"installation_id": 7, "repo": "acme/httpkit", "issue_number": 1, "delivery_id": "d-9",
      "trigger": "issues.opened"}


def test_task_returns_the_outcome(fake_run: list[object]) -> None:
    fake_run.append(Outcome(status="created", comment_id=5))
    assert tasks.localize_issue.apply(kwargs=KW).get()["comment_id"] == 5


def test_transient_errors_are_retried(fake_run: list[object]) -> None:
    # Eagerly applied, Celery runs the retry at once (no countdown): the second try succeeds.
    fake_run.extend([GitHubUnavailable("502"), Outcome(status="created", comment_id=6)])
    assert tasks.localize_issue.apply(kwargs=KW).get()["comment_id"] == 6
    assert fake_run == []


def test_permanent_errors_end_the_job_without_retry(fake_run: list[object]) -> None:
    fake_run.append(GitHubRefused("gone", 404))
    out = tasks.localize_issue.apply(kwargs=KW).get()
    assert out["status"] == "failed" and "GitHubRefused" in out["reason"]


def test_transient_errors_stop_after_max_retries(fake_run: list[object]) -> None:
    fake_run.append(GitHubUnavailable("502"))
    out = tasks.localize_issue.apply(kwargs=KW, retries=2).get()
    assert out["status"] == "failed"


def test_task_is_configured_for_reliability() -> None:
    from worker.celery_app import app

    task = app.tasks["spider.localize_issue"]
    assert task.acks_late and task.reject_on_worker_lost
    conf = app.conf
    assert conf.worker_prefetch_multiplier == 1
    assert conf.task_soft_time_limit < conf.task_time_limit
    assert conf.broker_transport_options["visibility_timeout"] > conf.task_time_limit
