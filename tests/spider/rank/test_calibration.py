"""The one runtime calibration: Platt scaling, clamped, the same for one score or many."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spider.rank.calibration import LOGIT_CLAMP, Calibration
from spider.rank.pool_rank import PoolRanker
from spider.rank.rerank import HeadCalibration


def test_probability_is_the_clamped_sigmoid() -> None:
    cal = Calibration(2.0, -1.0)
    assert cal.probability(0.5) == 0.5
    assert cal.probability(1.0) == pytest.approx(1 / (1 + math.exp(-1.0)))
    assert cal.probability(1e6) == pytest.approx(1 / (1 + math.exp(-LOGIT_CLAMP)))
    assert cal.probability(-1e6) == pytest.approx(1 / (1 + math.exp(LOGIT_CLAMP)))


def test_many_scores_read_as_one_score_each() -> None:
    cal = Calibration(1.3, 0.2)
    scores = np.array([-40.0, -1.0, 0.0, 2.5, 40.0])
    np.testing.assert_allclose(
        cal.probabilities(scores), [cal.probability(s) for s in scores], rtol=1e-15
    )


def test_both_shipped_calibrations_are_this_class() -> None:
    ranker = PoolRanker.load()
    assert isinstance(ranker.calibration, Calibration)
    head = HeadCalibration.load()
    assert isinstance(head, Calibration) and head.fingerprint
    assert head.probability(1.0) == Calibration(head.slope, head.intercept).probability(1.0)
