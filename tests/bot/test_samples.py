"""Every recorded delivery in tests/samples/, through the routing and through the HTTP app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from bot.events import Acknowledge, Enqueue, EnqueueIndex, Ignore, route
from bot.signature import sign
from tests.bot.conftest import SECRET, RecordingQueue

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
SCENARIOS = sorted(p.name for p in SAMPLES.iterdir() if (p / "payload.json").exists())


def load(name: str) -> tuple[dict[str, str], bytes, dict[str, object]]:
    d = SAMPLES / name
    return (json.loads((d / "headers.json").read_text()), (d / "payload.json").read_bytes(),
            json.loads((d / "expected.json").read_text()))


def test_there_are_samples() -> None:
    assert len(SCENARIOS) >= 8


@pytest.mark.parametrize("name", SCENARIOS)
def test_routing(name: str) -> None:
    headers, body, expected = load(name)
    decision = route(headers["X-GitHub-Event"], json.loads(body), headers["X-GitHub-Delivery"])
    kind = {Enqueue: "enqueue", EnqueueIndex: "enqueue_index", Ignore: "ignore",
            Acknowledge: "acknowledge"}[type(decision)]
    assert kind == expected["decision"]
    if isinstance(decision, EnqueueIndex):
        assert [j.repo for j in decision.jobs] == expected["repos"]
        assert {j.sha for j in decision.jobs} == {expected["sha"]}
    if isinstance(decision, Enqueue):
        assert decision.job.trigger == expected["trigger"]
        assert decision.job.issue_number == expected["issue"]
    if isinstance(decision, Ignore):
        assert decision.reason == expected["reason"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_over_http(name: str, client: TestClient, queue: RecordingQueue) -> None:
    headers, body, expected = load(name)
    headers = {**headers, "X-Hub-Signature-256": sign(SECRET, body)}
    resp = client.post("/webhook", content=body, headers=headers)
    status = {"enqueue": "queued", "enqueue_index": "queued", "ignore": "ignored",
              "acknowledge": "acknowledged"}
    assert resp.json()["status"] == status[str(expected["decision"])]
    assert resp.status_code == (200 if expected["decision"] == "acknowledge" else 202)
    queued = {"enqueue": 1, "enqueue_index": len(expected.get("repos", []))}
    assert len(queue.jobs) == queued.get(str(expected["decision"]), 0)
