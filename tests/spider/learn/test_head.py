"""Fitting the head re-ranker: logistic fit on raw-scale features, grouped CV, weights file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from spider.learn.head import FEATURES, cross_validate, fit, reordered_mrr, write_weights
from spider.rank.rerank import RerankWeights

LINES = FEATURES.index("log_lines")
RANK = FEATURES.index("log_rank")


def _row(seed: int, repo: str) -> dict:
    """30 items in first-stage order; the edited one is the longest, at rank 5..9."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(30, len(FEATURES)))
    x[:, RANK] = np.log(np.arange(1, 31))
    x[:, LINES] = rng.uniform(0, 3, size=30)
    y = np.zeros(30, dtype=bool)
    hit = 5 + seed % 5
    y[hit] = True
    x[hit, LINES] = 5.0
    return {"x": x, "y": y, "ngt": 1, "repo": repo, "instance_id": f"i{seed}"}


ROWS = [_row(i, f"o/r{i % 3}") for i in range(15)]


def test_fit_learns_the_informative_feature_on_the_raw_scale() -> None:
    w = fit(ROWS, c=1.0)
    assert w.coef["log_lines"] > 0
    assert max(w.coef.values(), key=abs) == w.coef["log_lines"]
    logits = w.logits(ROWS[0]["x"])
    assert int(np.argmax(logits)) == int(np.flatnonzero(ROWS[0]["y"])[0])


def test_reordering_raises_mrr_and_cv_reports_every_fold() -> None:
    assert reordered_mrr(ROWS[0], None, 20) == 1 / 6
    cv = cross_validate(ROWS, 20, grid=[(30, 1.0)])
    assert set(cv["by_repo"]) == {"o/r0", "o/r1", "o/r2"}
    assert cv["instances"] == 15 and (cv["pool"], cv["C"]) == (30, 1.0)
    assert cv["MRR@20 re-ranked (nested cv)"] > cv["MRR@20 first stage"]
    assert cv["MRR@20 re-ranked (nested cv)"] == 1.0


def test_nested_choice_is_made_inside_each_fold() -> None:
    # a pool of 3 items never sees the edited one (rank 6..10): nothing to learn from
    cv = cross_validate(ROWS, 20, grid=[(3, 1.0), (30, 1.0)])
    assert (cv["pool"], cv["C"]) == (30, 1.0)
    assert all(v["pool, C"] == [30, 1.0] for v in cv["by_repo"].values())


def test_weights_file_round_trips(tmp_path: Path) -> None:
    w = fit(ROWS, c=1.0)
    path = tmp_path / "w.json"
    write_weights(w, cross_validate(ROWS, 20, grid=[(30, 1.0)]), "spider train head ...", path)
    back = RerankWeights.load(path)
    assert back.meta["command"] == "spider train head ..."
    assert np.allclose(back.logits(ROWS[1]["x"]), w.logits(ROWS[1]["x"]), atol=1e-3)


def test_nothing_edited_in_the_pool_keeps_the_fused_order() -> None:
    blank = [{**r, "y": np.zeros_like(r["y"])} for r in ROWS]
    w = fit(blank, c=1.0, pool=30)
    assert w.bias == -30.0 and set(w.coef.values()) == {0.0}
    assert reordered_mrr(ROWS[0], w, 20) == reordered_mrr(ROWS[0], None, 20)
