"""The HTTP transport every GitHub call goes through, and the githubkit client built on it.

The transport counts each call by status for ``/metrics`` (``spider_github_calls``) and
rewrites an HTTP-date ``retry-after`` as seconds, the form githubkit reads.
"""

from __future__ import annotations

import email.utils
import math
import time
from typing import Any

import httpx
from githubkit import GitHub
from githubkit.cache import MemCacheStrategy

from contract.metrics import RECORDER
from contract.settings import AppSettings
from worker.github.retry import DEFAULT_RATE_LIMIT_WAIT_S

USER_AGENT = "spider-bot"


def retry_after_seconds(value: str, now: float | None = None) -> str:
    """``retry-after`` as whole seconds: GitHub sends seconds, but HTTP also allows a date
    (and githubkit reads it with ``int()``); anything unreadable means GitHub's one minute."""
    value = value.strip()
    if value.isdigit():
        return value
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return str(int(DEFAULT_RATE_LIMIT_WAIT_S))
    return str(max(0, math.ceil(when - (time.time() if now is None else now))))

class MeteredTransport(httpx.HTTPTransport):
    """Counts every GitHub call by status for ``/metrics`` and makes ``retry-after`` readable."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = super().handle_request(request)
        except httpx.TimeoutException:
            RECORDER.count("spider_github_calls", "timeout")
            raise
        except httpx.TransportError:
            RECORDER.count("spider_github_calls", "error")
            raise
        RECORDER.count("spider_github_calls", str(response.status_code))
        if "retry-after" in response.headers:
            response.headers["retry-after"] = retry_after_seconds(response.headers["retry-after"])
        return response

def github_api(settings: AppSettings, auth: Any) -> GitHub[Any]:
    """A githubkit client on the metered transport, with githubkit's own retry and caches
    off (:class:`~worker.github.retry.RetryPolicy` decides; comments are read fresh)."""
    return GitHub(
        auth,
        base_url=settings.github_api_url + "/",
        user_agent=USER_AGENT,
        timeout=settings.github_timeout_s,
        http_cache=False,  # comments must be read fresh: a cached list would duplicate ours
        cache_strategy=MemCacheStrategy(),  # githubkit's default cache is process-wide: a JWT
        # signed with another key (tests, key rotation) must never be reused
        auto_retry=False,  # RetryPolicy decides
        trust_env=False,
        transport=MeteredTransport(),
    )
