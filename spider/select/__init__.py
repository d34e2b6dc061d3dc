"""Selectors that judge graph neighbours: anthropic (the default with a key), offline (the
default without one), none, oracle."""

from __future__ import annotations

from spider.errors import InvalidSetting
from spider.select.base import Candidate, NoSelector, SelectionRequest, Selector
from spider.select.offline import OfflineSelector
from spider.select.oracle import OracleSelector
from spider.settings import EngineSettings


def make_selector(settings: EngineSettings) -> Selector:
    """The selector named by ``settings.selector``, ``auto`` being anthropic when a key is
    configured and offline otherwise (oracle needs ground truth: build it directly)."""
    name = settings.selector_name
    if name == "none":
        return NoSelector()
    if name == "offline":
        return OfflineSelector()
    if name == "anthropic":
        from spider.select.anthropic_selector import AnthropicSelector

        return AnthropicSelector(settings)
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
