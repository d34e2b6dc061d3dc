from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from bot.app import build_state, create_app
from bot.dedupe import KEY_PREFIX
from bot.queue import CeleryEnqueuer, make_publisher
from bot.signature import sign
from contract.jobs import QUEUE, TASK_NAME
from contract.settings import AppSettings, SettingsError
from tests.bot.conftest import SECRET, RecordingQueue

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
BODY = (SAMPLES / "issues_opened" / "payload.json").read_bytes()


def headers(body: bytes = BODY, delivery: str = "11111111-2222-3333-4444-555555555555",
            event: str = "issues") -> dict[str, str]:
    return {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery,
            "X-Hub-Signature-256": sign(SECRET, body), "Content-Type": "application/json"}


def test_queued_then_duplicate(client: TestClient, queue: RecordingQueue) -> None:
    first = client.post("/webhook", content=BODY, headers=headers())
    assert first.status_code == 202 and first.json()["status"] == "queued"
    again = client.post("/webhook", content=BODY, headers=headers())
    assert again.status_code == 202 and again.json()["status"] == "duplicate"
    assert len(queue.jobs) == 1


def test_bad_or_missing_signature_is_401_and_nothing_is_queued(
    client: TestClient, queue: RecordingQueue, redis_client: redis.Redis
) -> None:
    bad = {**headers(), "X-Hub-Signature-256": sign("wrong-secret-wrong-secret", BODY)}
    assert client.post("/webhook", content=BODY, headers=bad).status_code == 401
    missing = {k: v for k, v in headers().items() if k != "X-Hub-Signature-256"}
    assert client.post("/webhook", content=BODY, headers=missing).status_code == 401
    assert queue.jobs == [] and redis_client.keys(KEY_PREFIX + "*") == []


@pytest.mark.parametrize("drop", ["X-GitHub-Event", "X-GitHub-Delivery"])
def test_missing_headers_are_400(client: TestClient, drop: str) -> None:
    h = {k: v for k, v in headers().items() if k != drop}
    assert client.post("/webhook", content=BODY, headers=h).status_code == 400


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b"\xff\xfe"])
def test_malformed_json_is_400(client: TestClient, body: bytes) -> None:
    assert client.post("/webhook", content=body, headers=headers(body)).status_code == 400


def test_body_over_the_cap_is_413(client: TestClient, settings: AppSettings) -> None:
    big = json.dumps({"pad": "x" * settings.webhook_max_body_bytes}).encode()
    assert client.post("/webhook", content=big, headers=headers(big)).status_code == 413

    def chunks():  # no Content-Length: the cap applies while streaming
        yield big[: len(big) // 2]
        yield big[len(big) // 2:]

    assert client.post("/webhook", content=chunks(), headers=headers(big)).status_code == 413


def test_enqueue_failure_releases_the_delivery(
    client: TestClient, queue: RecordingQueue, redis_client: redis.Redis
) -> None:
    queue.fail = ConnectionError("broker down")
    resp = client.post("/webhook", content=BODY, headers=headers())
    assert resp.status_code == 503
    assert redis_client.keys(KEY_PREFIX + "*") == []
    queue.fail = None
    assert client.post("/webhook", content=BODY, headers=headers()).json()["status"] == "queued"


def test_healthz(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok", "redis": "ok"}


def test_healthz_reports_redis_down(settings: AppSettings, queue: RecordingQueue) -> None:
    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    with TestClient(create_app(build_state(settings, redis_client=dead, enqueue=queue))) as c:
        resp = c.get("/healthz")
    assert resp.status_code == 503 and resp.json()["status"] == "unhealthy"


def test_metrics_count_outcomes(client: TestClient) -> None:
    client.post("/webhook", content=BODY, headers=headers())
    client.post("/webhook", content=b"{}", headers={**headers(b"{}"), "X-Hub-Signature-256": "sha256=0"})
    text = client.get("/metrics").text
    assert 'spider_webhook_deliveries_total{outcome="queued"} 1.0' in text
    assert 'spider_webhook_deliveries_total{outcome="BadSignature"} 1.0' in text


def test_the_real_enqueuer_puts_one_message_on_the_queue(
    settings: AppSettings, redis_client: redis.Redis
) -> None:
    celery = make_publisher(settings)
    state = build_state(settings, redis_client=redis_client, enqueue=CeleryEnqueuer(celery))
    with TestClient(create_app(state)) as c:
        resp = c.post("/webhook", content=BODY, headers=headers())
    celery.close()
    assert resp.json() == {"status": "queued", "task_id": "11111111-2222-3333-4444-555555555555"}
    (raw,) = redis_client.lrange(QUEUE, 0, -1)
    message = json.loads(raw)
    assert message["headers"]["task"] == TASK_NAME
    args, kwargs, _ = json.loads(__import__("base64").b64decode(message["body"]))
    assert args == [] and kwargs["issue_number"] == 42 and kwargs["trigger"] == "issues.opened"


def test_start_up_refuses_a_placeholder_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    from contract.settings import get_settings

    monkeypatch.setenv("SPIDER_WEBHOOK_SECRET", "changeme")
    get_settings.cache_clear()
    try:
        with pytest.raises(SettingsError), TestClient(create_app()):
            pass
    finally:
        get_settings.cache_clear()


def test_logs_carry_the_delivery_id_and_no_secret(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    from contract.logs import JsonFormatter

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logging.getLogger().addHandler(handler)
    caplog.set_level(logging.INFO)
    try:
        client.post("/webhook", content=BODY,
                    headers=headers(delivery="abcdef01-0000-0000-0000-000000000000"))
        client.post("/webhook", content=BODY, headers={**headers(), "X-Hub-Signature-256": "sha256=0"})
    finally:
        logging.getLogger().removeHandler(handler)
    text = stream.getvalue()
    records = [json.loads(line) for line in text.splitlines()]
    handled = [r for r in records if r["msg"] == "delivery handled"]
    assert handled and handled[0]["delivery_id"] == "abcdef01-0000-0000-0000-000000000000"
    assert handled[0]["outcome"] == "queued" and handled[0]["event"] == "issues"
    rejected = [r for r in records if r["msg"] == "delivery rejected"]
    assert rejected and rejected[0]["outcome"] == "BadSignature"
    assert SECRET not in text


def test_importing_the_bot_loads_nothing_heavy() -> None:
    code = (
        "import sys, bot.app\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'tree_sitter', 'tree_sitter_language_pack', 'sentence_transformers', 'numpy',"
        " 'githubkit', 'worker') or m in ('spider.index', 'spider.localize')]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_redis_down_is_503_so_github_shows_a_failed_delivery(settings: AppSettings,
                                                            queue: RecordingQueue) -> None:
    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    with TestClient(create_app(build_state(settings, redis_client=dead, enqueue=queue))) as c:
        resp = c.post("/webhook", content=BODY, headers=headers())
    assert resp.status_code == 503 and queue.jobs == []


def test_metrics_serve_the_workers_counts_from_redis(client: TestClient,
                                                     redis_client: redis.Redis) -> None:
    from contract.metrics import Recorder

    worker = Recorder()  # as a worker process on another machine would
    worker.count("spider_jobs", "created")
    worker.count("spider_github_calls", "201")
    worker.observe("spider_query_seconds", 0.2)
    worker.flush(redis_client)
    text = client.get("/metrics").text
    assert 'spider_jobs_total{outcome="created"} 1.0' in text
    assert 'spider_github_calls_total{status="201"} 1.0' in text
    assert 'spider_query_seconds_bucket{le="0.25"} 1.0' in text
    assert "spider_index_seconds_count 0.0" in text


def test_json_with_a_charset_is_json(client: TestClient, queue: RecordingQueue) -> None:
    h = {**headers(), "Content-Type": "Application/JSON; charset=utf-8"}
    assert client.post("/webhook", content=BODY, headers=h).json()["status"] == "queued"
    h = {**headers(delivery="22222222-2222-3333-4444-555555555555"),
         "Content-Type": "application/x-www-form-urlencoded"}
    assert client.post("/webhook", content=BODY, headers=h).status_code == 415
    assert len(queue.jobs) == 1


def test_dedupe_keys_by_the_delivery_guid_so_a_redelivery_runs_once(
        client: TestClient, queue: RecordingQueue, redis_client: redis.Redis,
        settings: AppSettings) -> None:
    """GitHub's redelivery keeps ``X-GitHub-Delivery`` (the guid; only the id in its list
    changes) and is signed afresh: it is answered ``duplicate`` and queues nothing, while
    another guid with the same body is a new delivery."""
    guid = "aaaaaaaa-2222-3333-4444-555555555555"
    assert client.post("/webhook", content=BODY, headers=headers(delivery=guid)).json()[
        "status"] == "queued"
    assert redis_client.ttl(KEY_PREFIX + guid) > settings.delivery_ttl_s - 10  # confirmed
    redelivered = {**headers(delivery=guid), "X-GitHub-Hook-ID": "2", "User-Agent": "x"}
    assert client.post("/webhook", content=BODY, headers=redelivered).json()[
        "status"] == "duplicate"
    other = headers(delivery="bbbbbbbb-2222-3333-4444-555555555555")
    assert client.post("/webhook", content=BODY, headers=other).json()["status"] == "queued"
    assert [j.delivery_id for j in queue.jobs] == [guid, other["X-GitHub-Delivery"]]


def test_a_claim_whose_enqueue_and_release_both_failed_lapses(
        client: TestClient, queue: RecordingQueue, redis_client: redis.Redis) -> None:
    """Redis gone between the claim and the enqueue, and the release lost too: the claim is
    short-lived, so a later redelivery of the guid is queued rather than called a duplicate."""
    from bot.dedupe import PENDING_TTL_S, DeliveryLedger

    ledger = DeliveryLedger(redis_client, ttl_s=3 * 24 * 3600)
    assert ledger.claim("cccccccc-2222-3333-4444-555555555555")
    assert 0 < redis_client.ttl(KEY_PREFIX + "cccccccc-2222-3333-4444-555555555555") <= PENDING_TTL_S
