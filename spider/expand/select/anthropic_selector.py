"""The paper's selector with Claude: one Messages API call per centre, issued concurrently.

It is :class:`~spider.expand.select.llm_selector.LLMSelector` over the Anthropic backend
(listwise: Claude returns no log-probabilities). The issue text is untrusted: it is
fenced as data in the prompt, the answer must be strict JSON, and any id that was not
offered is dropped. A call that fails after the client's retries admits nothing for that
centre.
"""

from __future__ import annotations

from typing import Any

from spider.expand.select.llm_selector import LLMSelector
from spider.llm.backends import AnthropicBackend, parse_ids
from spider.llm.judge import Judge
from spider.settings import EngineSettings


def parse_answer(text: str) -> list[str]:
    """Ids from the model's JSON answer; [] when it is not valid JSON of the expected shape."""
    return parse_ids(text, "relevant")


class AnthropicSelector(LLMSelector):
    """Claude as the selector (temperature 0.1, zero-shot, JSON ids), as in the paper."""

    def __init__(self, settings: EngineSettings, client: Any | None = None,
                 judge: Judge | None = None) -> None:
        backend = judge.backend if judge is not None else AnthropicBackend(settings, client)
        super().__init__(backend, settings, judge)
