"""The Celery configuration the bot (publisher) and the worker (consumer) must agree on.

A plain mapping for ``Celery.conf.update``: the broker and result store, the queue, the
serializers and the Redis transport options (with Sentinel, the master's name: see
``contract.redis_client``; the visibility timeout decides when an
unacknowledged job is handed out again, so both sides read it from the same settings).
This module does not import Celery; ``bot.queue`` and ``worker.celery_app`` do.
"""

from __future__ import annotations

from typing import Any

from contract.jobs import QUEUE
from contract.redis_client import celery_redis_options
from contract.settings import AppSettings

BROKER_CONNECT_TIMEOUT_S = 5  # fail fast when Redis is away rather than hang a webhook


def celery_conf(settings: AppSettings) -> dict[str, Any]:
    """Celery settings shared by every process that publishes or consumes spider jobs."""
    redis_options = celery_redis_options(settings)  # Sentinel: the master's name
    return {
        "broker_url": settings.redis_url,
        "result_backend": settings.redis_url,
        "broker_transport_options": {
            "visibility_timeout": settings.visibility_timeout_s,
            # look for messages of dead workers every interval (kombu's default is 10 s x 10)
            "unacked_restore_interval": settings.broker_restore_interval_s,
            "unacked_restore_throttle": 1,
            # a worker consuming several queues always takes from the first non-empty one in
            # the order it consumes them (contract.jobs.QUEUES: issues, LLM passes, fixes, indexing);
            # kombu's default rotates between them, letting a burst of index jobs go first
            "queue_order_strategy": "priority",
            **redis_options,
        },
        "result_backend_transport_options": dict(redis_options),
        "broker_connection_timeout": BROKER_CONNECT_TIMEOUT_S,
        "broker_connection_retry_on_startup": True,
        "redis_socket_timeout": BROKER_CONNECT_TIMEOUT_S * 2,
        "task_default_queue": QUEUE,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
    }
