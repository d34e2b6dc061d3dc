"""How one GitHub call is retried in-process, and githubkit's errors mapped onto the worker's.

5xx and network errors back off exponentially with full jitter; rate limits wait exactly
``retry-after`` / ``x-ratelimit-reset`` when that is short (up to
``SPIDER_GITHUB_MAX_INLINE_WAIT_S``), and otherwise surface as :class:`RateLimited` so the
task is rescheduled; other 4xx are permanent.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from githubkit.exception import RateLimitExceeded, RequestError, RequestFailed
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from contract.settings import AppSettings
from worker.errors import (
    GitHubRefused,
    GitHubUnanswered,
    GitHubUnavailable,
    RateLimited,
    TokenRejected,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

RATE_LIMIT_JITTER_S = 1.0  # spread workers that were told the same reset time
DEFAULT_RATE_LIMIT_WAIT_S = 60.0  # GitHub's advice when a limit comes without a wait


def translate(exc: Exception) -> Exception:
    """Map githubkit's exceptions onto the worker's transient/permanent tree."""
    if isinstance(exc, RateLimitExceeded):
        return RateLimited(
            f"GitHub rate limit ({type(exc).__name__})", exc.retry_after.total_seconds()
        )
    if isinstance(exc, RequestFailed):
        status = exc.response.status_code
        what = f"{exc.request.method} {exc.request.url.path} -> {status}"
        if status >= 500:
            return GitHubUnavailable(what)
        if status == 401:
            return TokenRejected(what)
        if status == 429 or (status == 403 and "rate limit" in exc.response.text.lower()):
            return RateLimited(what, DEFAULT_RATE_LIMIT_WAIT_S)  # a limit without a wait
        return GitHubRefused(what, status)
    if isinstance(exc, RequestError):
        return GitHubUnanswered(f"GitHub unreachable: {type(exc.exc).__name__}")
    return exc

class RetryPolicy:
    """How one GitHub call is retried in-process (tenacity), per the module docstring."""

    def __init__(self, settings: AppSettings, sleep: Callable[[float], None] = time.sleep) -> None:
        self.attempts = settings.github_attempts
        self.backoff_s = settings.github_backoff_s
        self.max_wait_s = settings.github_max_inline_wait_s
        self.sleep = sleep

    def _retryable(self, exc: BaseException, only: type[BaseException] | None = None) -> bool:
        if only is not None and not isinstance(exc, only):
            return False
        if isinstance(exc, RateLimited):
            return (exc.retry_after or 0) <= self.max_wait_s
        return isinstance(exc, GitHubUnavailable)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, RateLimited):
            return (exc.retry_after or 0) + random.uniform(0, RATE_LIMIT_JITTER_S)
        # full jitter: uniform in [0, base * 2^n] avoids workers retrying in lockstep
        return random.uniform(0, self.backoff_s * 2 ** (state.attempt_number - 1))

    def call(self, what: str, fn: Callable[[], T], only: type[BaseException] | None = None) -> T:
        """Run ``fn`` with retries; raise the worker's error when they are used up.
        With ``only``, other errors are not retried here (they were, inside ``fn``)."""

        def attempt() -> T:
            try:
                return fn()
            except (RequestError, RateLimitExceeded) as exc:
                raise translate(exc) from exc

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            log.warning(
                "GitHub call failed, retrying",
                extra={"call": what, "error": str(exc), "attempt": state.attempt_number,
                       "wait_s": round(state.upcoming_sleep, 2)},
            )

        retrying = Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=self._wait,
            retry=retry_if_exception(lambda exc: self._retryable(exc, only)),
            sleep=self.sleep,
            before_sleep=before_sleep,
            reraise=True,
        )
        return retrying(attempt)
