"""Remember webhook deliveries in Redis so a redelivered ``X-GitHub-Delivery`` runs once.

The key is the ``X-GitHub-Delivery`` guid, which a redelivery keeps (only the delivery's
numeric id in GitHub's list changes). A claim is first short-lived (``PENDING_TTL_S``) and
is made long (the retention of redeliveries) once the job is queued: if Redis fails
between the claim and the enqueue, and the release fails too, the claim lapses by itself
and a redelivery of the same guid is queued instead of being answered ``duplicate``.
"""

from __future__ import annotations

import contextlib
import re

import redis

from bot.errors import MalformedPayload, QueueUnavailable

KEY_PREFIX = "spider:delivery:"
PENDING_TTL_S = 30  # longer than a claim-to-enqueue (publishing gives up within seconds);
# the redelivery job waits longer than this before it asks again (worker.redeliver.MIN_AGE_S)
_DELIVERY_ID = re.compile(r"^[A-Za-z0-9-]{1,100}$")  # GitHub sends a GUID


def check_delivery_id(delivery_id: str) -> str:
    """The delivery id if it is GUID-like, else MalformedPayload (it becomes a Redis key)."""
    if not _DELIVERY_ID.match(delivery_id):
        raise MalformedPayload("X-GitHub-Delivery is not a GUID")
    return delivery_id


class DeliveryLedger:
    """Claims delivery ids with ``SET NX EX``; a claim is released if enqueueing fails."""

    def __init__(self, client: redis.Redis, ttl_s: int) -> None:
        self._redis = client
        self._ttl_s = ttl_s

    def claim(self, delivery_id: str) -> bool:
        """True the first time a delivery id is seen within the TTL, False afterwards."""
        try:
            return bool(self._redis.set(KEY_PREFIX + delivery_id, "1", nx=True,
                                        ex=min(PENDING_TTL_S, self._ttl_s)))
        except redis.RedisError as exc:
            raise QueueUnavailable(f"redis: {type(exc).__name__}") from exc

    def confirm(self, delivery_id: str) -> bool:
        """The job is queued: remember the claim for the whole TTL. False if Redis failed
        (the job is queued all the same; a later redelivery would run it again, and a job
        is idempotent: it edits its one comment)."""
        try:
            return bool(self._redis.set(KEY_PREFIX + delivery_id, "1", xx=True, ex=self._ttl_s))
        except redis.RedisError:
            return False

    def release(self, delivery_id: str) -> None:
        """Forget a claim so a redelivery can run (best effort)."""
        with contextlib.suppress(redis.RedisError):
            self._redis.delete(KEY_PREFIX + delivery_id)
