"""The one Platt calibrator: recovers a known curve; a single class is flat at that class."""

from __future__ import annotations

import numpy as np
import pytest

from spider.learn.platt import fit_platt
from spider.rank.calibration import LOGIT_CLAMP, Calibration


def test_platt_recovers_the_curve_that_drew_the_labels() -> None:
    rng = np.random.default_rng(0)
    scores = rng.normal(scale=2.0, size=20_000)
    truth = Calibration(1.5, -0.5)
    labels = (rng.random(len(scores)) < truth.probabilities(scores)).astype(int)
    cal = fit_platt(scores, labels)
    assert cal.slope == pytest.approx(1.5, abs=0.1)
    assert cal.intercept == pytest.approx(-0.5, abs=0.1)


@pytest.mark.parametrize(("label", "p"), [(0, 0.0), (1, 1.0)])
def test_a_single_class_is_a_flat_curve_at_that_class(label: int, p: float) -> None:
    cal = fit_platt(np.array([-3.0, 0.0, 4.0]), np.full(3, label))
    assert cal.slope == 0.0 and abs(cal.intercept) == LOGIT_CLAMP
    for score in (-100.0, 0.0, 100.0):
        assert cal.probability(score) == pytest.approx(p, abs=1e-12)


def test_no_scores_is_a_flat_curve_at_no_edit() -> None:
    assert fit_platt(np.zeros(0), np.zeros(0)) == Calibration(0.0, -LOGIT_CLAMP)
