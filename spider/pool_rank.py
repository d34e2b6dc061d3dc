"""The pool ranker: re-score the first stage's top N with a learned ranking model.

Fusion decides which few hundred functions are candidates; a gradient-boosted ranking
model (LightGBM's lambdarank) then orders the top ``depth`` of them by the features of
``spider.features.ranker_features``: every ranker's ranks and scores, the title's ranks,
issue signals by kind, which of the issue's words the name and body hold, graph relations
to what the issue names, the file's standing, size and name shape. Unlike the head model
(``spider.rerank``), it reaches below the top K, so Recall@K moves, not only the order.

The model was fitted by ``spider train ranker`` on real issues of other projects (never
the benchmark's repositories); the file beside this module holds the LightGBM model text,
the feature names it was fitted on, the depth it re-scores, a Platt calibration of the
first item's score and the command and cross-validation figures that produced it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from spider.errors import WeightsFormatError
from spider.features import RANKER_FEATURES, ranker_features
from spider.weights import SCHEMA_VERSION, read_checked

if TYPE_CHECKING:
    from spider.index import Index
    from spider.models import Issue
    from spider.retrieve.first_stage import FirstStage

MODEL_FILE = Path(__file__).with_name("pool_ranker.json")
MODEL_KIND = "pool-ranker"
REGENERATE = "spider train ranker --write-weights"
DEFAULT_DEPTH = 200  # candidates re-scored when the file does not say


@dataclass(frozen=True)
class Calibration:
    """Platt scaling of the first item's score into the chance that it needs the edit."""

    slope: float
    intercept: float

    def probability(self, score: float) -> float:
        """Calibrated probability for a ranker score."""
        z = self.slope * score + self.intercept
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


@dataclass(frozen=True)
class PoolRanker:
    """A fitted ranking model over ``RANKER_FEATURES`` and how deep it re-scores."""

    booster: Any  # lightgbm.Booster
    depth: int
    calibration: Calibration | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_text(
        cls,
        model_text: str,
        depth: int,
        calibration: Calibration | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> PoolRanker:
        """A ranker from LightGBM's model text (what ``Booster.model_to_string`` gives)."""
        import lightgbm

        return cls(lightgbm.Booster(model_str=model_text), depth, calibration, meta or {})

    @classmethod
    def load(cls, path: str | Path = MODEL_FILE) -> PoolRanker:
        """Read a model file written by ``spider train ranker`` (schema and features checked)."""
        path = Path(path)
        data = read_checked(path, kind=MODEL_KIND, regenerate=REGENERATE)
        hint = f"regenerate it with `{REGENERATE}`"
        if list(data.get("features", [])) != list(RANKER_FEATURES):
            raise WeightsFormatError(
                f"{path}: fitted on other features than this engine computes; {hint}"
            )
        text = data.get("model")
        if not isinstance(text, str) or not text.startswith("tree"):
            raise WeightsFormatError(f"{path}: no LightGBM model text under 'model'; {hint}")
        depth = data.get("depth", DEFAULT_DEPTH)
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise WeightsFormatError(f"{path}: depth must be a positive integer; {hint}")
        cal = data.get("calibration")
        calibration = None
        if isinstance(cal, dict):
            try:
                calibration = Calibration(float(cal["slope"]), float(cal["intercept"]))
            except (KeyError, TypeError, ValueError) as exc:
                raise WeightsFormatError(f"{path}: bad calibration {cal!r}; {hint}") from exc
        meta = {
            k: v
            for k, v in data.items()
            if k not in ("schema", "kind", "features", "model", "depth", "calibration")
        }
        try:
            return cls.from_text(text, depth, calibration, meta)
        except Exception as exc:  # lightgbm raises its own LightGBMError on a corrupt model
            raise WeightsFormatError(
                f"{path}: LightGBM cannot read the model: {exc}; {hint}"
            ) from exc

    def scores(self, features: np.ndarray) -> np.ndarray:
        """The model's score for each row of ``features`` (columns ``RANKER_FEATURES``)."""
        if not len(features):
            return np.zeros(0)
        return np.asarray(self.booster.predict(features, num_threads=1), dtype=np.float64)

    def model_text(self) -> str:
        """LightGBM's text form of the model."""
        return str(self.booster.model_to_string())


def dump_ranker(
    path: str | Path,
    model_text: str,
    depth: int,
    calibration: Calibration | None,
    meta: Mapping[str, Any],
) -> None:
    """Write a model file that :meth:`PoolRanker.load` reads back (meta first, model last)."""
    import json

    body: dict[str, Any] = {"schema": SCHEMA_VERSION, "kind": MODEL_KIND, **meta}
    body["features"] = list(RANKER_FEATURES)
    body["depth"] = int(depth)
    if calibration is not None:
        body["calibration"] = {
            "slope": round(calibration.slope, 6),
            "intercept": round(calibration.intercept, 6),
        }
    body["model"] = model_text
    Path(path).write_text(json.dumps(body, indent=1) + "\n")


@lru_cache(maxsize=1)
def default_ranker() -> PoolRanker | None:
    """The shipped model, or None when no model file ships (the head model orders then)."""
    return PoolRanker.load() if MODEL_FILE.exists() else None


def rank_pool(
    index: Index,
    fs: FirstStage,
    issue: Issue,
    ranker: PoolRanker,
    depth: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``fs.order`` with its first ``depth`` items re-sorted by the ranker, and their scores
    in the new order (best first); items below ``depth`` keep the first stage's order."""
    depth = depth or ranker.depth
    head = fs.order[:depth]
    if len(head) == 0:
        return fs.order, np.zeros(0)
    scores = ranker.scores(ranker_features(index, fs, [int(i) for i in head], issue))
    by = np.argsort(-scores, kind="stable")
    return np.concatenate([head[by], fs.order[depth:]]), scores[by]
