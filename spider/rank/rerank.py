"""Order the head of the first-stage ranking by an estimated probability of being edited.

Fusion decides *which* functions make the top K well, but its order inside the top K is
noisy: a long function that matches the issue's words strongly often sits below short
helpers that the dense ranker likes. A small logistic model over features every query
already has (first-stage ranks and scores, function length and name shape, issue signals,
the best rank in the same file and among graph neighbours) re-sorts the top ``k`` items.
Membership of the top ``k`` never changes, so Recall@K and Acc@K are untouched; only the
order (MRR, what a reader sees first) moves.

The features come from ``spider.rank.features`` (``head_features``). The coefficients live in
``rerank_weights.json`` beside this file on the raw feature scale, read through the one
checked loader (``spider.weights``); ``spider train head`` regenerates them from the dev set with
leave-one-repository-out cross-validation (see the README).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from spider.errors import WeightsFormatError
from spider.rank.calibration import Calibration
from spider.rank.features import HEAD_FEATURES, head_features
from spider.weights import load_weights

if TYPE_CHECKING:
    from spider.index import Index
    from spider.retrieve.first_stage import FirstStage

log = logging.getLogger(__name__)
WEIGHTS_FILE = Path(__file__).with_name("rerank_weights.json")
WEIGHTS_KIND = "rerank"
REGENERATE = "spider train head --write-weights"
CALIBRATION_FILE = Path(__file__).with_name("head_calibration.json")
CALIBRATION_KIND = "head-calibration"


@dataclass(frozen=True)
class RerankWeights:
    """Logistic coefficients per feature on the raw scale; ``bias`` is the intercept."""

    coef: Mapping[str, float]
    bias: float = 0.0
    meta: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path = WEIGHTS_FILE) -> RerankWeights:
        """Read a weights file written by ``spider train head`` (schema checked)."""
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
        logits: np.ndarray = features @ w + self.bias
        return logits

    def fingerprint(self) -> str:
        """A short hash of the coefficients: a calibration is valid for these weights only."""
        body = json.dumps([round(self.bias, 5), sorted((k, round(v, 5)) for k, v in self.coef.items())])
        return hashlib.sha256(body.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class HeadCalibration(Calibration):
    """The head model's :class:`~spider.rank.calibration.Calibration` (its logit into the chance
    of an edit), valid for one set of head weights (``fingerprint``).

    Fitted by ``spider train calibration``.
    """

    fingerprint: str
    meta: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path = CALIBRATION_FILE) -> HeadCalibration:
        """Read a calibration file (schema checked)."""
        f = load_weights(
            path,
            kind=CALIBRATION_KIND,
            sections={},
            scalars={"slope": None, "intercept": None},
            regenerate="spider train calibration --write-weights",
        )
        fp = f.meta.get("fingerprint")
        if not isinstance(fp, str):
            raise WeightsFormatError(f"{path}: no fingerprint of the head weights it calibrates")
        meta = {k: v for k, v in f.meta.items() if k != "fingerprint"}
        return cls(f.scalars["slope"], f.scalars["intercept"], fp, meta)


@lru_cache(maxsize=1)
def default_calibration() -> HeadCalibration | None:
    """The shipped calibration when it matches the shipped head weights, else None."""
    if not CALIBRATION_FILE.exists():
        return None
    cal = HeadCalibration.load()
    if cal.fingerprint != default_weights().fingerprint():
        log.warning(
            "%s calibrates other head weights; no confidence is given until "
            "`spider train calibration --write-weights` is run again",
            CALIBRATION_FILE.name,
        )
        return None
    return cal


@lru_cache(maxsize=1)
def default_weights() -> RerankWeights:
    """The shipped weights."""
    return RerankWeights.load()


def rerank_head(
    index: Index,
    fs: FirstStage,
    k: int,
    weights: RerankWeights | None = None,
) -> np.ndarray:
    """``fs.order`` with its first ``k`` items re-sorted by estimated probability of an edit."""
    return rerank_with_logits(index, fs, k, weights)[0]


def rerank_with_logits(
    index: Index,
    fs: FirstStage,
    k: int,
    weights: RerankWeights | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``rerank_head``'s order and the head logits in that new order (best first)."""
    weights = weights or default_weights()
    head = fs.order[:k]
    if len(head) == 0:
        return fs.order, np.zeros(0)
    logits = weights.logits(head_features(index, fs, [int(i) for i in head]))
    if len(head) < 2:
        return fs.order, logits
    by = np.argsort(-logits, kind="stable")
    return np.concatenate([head[by], fs.order[k:]]), logits[by]
