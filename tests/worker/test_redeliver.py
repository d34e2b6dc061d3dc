"""Redelivery of failed webhook deliveries, against the fake GitHub's deliveries API (app
JWT, cursor pages, ``POST .../attempts`` that really sends again) and a tiny receiver that
answers each guid as scripted (the bot's 503 while Redis is away, then 202)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import redis

from contract.metrics import RECORDER, families
from contract.settings import AppSettings
from spider_devkit.fake_github import FakeGitHub
from worker.github import RetryPolicy
from worker.redeliver import AppWebhookDeliveries, Redeliverer, RedeliveryTimer, next_cursor


class Receiver:
    """Answers deliveries: the next scripted status of the guid, else 202."""

    def __init__(self) -> None:
        self.script: dict[str, list[int]] = {}
        self.seen: list[str] = []
        self.lock = threading.Lock()
        self.url = ""

    def status_for(self, guid: str) -> int:
        with self.lock:
            self.seen.append(guid)
            queue = self.script.get(guid) or []
            return queue.pop(0) if queue else 202


@pytest.fixture
def receiver(fake: FakeGitHub) -> Iterator[Receiver]:
    rec = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            status = rec.status_for(self.headers["x-github-delivery"])
            raw = json.dumps({"status": "queued" if status < 300 else "error"}).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.webhook_url = f"http://127.0.0.1:{server.server_address[1]}/webhook"
    fake.webhook_secret = "s" * 20
    try:
        yield rec
    finally:
        server.shutdown()
        server.server_close()


def payload(n: int) -> dict[str, object]:
    return {"action": "opened", "installation": {"id": 7}, "repository": {"id": 99},
            "issue": {"number": n}}


def redeliverer(settings: AppSettings, client: redis.Redis, **kw: object) -> Redeliverer:
    s = settings.model_copy(update=kw)
    return Redeliverer(s, client, AppWebhookDeliveries(s, RetryPolicy(s)), min_age_s=0)


def test_next_cursor_reads_githubs_link_header() -> None:
    link = ('<https://api.github.com/app/hook/deliveries?per_page=2&cursor=v1_12077215967>; '
            'rel="next"')
    assert next_cursor(link) == "v1_12077215967"
    assert next_cursor('<https://x/?page=1>; rel="prev"') is None and next_cursor(None) is None


def test_failed_deliveries_are_redelivered_once_then_done(
        fake: FakeGitHub, receiver: Receiver, settings: AppSettings,
        redis_client: redis.Redis) -> None:
    """120 deliveries (two pages), 11 of them answered 503: eleven redeliveries asked for,
    each guid once; the redeliveries keep the guid; a second run counts them succeeded and a
    third does nothing."""
    failing = {f"00000000-0000-0000-0000-{n:012d}" for n in range(0, 120, 11)}
    for guid in failing:
        receiver.script[guid] = [503]
    for n in range(120):
        fake.send_webhook("issues", payload(n), guid=f"00000000-0000-0000-0000-{n:012d}")
    r = redeliverer(settings, redis_client)
    first = r.run_once()
    assert (first.listed, first.guids, first.failing, first.requested) == (120, 120, 11, 11)
    fake.wait_for_redeliveries()
    again = [d for d in fake.deliveries if d.redelivery]
    assert sorted(d.guid for d in again) == sorted(failing) and all(d.ok for d in again)
    assert len(fake.requests("GET", path="/app/hook/deliveries")) == 2  # cursor pages
    second = r.run_once()
    assert (second.requested, second.succeeded, second.failing) == (0, 11, 0)
    assert r.run_once().requested == 0
    RECORDER.flush(redis_client)
    counts = {m.name: {s.labels.get("outcome"): s.value for s in m.samples}
              for m in families(redis_client.hgetall("spider:metrics"))}
    assert counts["spider_redeliveries"] == {"requested": 11.0, "succeeded": 11.0}


def test_a_delivery_failing_for_good_is_redelivered_n_times_then_given_up(
        fake: FakeGitHub, receiver: Receiver, settings: AppSettings,
        redis_client: redis.Redis) -> None:
    guid = "11111111-0000-0000-0000-000000000000"
    receiver.script[guid] = [503] * 10
    fake.send_webhook("issues", payload(1), guid=guid)
    r = redeliverer(settings, redis_client, redeliver_max_attempts=3)
    outcomes = []
    for _ in range(6):
        report = r.run_once()
        outcomes.append((report.requested, report.given_up))
        fake.wait_for_redeliveries()
    assert outcomes == [(1, 0), (1, 0), (1, 0), (0, 1), (0, 0), (0, 0)]
    assert len(fake.deliveries_of(guid)) == 4  # the first and three redeliveries


def test_an_ask_not_yet_answered_is_not_asked_again(
        fake: FakeGitHub, receiver: Receiver, settings: AppSettings,
        redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    guid = "22222222-0000-0000-0000-000000000000"
    receiver.script[guid] = [503]
    fake.send_webhook("issues", payload(2), guid=guid)
    monkeypatch.setattr(fake, "redeliver", lambda delivery_id: True)  # GitHub is slow
    r = redeliverer(settings, redis_client)
    assert r.run_once().requested == 1
    report = r.run_once()
    assert (report.requested, report.waiting) == (0, 1)


def test_the_window_and_the_bots_permanent_refusals_are_respected(
        fake: FakeGitHub, receiver: Receiver, settings: AppSettings,
        redis_client: redis.Redis) -> None:
    old, bad = "33333333-0000-0000-0000-000000000000", "44444444-0000-0000-0000-000000000000"
    receiver.script[old] = [503]
    receiver.script[bad] = [415]
    fake.send_webhook("issues", payload(3), guid=old)
    fake.deliveries[-1].delivered_at = "2020-01-01T00:00:00Z"  # older than the window
    fake.send_webhook("issues", payload(4), guid=bad)
    report = redeliverer(settings, redis_client).run_once()
    assert (report.listed, report.requested, report.given_up) == (1, 0, 1)


def test_one_runner_per_interval_across_the_fleet(
        fake: FakeGitHub, receiver: Receiver, settings: AppSettings,
        redis_client: redis.Redis) -> None:
    guid = "55555555-0000-0000-0000-000000000000"
    receiver.script[guid] = [503]
    fake.send_webhook("issues", payload(5), guid=guid)
    a = redeliverer(settings, redis_client, redeliver_interval_s=30)
    b = redeliverer(settings, redis_client, redeliver_interval_s=30)
    runs = [a.try_run("worker-a"), b.try_run("worker-b"), a.try_run("worker-a")]
    assert [r is not None for r in runs] == [True, False, False]
    assert 25 <= redis_client.ttl("spider:redeliver:lock") <= 30


def test_the_timer_survives_redis_and_github_being_away(settings: AppSettings) -> None:
    s = settings.model_copy(update={"redis_url": "redis://127.0.0.1:1/0",
                                    "redeliver_interval_s": 1.0})
    timer = RedeliveryTimer(s, owner="w")
    started = time.monotonic()
    assert timer.tick() is None  # logged, not raised
    assert time.monotonic() - started < 15
    assert 0.1 < timer.tick_s() < 1.0


def test_a_fresh_failure_waits_past_the_bots_pending_claim(
        fake: FakeGitHub, receiver: Receiver, settings: AppSettings,
        redis_client: redis.Redis) -> None:
    guid = "66666666-0000-0000-0000-000000000000"
    receiver.script[guid] = [503]
    fake.send_webhook("issues", payload(6), guid=guid)
    r = Redeliverer(settings, redis_client, AppWebhookDeliveries(settings, RetryPolicy(settings)))
    report = r.run_once()
    assert (report.requested, report.waiting) == (0, 1)
