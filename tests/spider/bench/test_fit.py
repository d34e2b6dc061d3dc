"""Fitting the offline selector: the exchange simulated on records, CV over repositories."""

from __future__ import annotations

import json
import math
from pathlib import Path

from spider.bench.fit import FitRecord, cross_validate, fit_weights, oracle, simulate, write_weights
from spider.select.offline import OfflineWeights


def _record(i: int, repo: str, good_neighbour: bool) -> FitRecord:
    pool = [f"r{i}/a.py:f{j}" for j in range(40)]
    truth_id = pool[30] if good_neighbour else pool[1]
    cands = [
        {"id": pool[30], "rank": 31, "edge": "contains", "hops": 2,
         "f": {"log_rank": math.log(31), "same_class": 1.0}},
        {"id": pool[35], "rank": 36, "edge": "invokes", "hops": 1,
         "f": {"log_rank": math.log(36), "same_class": 0.0}},
    ]
    return FitRecord(
        instance_id=f"i{i}", repo=repo, pool=pool,
        to_dataset={p: p for p in pool}, truth=[truth_id],
        requests=[{"centre": pool[0], "centre_rank": 1, "candidates": cands}],
    )


RECORDS = [_record(i, f"o/r{i % 3}", good_neighbour=i % 2 == 0) for i in range(12)]


def test_simulate_without_weights_is_the_first_stage() -> None:
    rec = _record(0, "o/r", good_neighbour=True)
    assert simulate(rec, None, 20)["R@20"] == 0.0
    assert oracle(rec, 20)["R@20"] == 1.0


def test_weights_that_admit_the_same_class_neighbour_find_it() -> None:
    w = OfflineWeights({"bias": 0.0, "same_class": 10.0, "log_rank": -1.0},
                       {"bias": 0.0, "log_rank": -1.0}, 0.0)
    rec = _record(0, "o/r", good_neighbour=True)
    m = simulate(rec, w, 20, placement="centre")
    assert m["R@20"] == 1.0 and m["MRR@20"] == 0.5  # inserted right below the centre
    m = simulate(rec, w, 20, placement="probability")
    assert m["R@20"] == 1.0 and m["MRR@20"] == 0.5


def test_fit_learns_a_positive_same_class_weight_and_cv_reports_each_fold(tmp_path: Path) -> None:
    w = fit_weights(RECORDS, 20)
    assert w.neighbour["same_class"] > 0
    assert w.ranked["log_rank"] < 0
    cv = cross_validate(RECORDS, 20)
    assert cv["folds"] == ["o/r0", "o/r1", "o/r2"]
    assert cv["instances"] == 12
    assert set(cv["by_margin"]) and str(cv["margin"]) in cv["by_margin"]
    out = tmp_path / "w.json"
    write_weights(w, cv, "spider bench fit ...", out)
    data = json.loads(out.read_text())
    assert data["neighbour"]["same_class"] > 0 and "R@20 oracle" in data["cv"]
    assert OfflineWeights.load(out).margin == w.margin
