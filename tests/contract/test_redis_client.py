"""The one Redis client factory: plain URLs, Sentinel URLs, and what Celery is told."""

from __future__ import annotations

import pytest
from redis.sentinel import SentinelConnectionPool

from contract.broker import celery_conf
from contract.redis_client import is_sentinel, parse_sentinel_url, redis_client
from contract.settings import AppSettings

SENTINELS = "sentinel://:pw@10.0.0.1:26379;sentinel://10.0.0.2:26380/2;sentinel://h3"


def test_sentinel_urls_are_parsed_in_kombus_form() -> None:
    conf = parse_sentinel_url(SENTINELS)
    assert conf.hosts == (("10.0.0.1", 26379), ("10.0.0.2", 26380), ("h3", 26379))
    assert (conf.db, conf.password) == (2, "pw")
    assert is_sentinel(SENTINELS) and not is_sentinel("redis://h:6379/0")
    for bad in ("sentinel://", "sentinel://h:1;redis://h:2", ""):
        with pytest.raises(ValueError):
            parse_sentinel_url(bad)


def test_a_sentinel_url_gives_a_master_client_and_celery_the_master_name() -> None:
    s = AppSettings(redis_url=SENTINELS, redis_sentinel_master="spider")
    client = redis_client(s, timeout_s=2)
    pool = client.connection_pool
    assert isinstance(pool, SentinelConnectionPool)
    assert pool.service_name == "spider" and pool.connection_kwargs["db"] == 2
    conf = celery_conf(s)
    assert conf["broker_url"] == conf["result_backend"] == SENTINELS
    assert conf["broker_transport_options"]["master_name"] == "spider"
    assert conf["broker_transport_options"]["visibility_timeout"] == s.visibility_timeout_s
    assert conf["result_backend_transport_options"]["master_name"] == "spider"


def test_a_plain_url_gives_a_plain_client_and_no_sentinel_options(redis_url: str) -> None:
    s = AppSettings(redis_url=redis_url)
    client = redis_client(s, timeout_s=2)
    assert client.ping()
    assert not isinstance(client.connection_pool, SentinelConnectionPool)
    conf = celery_conf(s)
    assert "master_name" not in conf["broker_transport_options"]
    assert conf["result_backend_transport_options"] == {}
