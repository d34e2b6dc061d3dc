"""Worker metrics, added up in Redis and served in Prometheus format by the bot's ``/metrics``.

Why Redis rather than an endpoint per worker: workers are Celery prefork children spread
over machines, short-lived (``max_tasks_per_child``) and without a port of their own. Each
process buffers its observations in memory and adds them to one Redis hash in one round
trip when a job ends; the bot, already the HTTP edge and already connected to the same
Redis, turns that hash into Prometheus counters and histograms. One scrape of any bot
shows the whole fleet, and nothing is lost when a worker process is recycled. A flush that
fails (Redis away) drops that job's observations: metrics never fail a job.

Import-light (redis and prometheus_client only): the bot serves it, the worker records it.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping

import redis
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

METRICS_KEY = "spider:metrics"
# Seconds: a job takes from a second (cached index) to the 15-minute hard limit.
BUCKETS: tuple[float, ...] = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900)

# name -> (help, label names). Only these are written and served.
COUNTERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "spider_jobs": ("Jobs by outcome (created, updated, unchanged, skipped, too_large, failed, "
                    "retried, deferred)", ("outcome",)),
    "spider_github_calls": ("GitHub API calls by HTTP status (or timeout, error)", ("status",)),
    "spider_redeliveries": ("Failed webhook deliveries GitHub was asked to redeliver, by outcome "
                            "(requested, succeeded, given_up)", ("outcome",)),
    "spider_lost_jobs": ("Jobs the broker lost (a worker killed between taking a message and "
                         "recording it) found and published again, by outcome (republished, "
                         "given_up)", ("outcome",)),
    "spider_fixes": ("Merged fixes scored against our comment, by outcome (hit, miss, "
                     "no_function_changed)", ("outcome",)),
    "spider_index_jobs": ("Index jobs by outcome (indexed, skipped, failed, retried, deferred)",
                          ("outcome",)),
    "spider_llm_passes": ("LLM passes by outcome (edited: the comment now shows what the LLM "
                          "read; kept: it did not finish and the first answer stands)",
                          ("outcome",)),
    "spider_answers": ("Issue rankings by the index they were made from (full; partial: the "
                       "cold path, a pool embedded)", ("index",)),
}
HISTOGRAMS: dict[str, str] = {
    "spider_job_seconds": "Seconds per job attempt, from start to outcome",
    "spider_fetch_seconds": "Seconds to fetch a repository's default branch into its mirror",
    "spider_index_seconds": "Seconds to index a commit (graph and embeddings; cached when known)",
    "spider_query_seconds": "Seconds to locate one issue in an index (first stage and SpIDER)",
    "spider_index_job_seconds": "Seconds per index job attempt (fetch, graph, every embedding)",
}
_SEP = "|"


def _field(*parts: str) -> str:
    return _SEP.join(parts)


class Recorder:
    """One process's observations since its last flush (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._sums: Counter[str] = Counter()

    def count(self, name: str, value: str) -> None:
        """Add one to counter ``name`` for its single label ``value``."""
        if name not in COUNTERS:
            raise KeyError(name)
        with self._lock:
            self._counts[_field("c", name, value)] += 1

    def observe(self, name: str, seconds: float) -> None:
        """Add one observation to histogram ``name``."""
        if name not in HISTOGRAMS:
            raise KeyError(name)
        bucket = next((b for b in BUCKETS if seconds <= b), None)
        with self._lock:
            self._counts[_field("h", name, "inf" if bucket is None else repr(float(bucket)))] += 1
            self._counts[_field("h", name, "count")] += 1
            self._sums[_field("h", name, "sum")] += seconds

    def flush(self, client: redis.Redis) -> None:
        """Add everything buffered to Redis in one round trip; drop it if Redis fails."""
        with self._lock:
            counts, sums = self._counts, self._sums
            self._counts, self._sums = Counter(), Counter()
        if not counts and not sums:
            return
        try:
            pipe = client.pipeline(transaction=False)
            for key, n in counts.items():
                pipe.hincrby(METRICS_KEY, key, n)
            for key, total in sums.items():
                pipe.hincrbyfloat(METRICS_KEY, key, total)
            pipe.execute()
        except redis.RedisError as exc:
            log.warning("metrics dropped", extra={"error": type(exc).__name__})


RECORDER = Recorder()  # the process-wide recorder of the worker


def families(raw: Mapping[bytes | str, bytes | str]) -> Iterator[Metric]:
    """Prometheus metric families from the Redis hash (see :class:`Recorder`)."""
    fields: dict[str, str] = {}
    for k, v in raw.items():
        fields[k.decode() if isinstance(k, bytes) else k] = v.decode() if isinstance(v, bytes) else v
    for name, (doc, labels) in COUNTERS.items():
        family = CounterMetricFamily(name, doc, labels=list(labels))
        prefix = _field("c", name, "")
        for key, value in sorted(fields.items()):
            if key.startswith(prefix):
                family.add_metric([key[len(prefix):]], float(value))
        yield family
    for name, doc in HISTOGRAMS.items():
        prefix = _field("h", name, "")
        per_bucket = {b: int(fields.get(prefix + repr(float(b)), 0)) for b in BUCKETS}
        count = int(fields.get(prefix + "count", 0))
        cumulative, buckets = 0, []
        for b in BUCKETS:
            cumulative += per_bucket[b]
            buckets.append((_le(b), float(cumulative)))
        buckets.append(("+Inf", float(count)))
        yield HistogramMetricFamily(name, doc, buckets=buckets,
                                    sum_value=float(fields.get(prefix + "sum", 0.0)))


def _le(bucket: float) -> str:
    return repr(float(bucket))


class RedisCollector(Collector):
    """Serves the fleet's worker metrics from Redis (registered by the bot)."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client

    def collect(self) -> Iterable[Metric]:
        try:
            raw = self._client.hgetall(METRICS_KEY)
        except redis.RedisError as exc:
            log.warning("worker metrics unavailable", extra={"error": type(exc).__name__})
            return []
        return list(families(raw))

    def describe(self) -> Iterable[Metric]:
        return []  # no fixed description: a Redis outage must not break registration
