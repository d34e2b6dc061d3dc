"""Fuzzing the webhook receiver (Hypothesis) over HTTP, with the real Redis ledger:

- any change to a signed body, or to its signature, is 401;
- malformed JSON, wrong content types, missing or odd headers, bodies over the cap are
  4xx, never 5xx;
- nothing is enqueued and no delivery id is claimed for any of them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bot.app import build_state, create_app
from bot.dedupe import KEY_PREFIX
from bot.signature import sign
from contract.jobs import IndexJob
from contract.settings import AppSettings
from tests.bot.conftest import SECRET, RecordingQueue

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
SIGNED = [(json.loads((d / "headers.json").read_text())["X-GitHub-Event"],
           (d / "payload.json").read_bytes())
          for d in sorted(SAMPLES.iterdir()) if (d / "payload.json").exists()]
CAP = 64 * 1024  # the cap the bot tests run with (tests/bot/conftest.py)
EXAMPLES = 150  # per property: enough to find a crash, cheap on two busy cores
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


@pytest.fixture
def app(settings: AppSettings, redis_client: redis.Redis,
        queue: RecordingQueue) -> Iterator[TestClient]:
    state = build_state(settings.model_copy(update={"webhook_max_body_bytes": CAP}),
                        redis_client=redis_client, enqueue=queue)
    # raise_server_exceptions=False: a bug must show as the 500 GitHub would see
    with TestClient(create_app(state), raise_server_exceptions=False) as c:
        yield c


def headers(event: str, body: bytes, **extra: str) -> dict[str, str]:
    return {"X-GitHub-Event": event, "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": sign(SECRET, body), "Content-Type": "application/json",
            **extra}


def nothing_queued(queue: RecordingQueue, client: redis.Redis) -> bool:
    return queue.jobs == [] and client.keys(KEY_PREFIX + "*") == []


@st.composite
def changed_body(draw: st.DrawFn) -> tuple[str, bytes, bytes]:
    """A recorded delivery and a different body: bytes flipped, cut, added or swapped."""
    event, body = draw(st.sampled_from(SIGNED))
    kind = draw(st.sampled_from(["flip", "cut", "add", "insert", "replace"]))
    if kind == "flip":
        i = draw(st.integers(0, len(body) - 1))
        changed = body[:i] + bytes([body[i] ^ draw(st.integers(1, 255))]) + body[i + 1:]
    elif kind == "cut":
        i = draw(st.integers(0, len(body) - 1))
        changed = body[:i]
    elif kind == "add":
        changed = body + draw(st.binary(min_size=1, max_size=64))
    elif kind == "insert":
        i = draw(st.integers(0, len(body)))
        changed = body[:i] + draw(st.binary(min_size=1, max_size=16)) + body[i:]
    else:
        changed = draw(st.binary(max_size=512))
    assume(changed != body)
    return event, body, changed


@FUZZ
@given(changed_body())
def test_any_change_to_the_body_is_401(app: TestClient, queue: RecordingQueue,
                                       redis_client: redis.Redis,
                                       case: tuple[str, bytes, bytes]) -> None:
    event, original, changed = case
    resp = app.post("/webhook", content=changed, headers=headers(event, original))
    assert resp.status_code == 401, resp.text
    assert nothing_queued(queue, redis_client)


HEX = "0123456789abcdef"


@st.composite
def changed_signature(draw: st.DrawFn) -> tuple[str, bytes, str]:
    """A recorded delivery and a signature header that is not its signature."""
    event, body = draw(st.sampled_from(SIGNED))
    good = sign(SECRET, body)
    kind = draw(st.sampled_from(["digit", "cut", "add", "upper", "prefix", "secret", "junk"]))
    if kind == "digit":
        i = draw(st.integers(len("sha256="), len(good) - 1))
        bad = good[:i] + draw(st.sampled_from([c for c in HEX if c != good[i]])) + good[i + 1:]
    elif kind == "cut":
        bad = good[: draw(st.integers(0, len(good) - 1))]
    elif kind == "add":
        bad = good + draw(st.text(HEX, min_size=1, max_size=8))
    elif kind == "upper":
        bad = "sha256=" + good[len("sha256="):].upper()
        assume(bad != good)
    elif kind == "prefix":
        bad = draw(st.sampled_from(["sha1=", "SHA256=", "sha512=", "", "sha256:"])) \
            + good[len("sha256="):]
    elif kind == "secret":
        bad = sign(draw(st.text(min_size=1, max_size=40).filter(lambda s: s != SECRET)), body)
    else:
        bad = draw(st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=80))
    assume(bad.strip() != good)
    return event, body, bad


@FUZZ
@given(changed_signature())
def test_any_change_to_the_signature_is_401(app: TestClient, queue: RecordingQueue,
                                            redis_client: redis.Redis,
                                            case: tuple[str, bytes, str]) -> None:
    event, body, bad = case
    h = headers(event, body)
    h["X-Hub-Signature-256"] = bad
    resp = app.post("/webhook", content=body, headers=h)
    assert resp.status_code == 401, resp.text
    assert nothing_queued(queue, redis_client)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                 max_size=4),
    max_leaves=20,
)
# Payload-shaped nonsense: the fields the router reads, with values of the wrong kinds.
SHAPED = st.fixed_dictionaries({}, optional={
    "action": JSON_VALUES, "installation": JSON_VALUES, "repository": JSON_VALUES,
    "issue": JSON_VALUES, "comment": JSON_VALUES, "sender": JSON_VALUES,
})


@st.composite
def malformed(draw: st.DrawFn) -> tuple[str, bytes]:
    """A body that no real delivery has: bytes, JSON of the wrong kind, or a recorded
    payload with one field replaced by nonsense; signed correctly."""
    event = draw(st.sampled_from(["issues", "issue_comment", "ping", "installation", "push",
                                  "pull_request"]))
    kind = draw(st.sampled_from(["bytes", "json", "shaped", "spliced"]))
    if kind == "bytes":
        body = draw(st.binary(max_size=512))
    elif kind == "json":
        body = json.dumps(draw(JSON_VALUES)).encode()
    elif kind == "shaped":
        body = json.dumps(draw(SHAPED)).encode()
    else:
        _, recorded = draw(st.sampled_from(SIGNED))
        payload = json.loads(recorded)
        path = draw(st.sampled_from([("issue",), ("issue", "number"), ("repository", "full_name"),
                                     ("installation", "id"), ("comment",), ("comment", "body"),
                                     ("issue", "user"), ("action",)]))
        node = payload
        for key in path[:-1]:
            node = node.setdefault(key, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node[path[-1]] = draw(JSON_VALUES)
        body = json.dumps(payload).encode()
    return event, body


@FUZZ
@given(malformed())
def test_malformed_payloads_are_never_5xx(app: TestClient, queue: RecordingQueue,
                                          redis_client: redis.Redis,
                                          case: tuple[str, bytes]) -> None:
    event, body = case
    resp = app.post("/webhook", content=body, headers=headers(event, body))
    assert resp.status_code < 500, resp.text
    if resp.status_code >= 400 or resp.json().get("status") != "queued":
        assert queue.jobs == []
    else:  # a splice that left a valid job: it must be a well-formed one
        (job,) = queue.jobs
        assert (isinstance(job, IndexJob) or job.issue_number >= 1) and "/" in job.repo
        queue.jobs.clear()
        redis_client.flushdb()


WRONG_TYPES = st.sampled_from([
    "application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x",
    "application/xml", "text/json", "application/jsonp", "application/json-patch+json", "",
    "application", "json",
]) | st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=40).filter(
    lambda t: t.split(";")[0].strip().lower() != "application/json")


@FUZZ
@given(st.sampled_from(SIGNED), WRONG_TYPES)
def test_wrong_content_types_are_415(app: TestClient, queue: RecordingQueue,
                                     redis_client: redis.Redis, sample: tuple[str, bytes],
                                     content_type: str) -> None:
    event, body = sample
    resp = app.post("/webhook", content=body, headers=headers(event, body,
                                                              **{"Content-Type": content_type}))
    assert resp.status_code == 415, resp.text
    assert nothing_queued(queue, redis_client)


HEADER_TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=120)


@FUZZ
@given(st.sampled_from(SIGNED),
       st.sets(st.sampled_from(["X-GitHub-Event", "X-GitHub-Delivery", "X-Hub-Signature-256",
                                "Content-Type"]), min_size=1),
       st.booleans(), HEADER_TEXT, HEADER_TEXT)
def test_missing_or_odd_headers_are_4xx(app: TestClient, queue: RecordingQueue,
                                        redis_client: redis.Redis, sample: tuple[str, bytes],
                                        touched: set[str], drop: bool, event: str,
                                        delivery: str) -> None:
    name, body = sample
    h: dict[str, str | bytes] = dict(headers(name, body))
    for header in touched:
        if drop:
            del h[header]
        elif header == "X-GitHub-Event":
            h[header] = event.encode("latin-1")  # raw bytes on the wire, as any client may
        elif header == "X-GitHub-Delivery":
            h[header] = delivery.encode("latin-1")
    resp = app.post("/webhook", content=body, headers=h)
    assert resp.status_code < 500, resp.text
    if drop:
        assert resp.status_code in (400, 401, 415)
    if resp.status_code >= 400 or resp.json().get("status") != "queued":
        assert nothing_queued(queue, redis_client)
    else:  # only a changed event name and a GUID-like delivery id can still be queued
        queueing = ("issues", "issue_comment", "installation", "installation_repositories",
                    "push")
        assert not drop and h["X-GitHub-Event"] in (*queueing, *(e.encode() for e in queueing))
        queue.jobs.clear()
        redis_client.flushdb()


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.integers(CAP + 1, 4 * CAP), st.booleans(), st.sampled_from(SIGNED))
def test_bodies_over_the_cap_are_413(app: TestClient, queue: RecordingQueue,
                                     redis_client: redis.Redis, size: int, streamed: bool,
                                     sample: tuple[str, bytes]) -> None:
    event, recorded = sample
    payload = json.loads(recorded)
    payload["padding"] = "x" * size
    body = json.dumps(payload).encode()

    def chunks() -> Iterator[bytes]:  # no Content-Length: the cap applies while reading
        for i in range(0, len(body), 16 * 1024):
            yield body[i:i + 16 * 1024]

    resp = app.post("/webhook", content=chunks() if streamed else body,
                    headers=headers(event, body))
    assert resp.status_code == 413, resp.text
    assert nothing_queued(queue, redis_client)
