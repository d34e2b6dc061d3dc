"""Selectors that judge graph neighbours: an LLM (an OpenAI-compatible server, ``llm``, or
Claude, ``anthropic``: the default when one is configured with its select role on),
offline (the default otherwise), none, oracle."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spider.errors import InvalidSetting
from spider.expand.select.base import Candidate, NoSelector, SelectionRequest, Selector
from spider.expand.select.offline import OfflineSelector
from spider.expand.select.oracle import OracleSelector
from spider.settings import EngineSettings

if TYPE_CHECKING:
    from spider.llm.judge import Judge


def make_selector(settings: EngineSettings, judge: Judge | None = None) -> Selector:
    """The selector named by ``settings.selector``, ``auto`` being the configured LLM when
    its select role is on and offline otherwise (oracle needs ground truth: build it
    directly). ``judge``: the issue's LLM pass, shared with the reader."""
    name = settings.selector_name
    if name == "none":
        return NoSelector()
    if name == "offline":
        return OfflineSelector()
    if name in ("anthropic", "llm"):
        from spider.expand.select.llm_selector import LLMSelector
        from spider.llm.backends import make_backend

        if judge is not None and judge.backend.kind == name:
            return LLMSelector(judge.backend, settings, judge)
        return LLMSelector(make_backend(settings, name), settings)
    raise InvalidSetting(
        f"selector {name!r} cannot be built from settings alone "
        "(the oracle needs ground truth; it is for benchmarks)"
    )


__all__ = [
    "Candidate",
    "NoSelector",
    "OfflineSelector",
    "OracleSelector",
    "SelectionRequest",
    "Selector",
    "make_selector",
]
