"""Exceptions of the webhook edge, mapped to HTTP answers by ``bot.app``.

The tree::

    BotError                    base of everything the bot raises on purpose
    ├── WebhookTransientError   GitHub should redeliver later (answered 503)
    │   └── QueueUnavailable    Redis or the broker could not take the job
    └── WebhookPermanentError   the request itself is wrong (answered 4xx)
        ├── MissingHeader       a required X-GitHub-* header is absent (400)
        ├── MalformedPayload    the body is not the JSON object the event needs (400)
        ├── BadSignature        X-Hub-Signature-256 does not match (401)
        ├── PayloadTooLarge     the body exceeds the configured cap (413)
        └── UnsupportedMediaType  the body is not sent as application/json (415)
"""

from __future__ import annotations


class BotError(Exception):
    """Base class for errors raised deliberately by the bot."""

    status_code = 500


class WebhookTransientError(BotError):
    """A failure that may go away if the delivery is retried."""

    status_code = 503


class QueueUnavailable(WebhookTransientError):
    """Redis or the Celery broker could not record or enqueue the job."""


class WebhookPermanentError(BotError):
    """The request is wrong; redelivering it unchanged will fail again."""

    status_code = 400


class MissingHeader(WebhookPermanentError):
    """A required header is missing."""


class MalformedPayload(WebhookPermanentError):
    """The body is not JSON, or lacks the fields its event needs."""


class BadSignature(WebhookPermanentError):
    """The HMAC signature is absent or wrong."""

    status_code = 401


class PayloadTooLarge(WebhookPermanentError):
    """The body is larger than ``SPIDER_WEBHOOK_MAX_BODY_BYTES``."""

    status_code = 413


class UnsupportedMediaType(WebhookPermanentError):
    """The delivery is not ``application/json`` (the app is registered for JSON payloads)."""

    status_code = 415
