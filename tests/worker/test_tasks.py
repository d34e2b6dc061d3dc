from __future__ import annotations

import pytest
import redis

import worker.task_runner as runner
import worker.tasks as tasks
from contract.settings import AppSettings
from worker.errors import GitHubRefused, GitHubUnavailable, RateLimited
from worker.outcome import Outcome


def test_retry_delay_is_exponential_with_jitter_and_capped() -> None:
    s = AppSettings(_env_file=None, retry_backoff_s=10, retry_backoff_max_s=100)
    for retries in range(4):
        d = runner.retry_delay(GitHubUnavailable("x"), retries, s)
        assert 10 * 2**retries / 2 <= d <= min(10 * 2**retries, 100)
    assert runner.retry_delay(GitHubUnavailable("x"), 10, s) <= 100


def test_retry_delay_honours_rate_limits() -> None:
    s = AppSettings(_env_file=None)
    assert 120 < runner.retry_delay(RateLimited("x", 120), 0, s) <= 125


def test_a_message_may_start_a_capped_number_of_times(redis_client: redis.Redis) -> None:
    assert runner.first_starts(redis_client, "t1", 0, cap=2)
    assert runner.first_starts(redis_client, "t1", 0, cap=2)
    assert not runner.first_starts(redis_client, "t1", 0, cap=2)  # lost twice: dropped
    assert runner.first_starts(redis_client, "t1", 1, cap=2)  # a retry is a new start


@pytest.fixture
def fake_run(monkeypatch: pytest.MonkeyPatch, settings: AppSettings, redis_client: redis.Redis):
    deps = type("D", (), {"settings": settings.model_copy(update={"max_retries": 2}),
                          "redis": redis_client})()
    monkeypatch.setattr(tasks, "deps", lambda: deps)
    outcomes: list[object] = []

    def run(job: object, d: object, **_: object) -> Outcome:
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
    # max_retries is 2: three failing tries, then the job fails; a fourth try would succeed,
    # so a cap not enforced (or off by one) shows as "created" and an emptied list.
    success = Outcome(status="created", comment_id=9)
    fake_run.extend([GitHubUnavailable("502"), GitHubUnavailable("503"),
                     GitHubUnavailable("504"), success])
    out = tasks.localize_issue.apply(kwargs=KW).get()
    assert out["status"] == "failed" and "GitHubUnavailable: 504" in out["reason"]
    assert fake_run == [success]  # exactly 1 + max_retries tries


def test_task_is_configured_for_reliability() -> None:
    from worker.celery_app import app

    task = app.tasks["spider.localize_issue"]
    assert task.acks_late and task.reject_on_worker_lost
    conf = app.conf
    assert conf.worker_prefetch_multiplier == 1
    assert conf.task_soft_time_limit < conf.task_time_limit
    assert conf.broker_transport_options["visibility_timeout"] > conf.task_time_limit


def test_waiting_for_a_slot_or_lock_uses_no_retry(fake_run: list[object]) -> None:
    from worker.errors import Busy, Throttled

    # max_retries is 2: two failures are allowed, and the waits do not count against them
    fake_run.extend([Busy("issue lock"), Throttled("repo slots"), GitHubUnavailable("502"),
                     Busy("repo lock"), GitHubUnavailable("503"), Outcome(status="created",
                                                                           comment_id=8)])
    assert tasks.localize_issue.apply(kwargs=KW).get()["comment_id"] == 8
    assert fake_run == []


def test_a_delay_republishes_with_its_kwargs_and_uses_no_retry(
        fake_run: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    from worker.errors import Delayed

    seen: list[dict[str, object]] = []

    def run(job: object, d: object, **kw: object) -> Outcome:
        seen.append(kw)
        result = fake_run.pop(0)
        if isinstance(result, Exception):
            raise result
        return result  # type: ignore[return-value]

    monkeypatch.setattr(tasks, "run_job", run)
    waited = {"labels": ["bug"], "assignees": [], "due": 1.0}
    # max_retries is 2: three legs of a wait and two failures still end in a comment
    fake_run.extend([Delayed(60, {"waited": waited}), Delayed(60, {"waited": waited}),
                     GitHubUnavailable("502"), Delayed(60, {"waited": waited}),
                     GitHubUnavailable("503"), Outcome(status="created", comment_id=9)])
    assert tasks.localize_issue.apply(kwargs=KW).get()["comment_id"] == 9
    assert seen[0]["waited"] is None and all(kw["waited"] == waited for kw in seen[1:])


def test_waiting_is_bounded(fake_run: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    from worker.errors import Throttled

    d = tasks.deps()
    monkeypatch.setattr(d, "settings", d.settings.model_copy(update={"max_deferrals": 3}))
    fake_run.extend([Throttled("installation slots")] * 4)
    out = tasks.localize_issue.apply(kwargs=KW).get()
    assert out["status"] == "failed" and "waited 3 times" in out["reason"]
    assert fake_run == []


def test_defer_delay_grows_is_capped_and_spread() -> None:
    s = AppSettings(_env_file=None, defer_delay_s=10, defer_delay_max_s=60)
    for n, base in [(0, 10), (1, 15), (2, 22.5), (10, 60)]:
        for _ in range(20):
            assert base <= runner.defer_delay(n, s) < 2 * base


def test_outcomes_and_durations_reach_the_metrics(fake_run: list[object],
                                                  redis_client: redis.Redis) -> None:
    from contract.metrics import METRICS_KEY

    fake_run.extend([GitHubUnavailable("502"), Outcome(status="created", comment_id=9)])
    tasks.localize_issue.apply(kwargs=KW).get()
    raw = {k.decode(): v.decode() for k, v in redis_client.hgetall(METRICS_KEY).items()}
    assert raw["c|spider_jobs|retried"] == "1" and raw["c|spider_jobs|created"] == "1"
    assert raw["h|spider_job_seconds|count"] == "2"


def test_visibility_timeout_must_outlast_every_legitimate_wait() -> None:
    from contract.settings import SettingsError

    base = {"_env_file": None, "github_app_id": 1, "github_private_key": _pem()}
    ok = AppSettings(**base, task_soft_time_limit_s=20, task_time_limit_s=30,
                     retry_backoff_max_s=5, defer_delay_max_s=5, broker_visibility_timeout_s=40)
    ok.check_worker()
    assert ok.visibility_timeout_s == 40
    for too_short in (30, 10):
        bad = ok.model_copy(update={"broker_visibility_timeout_s": too_short})
        with pytest.raises(SettingsError, match="VISIBILITY_TIMEOUT"):
            bad.check_worker()
    default = AppSettings(_env_file=None)
    assert default.visibility_timeout_s > default.longest_wait_s >= default.task_time_limit_s


def _pem() -> str:
    from spider_devkit.devstack import app_key_pair

    return app_key_pair()[0]


def test_a_retry_redis_cannot_take_requeues_the_job_instead_of_dropping_it() -> None:
    from celery.exceptions import Reject

    class BrokerAway:
        """Celery's Task.retry when publishing fails: Reject *without* requeue."""

        def retry(self, **_: object) -> None:
            raise Reject(ConnectionError("redis away"), requeue=False)

    s = AppSettings(_env_file=None, max_retries=3)
    with pytest.raises(Reject) as err:
        runner._retry_or_fail(BrokerAway(), redis.ConnectionError("x"), 0, s, transient=True)
    assert err.value.requeue is True
    from contract.jobs import IssueJob
    from worker.errors import Busy

    with pytest.raises(Reject) as err:
        runner._defer(BrokerAway(), Busy("lock"), IssueJob(**KW), 0, s)
    assert err.value.requeue is True


@pytest.fixture
def other_tasks(monkeypatch: pytest.MonkeyPatch, settings: AppSettings,
                redis_client: redis.Redis) -> list[object]:
    """The index and scoring tasks with their work replaced by a list of results."""
    import worker.indexing
    import worker.scoring

    deps = type("D", (), {"settings": settings.model_copy(update={"max_deferrals": 1,
                                                                  "fix_max_retries": 1}),
                          "redis": redis_client, "store": None})()
    monkeypatch.setattr(tasks, "deps", lambda: deps)
    outcomes: list[object] = []

    def work(*_: object) -> Outcome:
        result = outcomes.pop(0)
        if isinstance(result, BaseException):
            raise result
        return result  # type: ignore[return-value]

    monkeypatch.setattr(worker.indexing, "run_index", work)
    monkeypatch.setattr(worker.scoring, "score_fix", work)
    return outcomes


INDEX_KW = {"installation_id": 7, "repo": "acme/httpkit", "delivery_id": "d-i"}
FIX_KW = {"installation_id": 7, "repo": "acme/httpkit", "delivery_id": "d-f", "pull_number": 3}


def test_an_index_job_waits_its_turn_then_gives_up(other_tasks: list[object],
                                                   redis_client: redis.Redis) -> None:
    from contract.metrics import METRICS_KEY
    from worker.errors import Busy

    other_tasks.extend([Busy("repo lock"), Busy("repo lock")])
    out = tasks.index_repository.apply(kwargs=INDEX_KW).get()
    assert out["status"] == "skipped" and out["reason"].startswith("waited 1 times")
    raw = {k.decode(): v.decode() for k, v in redis_client.hgetall(METRICS_KEY).items()}
    assert raw["c|spider_index_jobs|deferred"] == "1" and raw["c|spider_index_jobs|failed"] == "1"


def test_scoring_retries_a_held_lock_but_not_a_run_cut_short(other_tasks: list[object]) -> None:
    from celery.exceptions import SoftTimeLimitExceeded

    from worker.errors import Busy

    other_tasks.extend([Busy("repo lock"), Outcome(status="scored", fixes=[{"issue": 1}])])
    assert tasks.score_fix.apply(kwargs=FIX_KW).get() == {"status": "scored", "reason": "",
                                                          "fixes": [{"issue": 1}]}
    other_tasks.extend([Busy("repo lock"), Busy("repo lock")])  # fix_max_retries=1
    out = tasks.score_fix.apply(kwargs={**FIX_KW, "delivery_id": "d-g"}).get()
    assert out["status"] == "failed" and "Busy" in out["reason"]
    other_tasks.append(SoftTimeLimitExceeded())
    out = tasks.score_fix.apply(kwargs={**FIX_KW, "delivery_id": "d-h"}).get()
    assert out["status"] == "failed" and other_tasks == []
