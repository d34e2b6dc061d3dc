"""Order the head of the first-stage ranking by an estimated probability of being edited.

Fusion decides *which* functions make the top K well, but its order inside the top K is
noisy: a long function that matches the issue's words strongly often sits below short
helpers that the dense ranker likes. A small logistic model over features every query
already has (first-stage ranks and scores, function length and name shape, issue signals,
the best rank in the same file and among graph neighbours) re-sorts the top ``k`` items.
Membership of the top ``k`` never changes, so Recall@K and Acc@K are untouched; only the
order (MRR, what a reader sees first) moves.

The features come from ``spider.features`` (``head_features``). The coefficients live in
``rerank_weights.json`` beside this file on the raw feature scale, read through the one
checked loader (``spider.weights``); ``spider bench fit-rerank`` regenerates them from the dev set with
leave-one-repository-out cross-validation (see the README).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from spider.features import HEAD_FEATURES, head_features
from spider.weights import load_weights

if TYPE_CHECKING:
    from spider.index import Index
    from spider.models import Issue
    from spider.retrieve.first_stage import FirstStage

WEIGHTS_FILE = Path(__file__).with_name("rerank_weights.json")
WEIGHTS_KIND = "rerank"
REGENERATE = "spider bench fit-rerank --write-weights"


@dataclass(frozen=True)
class RerankWeights:
    """Logistic coefficients per feature on the raw scale; ``bias`` is the intercept."""

    coef: Mapping[str, float]
    bias: float = 0.0
    meta: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path = WEIGHTS_FILE) -> RerankWeights:
        """Read a weights file written by ``spider bench fit-rerank`` (schema checked)."""
        f = load_weights(
            path,
            kind=WEIGHTS_KIND,
            sections={"coef": HEAD_FEATURES},
            scalars={"bias": 0.0},
            regenerate=REGENERATE,
        )
        return cls(coef=f.sections["coef"], bias=f.scalars["bias"], meta=f.meta)

    def logits(self, features: np.ndarray) -> np.ndarray:
        """Log-odds of being edited for each row of ``features`` (columns ``HEAD_FEATURES``)."""
        w = np.array([self.coef.get(name, 0.0) for name in HEAD_FEATURES])
        return features @ w + self.bias


@lru_cache(maxsize=1)
def default_weights() -> RerankWeights:
    """The shipped weights."""
    return RerankWeights.load()


def rerank_head(
    index: Index,
    fs: FirstStage,
    k: int,
    weights: RerankWeights | None = None,
    issue: Issue | None = None,
) -> np.ndarray:
    """``fs.order`` with its first ``k`` items re-sorted by estimated probability of an edit."""
    weights = weights or default_weights()
    head = fs.order[:k]
    if len(head) < 2:
        return fs.order
    logits = weights.logits(head_features(index, fs, [int(i) for i in head], issue))
    new_head = head[np.argsort(-logits, kind="stable")]
    return np.concatenate([new_head, fs.order[k:]])
