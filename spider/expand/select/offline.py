"""The offline selector: admit a neighbour only when it is likelier to be edited than the
item it would evict (the paper's η > τ rule), with both probabilities estimated by a small
logistic model over features computed without any model call.

The coefficients live in ``offline_weights.json`` beside this file, read through the one
checked loader (``spider.weights``); ``spider train selector`` regenerates them by
cross-validation and chooses the margin by the η > τ rule (see the README).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from spider.expand.select.base import Candidate, SelectionRequest, Selector
from spider.expand.select.exchange import Admission, order_by_probability
from spider.rank.features import NEIGHBOUR_FEATURES, log_rank
from spider.weights import load_weights

WEIGHTS_FILE = Path(__file__).with_name("offline_weights.json")
WEIGHTS_KIND = "offline-selector"
REGENERATE = "spider train selector --write-weights"


@dataclass(frozen=True)
class OfflineWeights:
    """Logistic coefficients for a neighbour and for a first-stage item at a given rank."""

    neighbour: Mapping[str, float]  # feature name -> coefficient ("bias" is the intercept)
    ranked: Mapping[str, float]  # coefficients of a plain first-stage item: bias, log_rank
    margin: float  # admit only when p(neighbour) exceeds p(evicted) by this much (log-odds)
    meta: Mapping[str, Any] = field(default_factory=dict)
    admits: bool = True  # False when the fit's CV found no margin with η > τ: admit nothing

    @classmethod
    def load(cls, path: str | Path = WEIGHTS_FILE) -> OfflineWeights:
        """Read a weights file written by ``spider train selector`` (schema checked)."""
        f = load_weights(
            path,
            kind=WEIGHTS_KIND,
            sections={"neighbour": ("bias", *NEIGHBOUR_FEATURES), "ranked": ("bias", "log_rank")},
            scalars={"margin": 0.0, "admits": 1.0},
            regenerate=REGENERATE,
        )
        return cls(
            neighbour=f.sections["neighbour"],
            ranked=f.sections["ranked"],
            margin=f.scalars["margin"],
            meta=f.meta,
            admits=f.scalars["admits"] != 0.0,
        )


@lru_cache(maxsize=1)
def default_weights() -> OfflineWeights:
    """The shipped weights."""
    return OfflineWeights.load()


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, x))))


def logit(weights: Mapping[str, float], features: Mapping[str, float]) -> float:
    """Linear score of a feature dict under ``weights`` (unknown features count zero)."""
    return weights.get("bias", 0.0) + sum(
        w * features.get(name, 0.0) for name, w in weights.items() if name != "bias"
    )


class OfflineSelector(Selector):
    """Conservative, network-free selector driven by first-stage and graph features."""

    name = "offline"

    def __init__(self, weights: OfflineWeights | None = None) -> None:
        self.weights = weights or default_weights()

    def neighbour_probability(self, cand: Candidate) -> float:
        """Estimated probability that a neighbour must be edited."""
        return _sigmoid(logit(self.weights.neighbour, cand.features))

    def ranked_probability(self, rank: int) -> float:
        """Estimated probability that the first-stage item at ``rank`` must be edited."""
        return _sigmoid(logit(self.weights.ranked, {"log_rank": log_rank(rank)}))

    def place(
        self,
        final: Sequence[str],
        placed: Mapping[str, Admission],
        requests: Sequence[SelectionRequest],
        rank_of: Mapping[str, int],
    ) -> list[str]:
        """Re-place admitted items by estimated probability (see ``order_by_probability``)."""
        by_id = {c.id: c for r in requests for c in r.candidates}
        return order_by_probability(
            final,
            placed,
            rank_of,
            self.ranked_probability,
            {n: self.neighbour_probability(by_id[n]) for n in placed},
        )

    def _select(self, requests: Sequence[SelectionRequest]) -> list[list[str]]:
        if not self.weights.admits:
            return [[] for _ in requests]
        out: list[list[str]] = []
        for req in requests:
            tau = logit(self.weights.ranked, {"log_rank": log_rank(req.budget_rank)})
            out.append(
                [
                    c.id
                    for c in req.candidates
                    if logit(self.weights.neighbour, c.features) > tau + self.weights.margin
                ]
            )
        return out
