"""Webhook signatures: HMAC-SHA256 of the raw body, as GitHub sends in ``X-Hub-Signature-256``.

Pure functions. SHA-1 (``X-Hub-Signature``) is never accepted.
"""

from __future__ import annotations

import hashlib
import hmac

PREFIX = "sha256="


def sign(secret: str | bytes, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` header value for ``body``."""
    key = secret.encode() if isinstance(secret, str) else secret
    return PREFIX + hmac.new(key, body, hashlib.sha256).hexdigest()


def verify(secret: str | bytes, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is the SHA-256 signature of ``body`` (constant-time comparison)."""
    if not header or not header.startswith(PREFIX):
        return False
    expected = sign(secret, body)
    return hmac.compare_digest(expected.encode(), header.strip().encode("ascii", "replace"))
