"""One issue's LLM pass: the configured model, the issue's budget, and every verdict read.

Both roles (the reader of the list and the selector of graph neighbours) ask through one
:class:`Judge`, so they share the budget, and a function judged once (pointwise) is never
asked about again. Pointwise questions go one at a time in the same order of messages
(system text, the issue, then one function), so a server's prompt cache reads the issue
once per issue.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from spider.llm.backends import Backend
from spider.llm.budget import Budget
from spider.llm.prompts import Function, attr, judge_messages
from spider.progress import LLM_READING, Progress
from spider.settings import EngineSettings

log = logging.getLogger(__name__)


@dataclass
class Judge:
    """The LLM pass of one issue (see the module)."""

    backend: Backend
    settings: EngineSettings
    issue: str
    budget: Budget
    progress: Progress | None = None
    verdicts: dict[str, float] = field(default_factory=dict)  # pointwise log-odds by id
    failure: str | None = None  # why the pass stopped early ("" never)

    @classmethod
    def start(cls, backend: Backend, settings: EngineSettings, issue: str,
              progress: Progress | None = None) -> Judge:
        """A judge with a fresh budget from the settings."""
        return cls(backend, settings, issue,
                   Budget(settings.llm_budget_tokens, settings.llm_budget_s), progress)

    @property
    def pointwise(self) -> bool:
        """Whether questions are pointwise (yes/no log-odds) rather than listwise."""
        fmt = self.settings.llm_format
        if fmt == "listwise":
            return False
        return self.backend.has_logprobs

    def judge(self, functions: Sequence[Function]) -> dict[str, float]:
        """Pointwise log-odds of each function needing an edit (those judged before are not
        asked again). Raises an LLMError when the budget runs out or the server fails; what
        was read before stays in :attr:`verdicts`."""
        todo = [f for f in dict((f.id, f) for f in functions).values()
                if f.id not in self.verdicts]
        for n, fn in enumerate(todo):
            if self.progress is not None:
                self.progress(LLM_READING, n, len(todo), fn.name)
            messages = judge_messages(self.issue, fn, self.settings.llm_code_chars)
            self.verdicts[fn.id] = self.backend.yes_no(messages, self.budget)
        if self.progress is not None and todo:
            self.progress(LLM_READING, len(todo), len(todo), "")
        return {f.id: self.verdicts[f.id] for f in functions}

    def choose(self, system: str, user: str, key: str, ids: Sequence[str]) -> list[str]:
        """A listwise answer: the offered ``ids`` the model named, in its order, deduplicated."""
        # the model may repeat an id as the prompt listed it (escaped): map it back
        offered = {**{attr(i): i for i in ids}, **{i: i for i in ids}}
        answer = self.backend.choose(system, user, key, ids, self.budget)
        kept = list(dict.fromkeys(offered[i] for i in answer if i in offered))
        if len(kept) < len(answer):
            log.info("LLM answer: dropped %d ids never offered", len(answer) - len(kept))
        return kept

    def fail(self, exc: Exception) -> None:
        """Record why the pass stopped (the first reason is kept)."""
        if self.failure is None:
            self.failure = f"{type(exc).__name__}: {exc}"[:300]
        log.warning("LLM pass stopped", extra={"reason": self.failure,
                                               "model": self.backend.model})


__all__ = ["Judge"]
