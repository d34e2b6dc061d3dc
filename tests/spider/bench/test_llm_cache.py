"""The benchmark's store of LLM answers: a question asked again is answered from the store,
charged what it cost the first time, and never reaches the model."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from spider.bench.llm_cache import CachedBackend
from spider.llm.budget import Budget

MESSAGES = [{"role": "user", "content": "Must f be edited? Answer Yes or No."}]


class CountingModel:
    """A backend that takes a known time and reports known tokens, counting its calls."""

    kind = "llm"
    model = "counting"
    has_logprobs = True

    def __init__(self) -> None:
        self.calls = 0

    def yes_no(self, messages: list[dict[str, str]], budget: Budget) -> float:
        self.calls += 1
        started = time.monotonic()
        time.sleep(0.02)
        budget.answered(started, 120, 1, 80)
        return 1.25

    def choose(self, system: str, user: str, key: str, ids: Sequence[str],
               budget: Budget) -> list[str]:
        self.calls += 1
        budget.answered(time.monotonic(), 300, 20, 0)
        return list(ids)[:1]


def test_a_repeated_question_costs_what_it_cost_and_asks_nothing(tmp_path: Path) -> None:
    model = CountingModel()
    store = CachedBackend(model, tmp_path / "llm-answers.sqlite")
    first = Budget(10_000, 60.0)
    assert store.yes_no(MESSAGES, first) == 1.25
    again = Budget(10_000, 60.0)
    assert store.yes_no(MESSAGES, again) == 1.25
    assert model.calls == 1 and store.hits == 1
    assert (again.usage.prompt_tokens, again.usage.cached_tokens) == (120, 80)
    assert again.usage.seconds >= 0.02  # the seconds the first answer took count again
    # a new run over the same file asks nothing either
    reopened = CachedBackend(model, tmp_path / "llm-answers.sqlite")
    assert reopened.choose("s", "u", "ranking", ["a", "b"], Budget(10_000, 60.0)) == ["a"]
    assert reopened.choose("s", "u", "ranking", ["a", "b"], Budget(10_000, 60.0)) == ["a"]
    assert model.calls == 2
