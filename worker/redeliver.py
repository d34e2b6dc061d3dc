"""Redeliver what GitHub could not deliver: GitHub's documented recovery for apps.

GitHub never retries a failed webhook delivery by itself. A delivery the bot answered 503
(Redis away), or that never got an answer (the bot down), stays failed in the app's list
of deliveries. Here, every worker process runs a timer (:class:`RedeliveryTimer`); at each
tick one of the fleet takes a Redis lock (``SET NX EX interval``: at most one run per
interval, whichever worker wins) and :meth:`Redeliverer.run_once`:

1. lists the app's deliveries newest first (``GET /app/hook/deliveries``, app JWT, cursor
   pages from the ``Link`` header) back to the window (default 3 days, GitHub's retention);
2. groups them by ``guid`` — a redelivery gets a new id but keeps the guid (and the bot's
   dedupe keys by it, so a redelivery of something already queued is a ``duplicate``);
3. for a guid with no 2xx attempt, asks GitHub to redeliver its latest attempt once
   (``POST /app/hook/deliveries/{id}/attempts``), remembering in Redis how often it asked;
   a guid later answered 2xx is done (``succeeded`` if we had asked); one still failing
   after ``redeliver_max_attempts`` is given up with a log line (``given_up``).

The state per guid is one Redis hash (asked, attempts seen at the last ask, when), kept as
long as the window. Metrics: ``spider_redeliveries_total{outcome}``.
"""

from __future__ import annotations

import logging
import math
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

import redis
from githubkit import AppAuthStrategy
from githubkit.versions.latest.models import HookDeliveryItem

from contract.metrics import RECORDER
from contract.redis_client import redis_client
from contract.settings import AppSettings
from worker.errors import WorkerError
from worker.github import RetryPolicy, github_api

log = logging.getLogger(__name__)

LOCK_KEY = "spider:redeliver:lock"
STATE_PREFIX = "spider:redeliver:guid:"
DELIVERIES_PER_PAGE = 100  # GitHub's maximum page size
# GitHub redelivers within seconds of a 202; an ask that produced no new attempt after this
# long is taken as lost and asked again (it still counts towards the attempts)
STALE_ASK_S = 600.0
# the bot's answers that the same bytes would get again: redelivering them cannot help
PERMANENT_STATUSES = frozenset({400, 413, 415, 422})
# a failed attempt is redelivered only once it is this old: past the bot's short-lived claim
# of its guid (bot.dedupe.PENDING_TTL_S, 30 s), which a Redis failure between claim and
# enqueue may leave behind, so the redelivery is queued rather than answered "duplicate"
MIN_AGE_S = 45.0
TICKS_PER_INTERVAL = 4  # each worker looks for the lock this often per interval
MAX_TICK_S = 60.0  # ... but at least once a minute (a long interval, a fleet just started)
FIRST_TICK_S = 5.0  # a worker started after an outage looks soon, not an interval later
REDIS_TIMEOUT_S = 10.0
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')


def next_cursor(link: str | None) -> str | None:
    """The ``cursor`` of the ``rel="next"`` page of a ``Link`` header; None on the last page."""
    match = _NEXT.search(link or "")
    if not match:
        return None
    values = parse_qs(urlsplit(match.group(1)).query).get("cursor")
    return values[0] if values else None


def failed(item: HookDeliveryItem) -> bool:
    """Whether an attempt failed: no answer (status code 0) or an HTTP error status."""
    return item.status_code == 0 or item.status_code >= 400


class Deliveries(Protocol):
    """The app's deliveries on GitHub (tests pass their own)."""

    def pages(self, max_pages: int) -> Iterator[list[HookDeliveryItem]]: ...

    def redeliver(self, delivery_id: int) -> None: ...


class AppWebhookDeliveries:
    """The app's webhook deliveries, as the app itself (its JWT), through the worker's
    githubkit client and retry policy, pointed at ``SPIDER_GITHUB_API_URL``."""

    def __init__(self, settings: AppSettings, policy: RetryPolicy) -> None:
        self._settings = settings
        self._policy = policy

    def _auth(self) -> AppAuthStrategy:
        return AppAuthStrategy(str(self._settings.github_app_id), self._settings.private_key_pem())

    def pages(self, max_pages: int) -> Iterator[list[HookDeliveryItem]]:
        """Pages of deliveries, newest first, at most ``max_pages`` of them."""
        with github_api(self._settings, self._auth()) as gh:
            cursor: str | None = None
            for _ in range(max_pages):
                resp = self._policy.call(
                    "list webhook deliveries",
                    lambda cursor=cursor: gh.rest.apps.list_webhook_deliveries(
                        per_page=DELIVERIES_PER_PAGE, **({"cursor": cursor} if cursor else {})),
                )
                yield resp.parsed_data
                cursor = next_cursor(resp.headers.get("link"))
                if cursor is None:
                    return

    def redeliver(self, delivery_id: int) -> None:
        """Ask GitHub to send one delivery again (it answers 202 and sends it shortly)."""
        with github_api(self._settings, self._auth()) as gh:
            self._policy.call("redeliver webhook delivery",
                              lambda: gh.rest.apps.redeliver_webhook_delivery(delivery_id))


@dataclass
class RunReport:
    """What one run saw and did (logged; the counts also go to the metrics)."""

    listed: int = 0
    guids: int = 0
    failing: int = 0
    requested: int = 0
    succeeded: int = 0
    given_up: int = 0
    waiting: int = 0  # asked, the redelivery not seen yet
    stopped_early: bool = False
    errors: list[str] = field(default_factory=list)


class Redeliverer:
    """One run over the app's recent deliveries (see the module docstring)."""

    def __init__(self, settings: AppSettings, client: redis.Redis, deliveries: Deliveries,
                 clock: Callable[[], float] = time.time, min_age_s: float = MIN_AGE_S) -> None:
        self._settings = settings
        self._min_age_s = min_age_s
        self._redis = client
        self._deliveries = deliveries
        self._clock = clock

    def try_run(self, owner: str) -> RunReport | None:
        """Run if this process wins the fleet's lock for this interval; None if another did."""
        ttl = max(1, math.ceil(self._settings.redeliver_interval_s))
        if not self._redis.set(LOCK_KEY, owner, nx=True, ex=ttl):
            return None
        return self.run_once(deadline=time.monotonic() + 0.9 * ttl)

    def run_once(self, deadline: float | None = None) -> RunReport:
        """List, group by guid, ask for what failed; bounded by pages and by ``deadline``."""
        s = self._settings
        report = RunReport()
        since = self._clock() - s.redeliver_window_s
        attempts: dict[str, list[HookDeliveryItem]] = {}
        for page in self._deliveries.pages(s.redeliver_max_pages):
            recent = [d for d in page if d.delivered_at.timestamp() >= since]
            report.listed += len(recent)
            for item in recent:
                attempts.setdefault(item.guid, []).append(item)
            if len(recent) < len(page):
                break  # newest first: the rest is older than the window
        report.guids = len(attempts)
        for guid, items in attempts.items():
            if deadline is not None and time.monotonic() > deadline:
                report.stopped_early = True  # the next run carries on; the lock is lapsing
                break
            try:
                self._consider(guid, items, report)
            except WorkerError as exc:  # this guid: GitHub refused or was away
                report.errors.append(f"{type(exc).__name__}: {exc}"[:200])
        return report

    def _consider(self, guid: str, items: list[HookDeliveryItem], report: RunReport) -> None:
        s = self._settings
        key = STATE_PREFIX + guid
        state = {k.decode(): v.decode() for k, v in self._redis.hgetall(key).items()}
        if state.get("done"):
            return
        asked = int(state.get("asked", 0))
        if any(not failed(i) for i in items):
            if asked:  # what we asked for arrived (or an operator's redelivery did)
                self._finish(key, "succeeded", report, guid=guid, asked=asked)
            return
        report.failing += 1
        latest = max(items, key=lambda i: i.id)
        if latest.status_code in PERMANENT_STATUSES:
            self._finish(key, "given_up", report, guid=guid, asked=asked,
                         status_code=latest.status_code, why="the bot refuses these bytes")
            return
        if self._clock() - latest.delivered_at.timestamp() < self._min_age_s:
            report.waiting += 1  # too fresh (see MIN_AGE_S)
            return
        pending = (asked > 0 and len(items) <= int(state.get("seen", 0))
                   and self._clock() - float(state.get("asked_at", 0)) < STALE_ASK_S)
        if pending:
            report.waiting += 1
            return
        tries = max(asked, sum(1 for i in items if i.redelivery))
        if tries >= s.redeliver_max_attempts:
            self._finish(key, "given_up", report, guid=guid, asked=asked,
                         status_code=latest.status_code, why="still failing")
            return
        self._deliveries.redeliver(latest.id)
        pipe = self._redis.pipeline()
        pipe.hset(key, mapping={"asked": asked + 1, "seen": len(items),
                                "asked_at": repr(self._clock())})
        pipe.expire(key, s.redeliver_window_s)
        pipe.execute()
        report.requested += 1
        RECORDER.count("spider_redeliveries", "requested")
        log.info("redelivery requested", extra={"guid": guid, "github_delivery": latest.id,
                                                "event": latest.event, "attempt": asked + 1,
                                                "status_code": latest.status_code})

    def _finish(self, key: str, outcome: str, report: RunReport, **extra: Any) -> None:
        pipe = self._redis.pipeline()
        pipe.hset(key, "done", outcome)
        pipe.expire(key, self._settings.redeliver_window_s)
        pipe.execute()
        setattr(report, outcome, getattr(report, outcome) + 1)
        RECORDER.count("spider_redeliveries", outcome)
        level = logging.WARNING if outcome == "given_up" else logging.INFO
        log.log(level, f"redelivery {outcome.replace('_', ' ')}", extra=extra)


class RedeliveryTimer(threading.Thread):
    """A daemon thread in each worker's main process; see the module docstring."""

    def __init__(self, settings: AppSettings, owner: str,
                 redeliverer: Redeliverer | None = None) -> None:
        super().__init__(daemon=True, name="spider-redeliver")
        self._settings = settings
        self._owner = owner
        self._redeliverer = redeliverer
        self._client: redis.Redis | None = None
        self.stopped = threading.Event()

    def _build(self) -> Redeliverer:
        if self._redeliverer is None:
            self._client = redis_client(self._settings, timeout_s=REDIS_TIMEOUT_S)
            deliveries = AppWebhookDeliveries(self._settings, RetryPolicy(self._settings))
            self._redeliverer = Redeliverer(self._settings, self._client, deliveries)
        return self._redeliverer

    def tick_s(self) -> float:
        """Seconds to the next look for the lock, spread so workers do not look together."""
        base = min(self._settings.redeliver_interval_s / TICKS_PER_INTERVAL, MAX_TICK_S)
        return base * random.uniform(0.75, 1.25)

    def run(self) -> None:
        wait = min(FIRST_TICK_S, self.tick_s())
        while not self.stopped.wait(wait):
            wait = self.tick_s()
            self.tick()

    def tick(self) -> RunReport | None:
        """One look: take the lock and run, or not; never raises (the timer must live on)."""
        try:
            redeliverer = self._build()
            report = redeliverer.try_run(self._owner)
        except redis.RedisError as exc:
            log.warning("redelivery skipped: Redis unavailable", extra={"error": type(exc).__name__})
            return None
        except Exception as exc:  # GitHub down, a bad answer: the next interval tries again
            log.warning("redelivery run failed", extra={"error": f"{type(exc).__name__}: {exc}"[:300]})
            return None
        finally:
            if self._client is not None:
                RECORDER.flush(self._client)
        if report is not None:
            log.info("redelivery run", extra={k: v for k, v in vars(report).items() if v})
        return report

    def stop(self) -> None:
        """Stop before the next tick (a run in progress finishes)."""
        self.stopped.set()
