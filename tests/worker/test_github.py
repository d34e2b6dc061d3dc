from __future__ import annotations

import pytest
import redis

from worker.errors import GitHubRefused, GitHubUnavailable, RateLimited
from worker.fake_github import FakeGitHub
from worker.github import GitHubClient, InstallationTokens, RetryPolicy, TokenCache
from worker.settings import AppSettings

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
    from worker.devstack import app_key_pair

    other = settings.model_copy(update={"github_private_key": __import__("pydantic").SecretStr(app_key_pair()[0])})
    with pytest.raises(GitHubRefused) as err, client(other, redis_client):
        pass
    assert err.value.status == 401
