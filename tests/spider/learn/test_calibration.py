"""Calibration of the head model: Platt scaling by repository CV, curves, bars, the file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from spider.errors import WeightsFormatError
from spider.learn.calibration import (
    cross_validate,
    fit_platt,
    head_rows,
    reliability,
    write_calibration,
)
from spider.rank.calibration import Calibration
from spider.rank.features import HEAD_FEATURES
from spider.rank.rerank import HeadCalibration, RerankWeights, default_weights

K = 20


def _rows(seed: int = 0, n: int = 60) -> list[dict[str, object]]:
    """Instances whose edited function is likelier at a low fused rank (log_rank column)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        x = np.zeros((K, len(HEAD_FEATURES)))
        x[:, 0] = np.log(np.arange(1, K + 1))
        y = np.zeros(K, dtype=bool)
        if rng.random() < 0.7:  # the fix is in the top K for 70% of issues
            y[min(int(rng.exponential(2.0)), K - 1)] = True
        rows.append({"x": x, "y": y, "repo": f"o/r{i % 4}", "instance_id": f"i{i}", "ngt": 1})
    return rows


def test_platt_recovers_a_calibrated_curve_and_reports_bars() -> None:
    cv = cross_validate(_rows(), K)
    assert cv["instances"] == 60 and cv["repositories"] == 4
    first = cv["first_item"]
    # out of fold, the first item's mean predicted chance is close to how often it is right
    assert abs(first["mean_predicted"] - first["right_share"]) < 0.1
    assert first["ece"] < 0.15 and cv["all_items"]["items"] == 60 * K
    assert sum(c["n"] for c in first["reliability"]) == 60
    shares = [b["silenced_share"] for b in cv["bars"]]
    assert shares == sorted(shares)  # a higher bar silences at least as many
    assert all(b["silenced_first_right"] <= b["silenced"] for b in cv["bars"])
    assert cv["slope"] > 0  # a higher head logit means likelier edited


def test_reliability_bins() -> None:
    curve = reliability(np.array([0.05, 0.07, 0.95]), np.array([0, 1, 1]))
    assert curve == [
        {"bin": "0.0-0.1", "n": 2, "predicted": 0.06, "observed": 0.5},
        {"bin": "0.9-1.0", "n": 1, "predicted": 0.95, "observed": 1.0},
    ]


def test_no_positive_is_a_zero_probability() -> None:
    rows = [{**r, "y": np.zeros(K, dtype=bool)} for r in _rows()]
    cal = fit_platt(head_rows(rows, K))
    assert cal == Calibration(0.0, -30.0) and cal.probability(10.0) < 1e-12


def test_the_file_is_tied_to_the_head_weights(tmp_path: Path) -> None:
    cv = cross_validate(_rows(), K)
    path = tmp_path / "cal.json"
    write_calibration(cv, "spider train calibration ...", path)
    cal = HeadCalibration.load(path)
    assert cal.fingerprint == default_weights().fingerprint()
    assert cal.slope == cv["slope"] and 0.0 < cal.probability(0.0) < 1.0
    assert cal.probability(5.0) > cal.probability(-5.0)
    other = RerankWeights(coef={"log_lines": 1.0})
    assert other.fingerprint() != default_weights().fingerprint()
    data = json.loads(path.read_text())
    del data["fingerprint"]
    path.write_text(json.dumps(data))
    with pytest.raises(WeightsFormatError, match="fingerprint"):
        HeadCalibration.load(path)
