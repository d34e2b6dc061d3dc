"""The paper's selector with an LLM: judge which graph neighbours of a centre belong in
the list, through any configured backend (an OpenAI-compatible server, or Claude).

Pointwise (a server with log-probabilities): every candidate is asked the reader's yes/no
question on its own (a function already read is not asked again) and admitted when the
log-odds reach ``llm_admit_log_odds``; per centre only the best-ranked
``LLM_SELECT_PER_CENTRE`` candidates outside the list are asked, which bounds the cost on
a CPU. Listwise (Claude, as in the paper): one call per centre with the centre's code and
its candidates, answered with JSON ids; calls run concurrently. A call that fails admits
nothing for its centre and is counted; the first-stage ranking stands.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from spider.errors import LLMError
from spider.expand.select.base import Candidate, SelectionRequest, Selector
from spider.llm.backends import Backend
from spider.llm.judge import Judge
from spider.llm.prompts import SELECT_SYSTEM, Function, select_prompt
from spider.settings import EngineSettings

log = logging.getLogger(__name__)

MAX_CONCURRENCY = 8  # listwise calls at once (C is 5 by default); a local server gets one
LLM_SELECT_PER_CENTRE = 5  # pointwise: candidates outside the list asked about per centre


def as_function(fid: str, text: str) -> Function:
    """A candidate or centre as the prompts show it (path and name from its id)."""
    path, _, name = fid.partition(":")
    return Function(fid, path, name or path, text)


class LLMSelector(Selector):
    """Judge neighbours through ``backend``: with the issue's ``judge`` when the caller
    runs an LLM pass (sharing its budget and verdicts with the reader), else with a pass
    of its own started for each issue it is asked about."""

    def __init__(self, backend: Backend, settings: EngineSettings,
                 judge: Judge | None = None) -> None:
        self.settings = settings
        self.judge_ = judge or Judge.start(backend, settings, "")
        self._own_judge = judge is None
        self.name = backend.kind
        self.failures = 0
        self._lock = threading.Lock()  # listwise calls run in a thread pool

    def _failed(self, n: int, exc: Exception) -> None:
        with self._lock:
            self.failures += n
        self.judge_.fail(exc)

    def _pointwise(self, requests: Sequence[SelectionRequest]) -> list[list[str]]:
        asked: list[list[Candidate]] = []
        for req in requests:
            outside = [c for c in req.candidates if c.rank > req.budget_rank]
            asked.append(outside[:LLM_SELECT_PER_CENTRE])
        everyone = [as_function(c.id, c.text) for cands in asked for c in cands]
        try:
            verdicts = self.judge_.judge(everyone)
        except LLMError as exc:
            self._failed(len(requests), exc)
            return [[] for _ in requests]
        bar = self.judge_.settings.llm_admit_log_odds
        return [[c.id for c in cands if verdicts.get(c.id, bar - 1) >= bar] for cands in asked]

    def _listwise_one(self, req: SelectionRequest) -> list[str]:
        if not req.candidates:
            return []
        s = self.judge_.settings
        prompt = select_prompt(
            req.issue.text, as_function(req.centre, req.centre_text),
            [(as_function(c.id, c.text), c.edge, c.hops) for c in req.candidates],
            s.candidate_chars, s.max_issue_chars,
        )
        try:
            return self.judge_.choose(SELECT_SYSTEM, prompt, "relevant",
                                      [c.id for c in req.candidates])
        except LLMError as exc:
            self._failed(1, exc)
            return []

    def _select(self, requests: Sequence[SelectionRequest]) -> list[list[str]]:
        if self._own_judge and requests:  # one pass (and budget) per issue judged
            self.judge_ = Judge.start(self.judge_.backend, self.settings,
                                      requests[0].issue.text)
        if self.judge_.pointwise:
            return self._pointwise(requests)
        workers = MAX_CONCURRENCY if self.name == "anthropic" else 1
        workers = max(1, min(workers, len(requests)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(self._listwise_one, requests))
