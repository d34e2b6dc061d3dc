"""Selectors that judge graph neighbours: offline (default), anthropic, none, oracle."""

from __future__ import annotations

from spider.errors import InvalidSetting
from spider.select.base import Candidate, NoSelector, SelectionRequest, Selector
from spider.select.offline import OfflineSelector
from spider.select.oracle import OracleSelector
from spider.settings import EngineSettings


def make_selector(settings: EngineSettings) -> Selector:
    """The selector named by ``settings.selector`` (oracle needs ground truth: build it directly)."""
    if settings.selector == "none":
        return NoSelector()
    if settings.selector == "offline":
        return OfflineSelector()
    if settings.selector == "anthropic":
        from spider.select.anthropic_selector import AnthropicSelector

        return AnthropicSelector(settings)
    raise InvalidSetting(
        f"selector {settings.selector!r} cannot be built from settings alone "
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
