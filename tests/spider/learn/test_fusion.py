"""Fusion tuning: the score matches a hand computation and CV picks per held-out repository."""

from __future__ import annotations

import numpy as np

from spider.learn.fusion import cross_validate, fused, score


def _row(repo: str, gt_index: int) -> dict[str, object]:
    n = 30
    rd = np.arange(1, n + 1)  # dense ranks: item 0 best
    rb = np.arange(n, 0, -1)  # bm25 ranks: item n-1 best
    gt = np.zeros(n, dtype=bool)
    gt[gt_index] = True
    return {"rd": rd, "rb": rb, "rf": np.ones(n), "sig": np.zeros(n), "gt": gt, "ngt": 1,
            "repo": repo}


def test_fused_is_weighted_rrf() -> None:
    x = _row("a/b", 0)
    p = {"fusion_k": 10, "fusion_dense": 2.0, "fusion_bm25": 1.0, "fusion_file": 0.0,
         "fusion_signals": 0.0}
    assert fused(x, p)[0] == 2.0 / 11 + 1.0 / 40


def test_score_and_cv_prefer_the_ranker_that_finds_the_truth() -> None:
    rows = [_row(f"o/r{i}", 0) for i in range(3)]  # dense finds it at rank 1
    dense_heavy = {"fusion_k": 10, "fusion_dense": 2.0, "fusion_bm25": 0.5, "fusion_file": 0.0,
                   "fusion_signals": 0.0}
    assert score(rows, dense_heavy) == {"R@20": 1.0, "A@20": 1.0, "MRR@20": 1.0}
    report = cross_validate(rows)
    assert report["cv"]["R@20"] == 1.0
    assert set(report["chosen_per_fold"]) == {"o/r0", "o/r1", "o/r2"}
    assert report["best_on_all"]["fusion_dense"] >= report["best_on_all"]["fusion_bm25"]
