"""The reader role: the LLM re-reads the ranker's top functions with the issue and the
list is re-sorted by what it judged, mixed with the ranker's own order.

Pointwise (a server with log-probabilities): each function's score is
``llm_read_weight × (yes/no log-odds) − ln(rank)``, so a function moves up only as far as
the model's confidence pays for. Listwise (Claude): reciprocal-rank fusion of the ranker's
order and the model's. Either way only the functions offered are re-ordered: the model
cannot add one, and an answer that names none leaves the order as it was.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from spider.errors import LLMAnswerInvalid
from spider.llm.judge import Judge
from spider.llm.prompts import READ_SYSTEM, Function, read_prompt

READ_RRF_K = 10  # listwise fusion constant: the same head-favouring k as the first stage
LISTWISE_WEIGHT = 1.0  # the model's order counts as much as the ranker's (listwise only)


@dataclass(frozen=True)
class Reading:
    """What the reader did: the new order of the ids it read and each one's log-odds."""

    order: list[str]
    log_odds: dict[str, float]  # pointwise verdicts (empty when listwise)
    listed: list[str]  # listwise: the ids the model named, in its order

    def raised(self, before: Sequence[str]) -> dict[str, int]:
        """Ids the reading moved up, with the 1-based rank each had before."""
        was = {fid: r for r, fid in enumerate(before, start=1)}
        return {fid: was[fid] for r, fid in enumerate(self.order, start=1) if r < was[fid]}


def mix_pointwise(ids: Sequence[str], log_odds: dict[str, float], weight: float) -> list[str]:
    """``ids`` (ranker's order) re-sorted by weight × log-odds − ln(rank); ties keep order."""
    def key(item: tuple[int, str]) -> float:
        rank, fid = item
        return -(weight * log_odds.get(fid, 0.0) - math.log(rank))

    return [fid for _, fid in sorted(enumerate(ids, start=1), key=key)]


def mix_listwise(ids: Sequence[str], listed: Sequence[str]) -> list[str]:
    """``ids`` re-sorted by reciprocal-rank fusion of their order and the model's."""
    llm_rank = {fid: r for r, fid in enumerate(listed, start=1)}

    def score(item: tuple[int, str]) -> float:
        rank, fid = item
        s = 1.0 / (READ_RRF_K + rank)
        if fid in llm_rank:
            s += LISTWISE_WEIGHT / (READ_RRF_K + llm_rank[fid])
        return -s

    return [fid for _, fid in sorted(enumerate(ids, start=1), key=score)]


def read_list(judge: Judge, functions: Sequence[Function]) -> Reading:
    """Re-read ``functions`` (the ranker's top, best first) and re-order them. Raises an
    LLMError when the pass cannot finish: then the caller keeps the ranker's order."""
    ids = [f.id for f in functions]
    if judge.pointwise:
        try:
            verdicts = judge.judge(functions)
            weight = judge.settings.llm_read_weight
            return Reading(mix_pointwise(ids, verdicts, weight), verdicts, [])
        except LLMAnswerInvalid:
            if judge.backend.has_logprobs:  # a bad answer from a server that has them
                raise
            # the server gives no log-probabilities after all: ask for a list instead
    prompt = read_prompt(judge.issue, functions, judge.settings.llm_code_chars)
    listed = judge.choose(READ_SYSTEM, prompt, "ranking", ids)
    return Reading(mix_listwise(ids, listed), {}, listed)
