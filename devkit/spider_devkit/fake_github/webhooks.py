"""GitHub's side of the app's webhook: sign and POST deliveries, record them, redeliver."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import threading
import time
import uuid
from typing import Any

import httpx

from spider_devkit.fake_github.records import FakeDelivery, now

WEBHOOK_TIMEOUT_S = 10.0  # GitHub gives up on an answer after 10 s
FIRST_DELIVERY_ID = 90_000_000  # ids of recorded deliveries count up from here


class WebhookSender:
    """The deliveries half of the fake's state; :class:`GitHubState` builds on it. Its
    lock guards all of the fake's state."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        # the app's webhook, as registered on GitHub (the dev stack sets them)
        self.webhook_url = ""
        self.webhook_secret = ""
        self.webhook_timeout_s = WEBHOOK_TIMEOUT_S
        self.deliveries: list[FakeDelivery] = []
        self._next_delivery_id = FIRST_DELIVERY_ID
        self._redelivery_threads: list[threading.Thread] = []

    def send_webhook(self, event: str, payload: dict[str, Any] | bytes, *,
                     guid: str | None = None, secret: str | None = None,
                     redelivery: bool = False) -> httpx.Response:
        """Sign and POST a delivery to the app's webhook URL and record it as GitHub does.
        ``secret`` overrides the registered one (a wrong signature); transport errors are
        recorded with status code 0 and raised."""
        if not self.webhook_url:
            raise RuntimeError("no webhook URL registered on the fake")
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        guid = guid or str(uuid.uuid4())
        key = (secret if secret is not None else self.webhook_secret).encode()
        headers = {
            "content-type": "application/json",
            "x-github-event": event,
            "x-github-delivery": guid,
            "x-github-hook-installation-target-type": "integration",
            "x-hub-signature-256": "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest(),
            "user-agent": "GitHub-Hookshot/fake",
        }
        meta = delivery_meta(body)
        with self._lock:
            self._next_delivery_id += 1
            record = FakeDelivery(self._next_delivery_id, guid, event, meta[0], meta[1], meta[2],
                                  body, redelivery, now())
        started = time.perf_counter()
        try:
            response = httpx.post(self.webhook_url, content=body, headers=headers,
                                  timeout=self.webhook_timeout_s)
        except httpx.HTTPError as exc:
            record.status = ("timed out" if isinstance(exc, httpx.TimeoutException)
                             else "failed to connect to host")
            raise
        else:
            record.status_code = response.status_code
            record.status = ("OK" if record.ok
                             else f"Invalid HTTP Response: {response.status_code}")
            with contextlib.suppress(ValueError):
                answer = response.json()
                record.answer = answer if isinstance(answer, dict) else None
            return response
        finally:
            record.duration = round(time.perf_counter() - started, 3)
            with self._lock:
                self.deliveries.append(record)

    def deliveries_of(self, guid: str) -> list[FakeDelivery]:
        """Every attempt of one delivery (the first and its redeliveries), oldest first."""
        with self._lock:
            return [d for d in self.deliveries if d.guid == guid]

    def deliveries_newest_first(self) -> list[FakeDelivery]:
        """Every delivery recorded, newest first (as ``GET /app/hook/deliveries`` lists them)."""
        with self._lock:
            return sorted(self.deliveries, key=lambda d: d.id, reverse=True)

    def redeliver(self, delivery_id: int) -> bool:
        """What ``POST /app/hook/deliveries/{id}/attempts`` does: send the recorded payload
        again in the background; False when no such delivery was recorded."""
        with self._lock:
            original = next((d for d in self.deliveries if d.id == delivery_id), None)
        if original is None:
            return False

        def send() -> None:
            with contextlib.suppress(httpx.HTTPError):  # recorded as failed
                self.send_webhook(original.event, original.body, guid=original.guid,
                                  redelivery=True)

        thread = threading.Thread(target=send, daemon=True, name=f"redeliver-{delivery_id}")
        with self._lock:
            self._redelivery_threads = [t for t in self._redelivery_threads if t.is_alive()]
            self._redelivery_threads.append(thread)
        thread.start()
        return True

    def wait_for_redeliveries(self, timeout_s: float = 30.0) -> None:
        """Wait until every redelivery asked for so far has been sent and answered."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            threads = list(self._redelivery_threads)
        for t in threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))


def delivery_meta(body: bytes) -> tuple[str | None, int | None, int | None]:
    """(action, installation id, repository id) of a payload, as GitHub lists them."""
    try:
        data = json.loads(body)
    except ValueError:
        return None, None, None
    if not isinstance(data, dict):
        return None, None, None

    def ident(key: str) -> int | None:
        value = data.get(key)
        found = value.get("id") if isinstance(value, dict) else None
        return found if isinstance(found, int) else None

    action = data.get("action")
    return (action if isinstance(action, str) else None), ident("installation"), ident("repository")
