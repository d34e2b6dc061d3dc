"""Engine settings: one pydantic-settings class read from ``SPIDER_*`` variables, composed of
one class per concern.

- :mod:`spider.settings.index`: what an index reads when it is built (the graph, the encoder,
  history, where vectors live); :data:`INDEX_SETTINGS` is derived from it.
- :mod:`spider.settings.query`: what a query reads (budget and expansion, the first stage,
  the ranking, the cold path).
- :mod:`spider.settings.llm`: the LLM roles (Claude, or an OpenAI-compatible server).

Every field keeps its flat name (``settings.k``, ``SPIDER_K``, ``k:`` in a repository's
``.github/spider.yml``): the concern is where a field is declared, not a path to it.
Every ranking weight, cap and threshold the engine uses lives here (or in a named
constant beside the code that uses it) with a one-line reason.
"""

from __future__ import annotations

from pydantic import model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from spider.errors import InvalidSetting
from spider.settings.choices import (
    AUTO,
    EDGE_NAMES,
    EXPANDABLE_EDGES,
    LLM_EDGES,
    LLM_ROLE_NAMES,
    EncoderBackend,
    FirstStage,
    LLMFormat,
    LLMRole,
    SelectorName,
    parse_edges,
    parse_edges_setting,
    parse_name_set,
    parse_roles,
)
from spider.settings.concern import Concern
from spider.settings.excludes import (
    BUILD_EXCLUDES,
    DEFAULT_EXCLUDES,
    GENERATED_EXCLUDES,
    TEST_EXCLUDES,
    VENDORED_EXCLUDES,
)
from spider.settings.index import (
    GRAPH_SETTINGS,
    INDEX_SETTINGS,
    EncoderSettings,
    GraphSettings,
    HistorySettings,
    IndexSettings,
    StoreSettings,
    WorkSettings,
    onnx_exportable,
)
from spider.settings.llm import (
    PAYING_ROLES,
    AnthropicSettings,
    LLMServerSettings,
    LLMSettings,
)
from spider.settings.query import (
    COLD_FULL_RATIO,
    DEFAULT_COLD_POOL,
    ColdStartSettings,
    ExpansionSettings,
    FirstStageSettings,
    QuerySettings,
    RankingSettings,
    embeds_whole,
)

__all__ = [
    "AUTO", "BUILD_EXCLUDES", "COLD_FULL_RATIO", "CONCERNS", "DEFAULT_COLD_POOL",
    "DEFAULT_EXCLUDES", "EDGE_NAMES", "EXPANDABLE_EDGES", "GENERATED_EXCLUDES",
    "GRAPH_SETTINGS", "INDEX_SETTINGS", "LLM_EDGES", "LLM_ROLE_NAMES", "PAYING_ROLES",
    "TEST_EXCLUDES", "VENDORED_EXCLUDES", "AnthropicSettings", "ColdStartSettings",
    "EncoderBackend", "EncoderSettings", "EngineSettings", "ExpansionSettings", "FirstStage",
    "FirstStageSettings", "GraphSettings", "HistorySettings", "IndexSettings", "LLMFormat",
    "LLMRole", "LLMServerSettings", "LLMSettings", "QuerySettings", "RankingSettings",
    "SelectorName", "StoreSettings", "WorkSettings", "embeds_whole", "onnx_exportable", "parse_edges",
    "parse_edges_setting", "parse_name_set", "parse_roles",
]  # fmt: skip

# The concerns in the order a reader meets them (docs/configuration.md has one table each).
CONCERNS: tuple[type[Concern], ...] = (
    ExpansionSettings, FirstStageSettings, RankingSettings, ColdStartSettings,
    GraphSettings, EncoderSettings, HistorySettings, StoreSettings, WorkSettings,
    AnthropicSettings, LLMServerSettings,
)  # fmt: skip


class EngineSettings(BaseSettings, QuerySettings, IndexSettings, LLMSettings):
    """Settings of the localization engine (``SPIDER_`` environment variables): the query's,
    the index's and the LLM's concerns in one flat namespace."""

    model_config = SettingsConfigDict(env_prefix="SPIDER_", extra="ignore", defer_build=False)

    @model_validator(mode="after")
    def _delta_needs_the_bundled_model(self) -> EngineSettings:
        if self.model.strip() and self.encoder_delta.strip().lower() not in ("", "none"):
            raise InvalidSetting(
                f"encoder_delta {self.encoder_delta!r} tunes the bundled model, but model is "
                f"{self.model!r}: unset SPIDER_ENCODER_DELTA or SPIDER_MODEL"
            )
        delta_on = self.encoder_delta.strip().lower() not in ("", "none")
        if delta_on and self.query_adapter.strip().lower() not in ("", "none"):
            raise InvalidSetting(
                f"query_adapter {self.query_adapter!r} maps the untuned model's query vectors, "
                f"but encoder_delta {self.encoder_delta!r} changes them: unset "
                "SPIDER_QUERY_ADAPTER or SPIDER_ENCODER_DELTA"
            )
        return self

    @property
    def active_llm_roles(self) -> tuple[str, ...]:
        """The LLM roles that run: :meth:`configured_roles`, the select role only when the
        selector that runs is an LLM."""
        return tuple(
            r for r in self.configured_roles()
            if r != "select" or self.selector_name in ("llm", "anthropic")
        )

    @property
    def selector_name(self) -> str:
        """The selector that runs: ``auto`` made concrete: the configured LLM when its
        select role is on (:attr:`llm_backend`), else offline."""
        if self.selector != AUTO:
            return self.selector
        backend = self.llm_backend
        if backend is None:
            return "offline"
        return backend if "select" in self.configured_roles() else "offline"

    def expansion_edges(self, selector: str | None = None) -> tuple[str, ...]:
        """The edge types expanded: the explicit ``edges``, or for ``auto`` :data:`LLM_EDGES`
        when ``selector`` (default: :attr:`selector_name`) is an LLM and none otherwise."""
        if self.edges != AUTO:
            return tuple(self.edges)
        return LLM_EDGES if (selector or self.selector_name) in ("anthropic", "llm") else ()

    def resolved(self, selector: str | None = None) -> EngineSettings:
        """These settings with ``auto`` made concrete (the selector, and the edges for
        ``selector``, the name of the one that runs when the caller built it), so that every
        later stage reads plain values; the same object when nothing is auto."""
        update: dict[str, object] = {}
        if self.selector == AUTO:
            update["selector"] = self.selector_name
        if self.llm_roles == AUTO:
            update["llm_roles"] = self.active_llm_roles
        if self.edges == AUTO:
            update["edges"] = self.expansion_edges(selector)
        return self.model_copy(update=update) if update else self

    @property
    def expands(self) -> bool:
        """Whether graph expansion runs at all (some edge type and at least one centre)."""
        return bool(self.expansion_edges()) and self.centres > 0 and self.selector_name != "none"

    def index_part(self) -> IndexSettings:
        """The settings an index reads, alone (the worker's index cache key)."""
        return IndexSettings.model_validate(
            {name: getattr(self, name) for name in IndexSettings.model_fields}
        )
