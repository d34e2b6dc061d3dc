"""Worker metrics: buffered per process, added up in Redis, served by the bot as Prometheus."""

from __future__ import annotations

import redis
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from redis.backoff import NoBackoff
from redis.retry import Retry

from contract.metrics import METRICS_KEY, Recorder, RedisCollector


def dead_redis() -> redis.Redis:
    """A client of nothing, that fails at once (no retries)."""
    return redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2,
                       retry=Retry(NoBackoff(), 0))


def scrape(client: redis.Redis) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(RedisCollector(client))
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_two_processes_add_up(redis_client: redis.Redis) -> None:
    a, b = Recorder(), Recorder()
    a.count("spider_jobs", "created")
    a.observe("spider_index_seconds", 0.3)
    b.count("spider_jobs", "created")
    b.count("spider_jobs", "failed")
    b.count("spider_github_calls", "502")
    b.observe("spider_index_seconds", 42.0)
    b.observe("spider_index_seconds", 5000.0)  # past the last bucket
    a.flush(redis_client)
    b.flush(redis_client)
    got = scrape(redis_client)
    assert got[("spider_jobs_total", (("outcome", "created"),))] == 2
    assert got[("spider_jobs_total", (("outcome", "failed"),))] == 1
    assert got[("spider_github_calls_total", (("status", "502"),))] == 1
    assert got[("spider_index_seconds_bucket", (("le", "0.5"),))] == 1
    assert got[("spider_index_seconds_bucket", (("le", "60.0"),))] == 2
    assert got[("spider_index_seconds_bucket", (("le", "900.0"),))] == 2
    assert got[("spider_index_seconds_bucket", (("le", "+Inf"),))] == 3
    assert got[("spider_index_seconds_count", ())] == 3
    assert abs(got[("spider_index_seconds_sum", ())] - 5042.3) < 1e-6
    assert got[("spider_query_seconds_count", ())] == 0  # every family is always served


def test_a_flush_clears_the_buffer_and_survives_redis_down(redis_client: redis.Redis) -> None:
    r = Recorder()
    r.count("spider_jobs", "created")
    r.flush(dead_redis())  # dropped
    r.flush(redis_client)
    assert redis_client.hgetall(METRICS_KEY) == {}
    r.count("spider_jobs", "skipped")
    r.flush(redis_client)
    r.flush(redis_client)  # nothing twice
    assert redis_client.hgetall(METRICS_KEY) == {b"c|spider_jobs|skipped": b"1"}


def test_scraping_with_redis_down_serves_nothing_rather_than_failing() -> None:
    registry = CollectorRegistry()
    registry.register(RedisCollector(dead_redis()))
    assert generate_latest(registry) == b""
