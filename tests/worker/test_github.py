from __future__ import annotations

import pytest
import redis

from contract.settings import AppSettings
from spider_devkit.fake_github import FakeGitHub
from worker.errors import GitHubRefused, GitHubUnavailable, RateLimited
from worker.github import GitHubClient, InstallationTokens, RetryPolicy, TokenCache

from .conftest import INSTALLATION, REPO

OWNER, NAME = REPO.split("/")


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def client(settings: AppSettings, redis_client: redis.Redis, sleeps: Sleeps | None = None) -> GitHubClient:
    policy = RetryPolicy(settings, sleep=sleeps if sleeps is not None else Sleeps())
    tokens = InstallationTokens(settings, TokenCache(redis_client, settings), policy)
    return GitHubClient(settings, tokens, INSTALLATION, policy)


def test_token_is_minted_once_and_shared_through_redis(
    settings: AppSettings, redis_client: redis.Redis, fake: FakeGitHub
) -> None:
    with client(settings, redis_client) as a:
        a.repository(OWNER, NAME)
        token = a.token
    with client(settings, redis_client) as b:  # another worker process, same Redis
        b.repository(OWNER, NAME)
        assert b.token == token
    assert len(fake.requests("POST", "/access_tokens")) == 1
    raw = b"".join(redis_client.get(k) or b"" for k in redis_client.keys("spider:ghtoken:*"))
    assert raw and token.encode() not in raw  # cached encrypted
    assert 0 < redis_client.ttl(redis_client.keys("spider:ghtoken:*")[0]) <= 3600 - 300


def test_revoked_token_is_replaced(settings: AppSettings, redis_client: redis.Redis, fake: FakeGitHub) -> None:
    with client(settings, redis_client) as gh:
        fake.inject("GET", "/repos/acme/httpkit$", 401, body={"message": "Bad credentials"})
        assert gh.repository(OWNER, NAME).default_branch == "main"
    assert len(fake.requests("POST", "/access_tokens")) == 2


def test_server_errors_back_off_then_succeed(settings: AppSettings, redis_client: redis.Redis,
                                             fake: FakeGitHub) -> None:
    fake.inject("GET", "/repos/acme/httpkit$", 502, times=2)
    sleeps = Sleeps()
    with client(settings, redis_client, sleeps) as gh:
        assert gh.repository(OWNER, NAME).full_name == REPO
    assert len(sleeps) == 2 and all(0 <= s <= 0.02 for s in sleeps)


def test_server_errors_give_up_as_transient(settings: AppSettings, redis_client: redis.Redis,
                                            fake: FakeGitHub) -> None:
    fake.inject("GET", "/repos/acme/httpkit$", 500, times=10)
    with client(settings, redis_client) as gh, pytest.raises(GitHubUnavailable):
        gh.repository(OWNER, NAME)
    assert len(fake.requests("GET", "/repos/acme/httpkit")) == settings.github_attempts


def test_secondary_rate_limit_waits_retry_after(settings: AppSettings, redis_client: redis.Redis,
                                                fake: FakeGitHub) -> None:
    fake.inject("GET", "/repos/acme/httpkit$", 403, headers={"retry-after": "3"},
                body={"message": "You have exceeded a secondary rate limit."})
    sleeps = Sleeps()
    with client(settings, redis_client, sleeps) as gh:
        gh.repository(OWNER, NAME)
    assert len(sleeps) == 1 and 3 <= sleeps[0] <= 4


def test_primary_rate_limit_uses_the_reset_time(settings: AppSettings, redis_client: redis.Redis,
                                                fake: FakeGitHub) -> None:
    import time

    reset = int(time.time()) + 2
    fake.inject("GET", "/repos/acme/httpkit$", 403,
                headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
                body={"message": "API rate limit exceeded"})
    sleeps = Sleeps()
    with client(settings, redis_client, sleeps) as gh:
        gh.repository(OWNER, NAME)
    assert len(sleeps) == 1 and 0 <= sleeps[0] <= 4


def test_long_rate_limit_is_left_to_the_task(settings: AppSettings, redis_client: redis.Redis,
                                             fake: FakeGitHub) -> None:
    fake.inject("GET", "/repos/acme/httpkit$", 429, headers={"retry-after": "600"})
    with client(settings, redis_client) as gh, pytest.raises(RateLimited) as err:
        gh.repository(OWNER, NAME)
    assert err.value.retry_after == 600


def test_client_errors_are_permanent(settings: AppSettings, redis_client: redis.Redis,
                                     fake: FakeGitHub) -> None:
    with client(settings, redis_client) as gh:
        with pytest.raises(GitHubRefused) as err:
            gh.issue(OWNER, NAME, 999)
        assert err.value.status == 404
        fake.inject("GET", "/repos/acme/httpkit$", 403, body={"message": "Resource not accessible"})
        with pytest.raises(GitHubRefused):
            gh.repository(OWNER, NAME)


def test_comments_paginate(settings: AppSettings, redis_client: redis.Redis, fake: FakeGitHub) -> None:
    fake.add_issue(REPO, 5, "t", "b")
    for i in range(130):
        fake.add_comment(REPO, 5, f"comment {i}")
    with client(settings, redis_client) as gh:
        bodies = [c.body for c in gh.comments(OWNER, NAME, 5)]
    assert bodies == [f"comment {i}" for i in range(130)]


def test_config_file_contents(settings: AppSettings, redis_client: redis.Redis, fake: FakeGitHub) -> None:
    with client(settings, redis_client) as gh:
        assert gh.file_text(OWNER, NAME, ".github/spider.yml", "main") is None
        assert "def parse_header" in (gh.file_text(OWNER, NAME, "httpkit/headers.py", "main") or "")


def test_bad_jwt_is_refused(settings: AppSettings, redis_client: redis.Redis) -> None:
    from spider_devkit.devstack import app_key_pair

    other = settings.model_copy(update={"github_private_key": __import__("pydantic").SecretStr(app_key_pair()[0])})
    with pytest.raises(GitHubRefused) as err, client(other, redis_client):
        pass
    assert err.value.status == 401


def test_429_without_retry_after_is_a_rate_limit(settings: AppSettings, redis_client: redis.Redis,
                                                 fake: FakeGitHub) -> None:
    fake.inject("GET", "/repos/acme/httpkit$", 429, body={"message": "Too Many Requests"})
    with client(settings, redis_client) as gh, pytest.raises(RateLimited) as err:
        gh.repository(OWNER, NAME)
    assert err.value.retry_after == 60  # GitHub's advice; longer than the inline wait here


def test_retry_after_as_an_http_date_is_understood(settings: AppSettings, redis_client: redis.Redis,
                                                   fake: FakeGitHub) -> None:
    from email.utils import formatdate

    fake.inject("GET", "/repos/acme/httpkit$", 429,
                headers={"retry-after": formatdate(__import__("time").time() + 3, usegmt=True)})
    sleeps = Sleeps()
    with client(settings, redis_client, sleeps) as gh:
        assert gh.repository(OWNER, NAME).full_name == REPO
    assert len(sleeps) == 1 and 1 <= sleeps[0] <= 5


def test_retry_after_seconds() -> None:
    from worker.github import retry_after_seconds

    assert retry_after_seconds("7") == "7"
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:30 GMT", now=1445412480) == "30"
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412600) == "0"
    assert retry_after_seconds("soon") == "60" and retry_after_seconds("-5") == "60"


def test_timeouts_are_retried_then_transient(settings: AppSettings, redis_client: redis.Redis,
                                             fake: FakeGitHub) -> None:
    s = settings.model_copy(update={"github_timeout_s": 0.3})
    fake.inject("GET", "/repos/acme/httpkit$", None, delay_s=1.0, times=1)
    with client(s, redis_client) as gh:  # one timeout, then an answer
        assert gh.repository(OWNER, NAME).full_name == REPO
    fake.inject("GET", "/repos/acme/httpkit$", None, delay_s=1.0, times=s.github_attempts)
    with client(s, redis_client) as gh, pytest.raises(GitHubUnavailable, match="ReadTimeout"):
        gh.repository(OWNER, NAME)


def test_every_call_is_counted_by_status(settings: AppSettings, redis_client: redis.Redis,
                                         fake: FakeGitHub) -> None:
    from contract.metrics import METRICS_KEY, RECORDER

    RECORDER.flush(redis_client)  # what earlier tests in this process recorded
    redis_client.delete(METRICS_KEY)
    fake.inject("GET", "/repos/acme/httpkit$", 502)
    with client(settings, redis_client) as gh:
        gh.repository(OWNER, NAME)
        with pytest.raises(GitHubRefused):
            gh.issue(OWNER, NAME, 999)
    RECORDER.flush(redis_client)
    raw = {k.decode(): int(float(v)) for k, v in redis_client.hgetall(METRICS_KEY).items()}
    calls = {k.split("|")[2]: v for k, v in raw.items() if k.startswith("c|spider_github_calls|")}
    assert calls == {"201": 1, "502": 1, "200": 1, "404": 1}  # token, 502, retry, missing issue


def test_the_package_re_exports_its_public_names() -> None:
    """``worker.github`` is split by concept; the names other modules import stay one
    import away, and ``__all__`` lists exactly what the package exposes."""
    import types

    import worker.github as package

    public = {n for n, v in vars(package).items()
              if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert set(package.__all__) == public
    for name in package.__all__:
        assert getattr(package, name) is not None
