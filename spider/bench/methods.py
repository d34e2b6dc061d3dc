"""Benchmark methods: a name -> engine-settings overrides table, plus ``name:key=value`` specs.

``--method dense,spider-both:depth=2,centres=3,bm25`` gives three methods; a comma-separated
token holding ``=`` (and no ``:``) continues the previous method's overrides. Edge lists
inside overrides use ``+`` (``edges=contains+invokes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from spider.errors import InputError
from spider.settings import DEFAULT_COLD_POOL, INDEX_SETTINGS, EngineSettings

CONTAINS = ("contains",)
INVOKES = ("invokes",)
BOTH = ("contains", "invokes")

# name -> overrides of EngineSettings. "oracle" additionally swaps in the OracleSelector.
METHODS: dict[str, dict[str, Any]] = {
    "bm25": {"first_stage": "bm25", "selector": "none"},
    "dense": {"first_stage": "dense", "selector": "none"},
    # plain reciprocal-rank fusion of dense and BM25, nothing else
    "hybrid": {
        "first_stage": "hybrid",
        "signals": False,
        "fusion_k": 60,
        "fusion_dense": 1.0,
        "fusion_bm25": 1.0,
        "fusion_file": 0.0,
        "selector": "none",
        "rerank": False,
    },
    # the product's first stage: tuned fusion + file-level BM25 + issue signals, no expansion
    "first-stage": {"selector": "none", "rerank": False},
    # that first stage, then expansion with the offline selector, paper placement
    "expand-contains": {
        "edges": CONTAINS,
        "selector": "offline",
        "placement": "centre",
        "rerank": False,
    },
    "expand-both": {"edges": BOTH, "selector": "offline", "placement": "centre", "rerank": False},
    # the first stage with its top K re-sorted by the head model (spider.rank.rerank)
    "rerank": {"selector": "none", "ranker": "head"},
    # the first stage's top N re-scored by the learned pool ranker (spider.rank.pool_rank)
    "pool-rank": {"selector": "none", "ranker": "pool"},
    "spider-contains": {"first_stage": "dense", "edges": CONTAINS, "selector": "offline"},
    "spider-invokes": {"first_stage": "dense", "edges": INVOKES, "selector": "offline"},
    "spider-both": {"first_stage": "dense", "edges": BOTH, "selector": "offline"},
    # the pool ranker's list, then expansion with the offline selector (opt-in in the product)
    "expand-pool": {"edges": BOTH, "selector": "offline"},
    "oracle": {"edges": BOTH, "selector": "oracle"},
    # a first visit's ranking: the cheap rankers pick a pool and dense scores only that pool
    # (vectors come from the cache when the run has them: this measures quality; what a
    # first visit costs in time is ``spider bench speed``'s cold-path row)
    "cold": {"cold_pool": DEFAULT_COLD_POOL, "cold_always": True},
    "default": {},
    # the LLM roles (with SPIDER_LLM_BASE_URL/SPIDER_LLM_MODEL or an Anthropic key set for
    # the run): the default list with no LLM, re-read by it, its neighbours judged by it, both
    "no-llm": {"llm_roles": ()},
    "llm-read": {"llm_roles": ("read",)},
    "llm-select": {"llm_roles": ("select",)},
    "llm-both": {"llm_roles": ("select", "read")},
}


@dataclass(frozen=True)
class Method:
    """One benchmarked configuration: its printed name, base entry and overrides."""

    name: str
    base: str
    overrides: dict[str, Any] = field(default_factory=dict)

    @property
    def uses_oracle(self) -> bool:
        """Whether the selector is the ground-truth oracle."""
        return self.settings_overrides().get("selector") == "oracle"

    def settings_overrides(self) -> dict[str, Any]:
        """Table entry merged with the spec's overrides."""
        return {**METHODS[self.base], **self.overrides}

    def settings(self, base: EngineSettings) -> EngineSettings:
        """``base`` with this method's overrides applied and validated."""
        data = base.model_dump()
        data.update(self.settings_overrides())
        try:
            return EngineSettings.model_validate(data)
        except ValidationError as exc:
            raise InputError(f"method {self.name}: {exc}") from exc


def _coerce(value: str) -> Any:
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            continue
    return value


def _method(name: str, pairs: list[str]) -> Method:
    if name not in METHODS:
        raise InputError(f"unknown method {name!r}; known: {', '.join(METHODS)}")
    overrides: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise InputError(f"method {name}: override {pair!r} is not key=value")
        if key not in EngineSettings.model_fields:
            raise InputError(f"method {name}: unknown setting {key!r}")
        if key in INDEX_SETTINGS:  # every method of a run ranks one shared index
            raise InputError(
                f"method {name}: {key} is read when the index is built, and every method of "
                f"a run ranks the same index; set SPIDER_{key.upper()} for the whole run"
            )
        overrides[key] = _coerce(value.strip())
    label = name if not pairs else f"{name}:{','.join(pairs)}"
    m = Method(label, name, overrides)
    m.settings(EngineSettings())  # validate early, before any indexing
    return m


def parse_methods(spec: str) -> list[Method]:
    """Parse ``"bm25,spider-both:depth=2,centres=3"`` into methods (order kept, no repeats)."""
    groups: list[tuple[str, list[str]]] = []
    for raw in spec.split(","):
        token = raw.strip()
        if not token:
            continue
        if ":" in token:
            name, _, first = token.partition(":")
            groups.append((name.strip(), [first.strip()] if first.strip() else []))
        elif "=" in token:
            if not groups:
                raise InputError(f"override {token!r} comes before any method")
            groups[-1][1].append(token)
        else:
            groups.append((token, []))
    if not groups:
        raise InputError("no method given")
    methods = [_method(name, pairs) for name, pairs in groups]
    names = [m.name for m in methods]
    if len(set(names)) != len(names):
        raise InputError(f"a method is given twice: {spec}")
    return methods
