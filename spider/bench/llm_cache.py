"""A benchmark-side store of LLM answers, so that the roles measured on one run share
what the model was asked (a function judged for the reader is the same question for the
selector) and a resumed run asks nothing twice.

Every answer is kept with what it cost the first time (tokens, cached tokens, seconds);
a repeat is charged the same to the issue's budget, so per-issue costs stay those of a
run that asked for real. Keys are the model, the kind of question and its full text.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spider.llm.backends import Backend
from spider.llm.budget import Budget

SCHEMA = """CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY, answer TEXT NOT NULL, prompt INTEGER, completion INTEGER,
    cached INTEGER, seconds REAL)"""


@dataclass
class CachedBackend:
    """``inner`` with its answers kept in an SQLite file (see the module)."""

    inner: Backend
    path: Path
    hits: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute(SCHEMA)
        self.kind = self.inner.kind
        self.model = self.inner.model

    @property
    def has_logprobs(self) -> bool:
        """As the inner backend."""
        return self.inner.has_logprobs

    def _key(self, *parts: Any) -> str:
        raw = json.dumps([self.kind, self.model, *parts], sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()

    def _ask(self, key: str, budget: Budget, call: Any) -> Any:
        with self._lock:
            row = self._db.execute(
                "SELECT answer, prompt, completion, cached, seconds FROM answers WHERE key=?",
                (key,),
            ).fetchone()
        if row is not None:
            budget.check()
            budget.started -= row[4]  # the seconds it took the first time count again
            budget.charge(prompt=row[1], completion=row[2], cached=row[3], seconds=row[4])
            self.hits += 1
            return json.loads(row[0])
        before = replace(budget.usage)
        t0 = time.monotonic()
        answer = call()
        after = budget.usage
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?)",
                (key, json.dumps(answer), after.prompt_tokens - before.prompt_tokens,
                 after.completion_tokens - before.completion_tokens,
                 after.cached_tokens - before.cached_tokens, time.monotonic() - t0),
            )
            self._db.commit()
        return answer

    def yes_no(self, messages: list[dict[str, str]], budget: Budget) -> float:
        """The inner answer, or the kept one."""
        return float(self._ask(self._key("yes_no", messages), budget,
                               lambda: self.inner.yes_no(messages, budget)))

    def choose(self, system: str, user: str, key: str, ids: Sequence[str],
               budget: Budget) -> list[str]:
        """The inner answer, or the kept one."""
        return list(self._ask(self._key("choose", system, user, key, list(ids)), budget,
                              lambda: self.inner.choose(system, user, key, ids, budget)))
