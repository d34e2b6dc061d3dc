"""Platt scaling: fit ``P(edited | score) = sigmoid(slope * score + intercept)``.

The one calibrator for every shipped calibration (the pool ranker's first-item score, the
head model's logit); the engine applies it with :class:`spider.rank.calibration.Calibration`.

On a single class (every item edited, or none) the curve is flat at that class: slope 0,
intercept +-:data:`~spider.rank.calibration.LOGIT_CLAMP`, so every score reads as probability
1 or 0 (:class:`~spider.learn.estimator.Logistic`'s rule).
"""

from __future__ import annotations

import numpy as np

from spider.learn.estimator import Logistic
from spider.rank.calibration import Calibration

PLATT_C = 100.0  # two parameters, hundreds of points: almost no regularisation


def fit_platt(scores: np.ndarray, labels: np.ndarray) -> Calibration:
    """The calibration of ``scores`` against ``labels`` (1: edited)."""
    x = np.asarray(scores, dtype=np.float64).reshape(-1, 1)
    model = Logistic(c=PLATT_C).fit(x, np.asarray(labels))
    return Calibration(float(model.coef[0]), model.intercept)
