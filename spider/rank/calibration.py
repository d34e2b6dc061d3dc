"""Calibrated probabilities: Platt scaling of a model's score into the chance of an edit.

One class for every shipped calibration: the pool ranker's (the first item's score, in
``pool_ranker.json``) and the head model's (its logit, in ``head_calibration.json``).
Both apply ``sigmoid(slope * score + intercept)``; fitting it lives in
:mod:`spider.learn.platt`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

LOGIT_CLAMP = 30.0  # |slope * score + intercept| beyond this is 0 or 1 to float precision


def platt_probability(slope: float, intercept: float, score: float) -> float:
    """Platt scaling: ``sigmoid(slope * score + intercept)``, clamped against overflow."""
    z = slope * score + intercept
    return 1.0 / (1.0 + math.exp(-max(-LOGIT_CLAMP, min(LOGIT_CLAMP, z))))


@dataclass(frozen=True)
class Calibration:
    """Platt scaling of a score into the chance that the function needs the edit."""

    slope: float
    intercept: float

    def probability(self, score: float) -> float:
        """Calibrated probability for one score."""
        return platt_probability(self.slope, self.intercept, score)

    def probabilities(self, scores: np.ndarray) -> np.ndarray:
        """Calibrated probabilities for an array of scores (the same clamp)."""
        z = self.slope * np.asarray(scores) + self.intercept
        return 1.0 / (1.0 + np.exp(-np.clip(z, -LOGIT_CLAMP, LOGIT_CLAMP)))
