"""One issue's allowance of LLM tokens and seconds, and the account of what was spent.

Every request of the LLM roles (reader, selector) is charged here; once either limit is
reached the next request is refused with :class:`~spider.errors.LLMBudgetExhausted`, and
the role that asked keeps the ranker's list. Safe to share between threads (the Claude
selector issues its calls concurrently).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from spider.errors import LLMBudgetExhausted


@dataclass
class Usage:
    """What the LLM pass of one issue spent (the record the comment and the bench read)."""

    calls: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens the server reused from its prompt cache
    seconds: float = 0.0

    def to_dict(self) -> dict[str, float]:
        """JSON form."""
        return {
            "calls": self.calls,
            "failures": self.failures,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class Budget:
    """Limits of one issue's LLM pass; :meth:`check` before a request, :meth:`charge` after."""

    max_tokens: int
    max_seconds: float
    usage: Usage = field(default_factory=Usage)
    started: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def remaining_s(self) -> float:
        """Seconds left (never below zero): a request's timeout is at most this."""
        return max(0.0, self.max_seconds - (time.monotonic() - self.started))

    def check(self) -> None:
        """Raise LLMBudgetExhausted when no further request may start."""
        with self._lock:
            spent = self.usage.prompt_tokens + self.usage.completion_tokens
        if spent >= self.max_tokens:
            raise LLMBudgetExhausted(f"{spent} of {self.max_tokens} LLM tokens spent")
        if self.remaining_s() <= 0:
            raise LLMBudgetExhausted(f"the LLM pass ran its {self.max_seconds:g} s")

    def answered(self, started: float, prompt: int | None, completion: int | None,
                 cached: int | None) -> None:
        """Record a request answered with these token counts (as the server reported them:
        None or missing counts as 0); it started at monotonic ``started``."""
        self.charge(prompt=int(prompt or 0), completion=int(completion or 0),
                    cached=int(cached or 0), seconds=time.monotonic() - started)

    def failed_request(self, started: float) -> None:
        """Record a request that got no answer (it started at monotonic ``started``)."""
        self.charge(prompt=0, completion=0, cached=0, seconds=time.monotonic() - started,
                    failed=True)

    def charge(self, *, prompt: int, completion: int, cached: int, seconds: float,
               failed: bool = False) -> None:
        """Record one request (``failed``: it produced no verdict)."""
        with self._lock:
            u = self.usage
            u.calls += 1
            u.failures += int(failed)
            u.prompt_tokens += prompt
            u.completion_tokens += completion
            u.cached_tokens += cached
            u.seconds = time.monotonic() - self.started
