"""Remember webhook deliveries in Redis so a redelivered ``X-GitHub-Delivery`` runs once."""

from __future__ import annotations

import contextlib
import re

import redis

from bot.errors import MalformedPayload, QueueUnavailable

KEY_PREFIX = "spider:delivery:"
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
            return bool(self._redis.set(KEY_PREFIX + delivery_id, "1", nx=True, ex=self._ttl_s))
        except redis.RedisError as exc:
            raise QueueUnavailable(f"redis: {type(exc).__name__}") from exc

    def release(self, delivery_id: str) -> None:
        """Forget a claim so a redelivery can run (best effort)."""
        with contextlib.suppress(redis.RedisError):
            self._redis.delete(KEY_PREFIX + delivery_id)
