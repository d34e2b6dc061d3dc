"""Fusion tuning: the score matches a hand computation and the first stage's own, and CV
picks per held-out repository."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from spider.index import build_index
from spider.learn.fusion import cross_validate, fused, grid, rankings, score
from spider.models import Issue
from spider.retrieve.first_stage import first_stage
from spider.settings import EngineSettings
from spider.source import GitSource
from tests.spider.bench.helpers import commit_files, init_repo


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


SOURCE = '''
def load_config(path):
    """Read the configuration file."""
    return open(path).read()


def save_report(report, path):
    with open(path, "w") as fh:
        fh.write(report)


class Loader:
    def fetch(self, url):
        return load_config(url)
'''


def test_the_tuning_scores_exactly_what_the_first_stage_ranks(tmp_path: Path) -> None:
    """One formula: for every grid point tried here (history and signals included), the
    tuning's fused scores of the first stage's own ranks equal the first stage's scores."""
    path = init_repo(tmp_path / "repo")
    commit_files(path, {"app/config.py": SOURCE}, "Add the loader")
    commit_files(path, {"app/config.py": SOURCE.replace("open(path).read()",
                                                        "open(path).read() or '{}'")},
                 "Fix crash when the configuration file is empty")  # fmt: skip
    settings = EngineSettings(cache_dir=tmp_path / "cache", history_commits=10)
    index = build_index(GitSource(path, "HEAD"), settings)
    issue = Issue("Crash on an empty file", "`load_config` crashes: the configuration is empty")
    row = rankings(index, issue, settings)
    assert {"rd", "rb", "rf", "rh", "sig"} <= set(row) and row["sig"].any()
    assert row["rh"].any()  # the fixing commit's message matches: history is in the row
    points = [grid()[0], grid()[-1], *(dict(p, fusion_history=3.0) for p in grid()[::97])]
    for p in points:
        fs = first_stage(index, issue, settings.model_copy(update=p), learned=False)
        assert np.array_equal(fused(row, p), fs.scores), p
