"""Choose the first-stage fusion weights by grid search with leave-one-repository-out CV.

    spider train fusion --dataset FILE --repos TEMPLATE --out DIR [--only-repo ...]

Per instance the first stage's own rankings are computed once (dense, BM25, file-level
BM25 and history rank of every function, issue-signal strength) and cached in
``DIR/<instance>.npz`` files; each grid point is fused by the first stage's formula
(:func:`spider.retrieve.fusion.fuse`), so the tuning scores what the engine ranks;
then every grid point is scored on each held-out repository after being chosen on the
others. The objective is Recall@20 plus half of MRR@20. Only the dev data given is used.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from spider.eval.dataset import Instance
from spider.eval.metrics import reciprocal_rank
from spider.eval.snapshot import RepoResolver, index_instance
from spider.learn.cv import CVReport, leave_one_repository_out
from spider.retrieve.first_stage import Rankable, first_stage
from spider.retrieve.fusion import FusionWeights, fuse
from spider.settings import EngineSettings

if TYPE_CHECKING:
    from spider.models import Issue

log = logging.getLogger(__name__)

GRID: dict[str, tuple[float, ...]] = {
    "fusion_k": (10, 20, 30, 60),
    "fusion_dense": (0.5, 1.0, 1.5, 2.0),
    "fusion_bm25": (0.5, 1.0, 1.5, 2.0),
    "fusion_signals": (0.0, 0.5, 1.0, 2.0, 3.0, 4.0),
    "fusion_file": (0.0, 0.5, 1.0, 2.0),
    "fusion_history": (0.0, 1.0),
}  # the search space; plain RRF is k=60, 1, 1, 0, 0, 0
MRR_WEIGHT = 0.5  # objective = R@20 + MRR_WEIGHT * MRR@20: recall first, then the head
K = 20


# The rankers a collected row holds, by the first stage's names (FirstStage.ranks), and
# the file keys they are cached under (older caches have no "rh": history left out).
RANKERS = {"dense": "rd", "bm25": "rb", "file": "rf", "history": "rh"}


def collect_settings(settings: EngineSettings) -> EngineSettings:
    """``settings`` with every ranker the tuning weighs switched on (their weights do not
    matter: only the ranks are kept), dense over the whole index (no cold path)."""
    return settings.model_copy(
        update={
            "first_stage": "hybrid",
            "signals": True,
            "cold_pool": 0,
            "fusion_file": settings.fusion_file or 1.0,
            "fusion_history": (settings.fusion_history or 1.0)
            if settings.history_commits > 0
            else 0.0,
        }
    )


def rankings(index: Rankable, issue: Issue, settings: EngineSettings) -> dict[str, np.ndarray]:
    """The first stage's own per-ranker ranks of every function for ``issue`` (under
    :func:`collect_settings`) and its issue-signal strength (``sig``): what :func:`fused`
    combines, so that the tuning weighs exactly what the first stage ranks."""
    fs = first_stage(index, issue, collect_settings(settings), learned=False)
    row = {key: np.asarray(fs.ranks[name]) for name, key in RANKERS.items() if name in fs.ranks}
    n = len(index.function_ids)
    row["sig"] = np.zeros(n) if fs.signal is None else np.asarray(fs.signal, dtype=np.float64)
    return row


def collect(
    instances: Sequence[Instance], resolve: RepoResolver, settings: EngineSettings, out: Path
) -> list[dict[str, Any]]:
    """Raw per-function rankings of each instance (cached per instance in ``out``)."""
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for inst in instances:
        path = out / f"{inst.instance_id}.npz"
        if not path.exists():
            index, truth, id_map = index_instance(inst, resolve, settings)
            arrays: dict[str, Any] = rankings(index, inst.issue(), settings)
            np.savez(
                path,
                **arrays,
                gt=np.array([id_map[i] in set(truth) for i in index.function_ids]),
                ngt=len(truth),
                repo=inst.repo,
            )
        data = dict(np.load(path))
        data["repo"] = str(data["repo"])
        rows.append(data)
    return rows


def fused(x: Mapping[str, Any], p: Mapping[str, float]) -> np.ndarray:
    """The first-stage score of every function under parameters ``p`` (``fusion_*``
    settings): :func:`spider.retrieve.fusion.fuse`, the formula the first stage ranks by."""
    ranks = {name: x[key] for name, key in RANKERS.items() if key in x}
    return fuse(ranks, FusionWeights.from_mapping(p), x["sig"])


def score(rows: Sequence[dict[str, Any]], p: dict[str, float]) -> dict[str, float]:
    """Macro R@20, A@20 and MRR@20 (function level) under ``p``."""
    rec, acc, mrr = [], [], []
    for x in rows:
        s = fused(x, p)
        part = np.argpartition(-s, min(K, len(s) - 1))[:K]
        top = part[np.argsort(-s[part], kind="stable")]
        hit = x["gt"][top]
        n = max(int(x["ngt"]), 1)
        rec.append(min(hit.sum() / n, 1.0))
        acc.append(float(hit.sum() >= n))
        mrr.append(reciprocal_rank(hit, K))
    return {"R@20": float(np.mean(rec)), "A@20": float(np.mean(acc)), "MRR@20": float(np.mean(mrr))}


def _objective(m: dict[str, float]) -> float:
    return m["R@20"] + MRR_WEIGHT * m["MRR@20"]


def grid() -> list[dict[str, float]]:
    """Every point of the search space."""
    names = list(GRID)
    return [dict(zip(names, vals, strict=True)) for vals in itertools.product(*GRID.values())]


def cross_validate(rows: Sequence[dict[str, Any]]) -> CVReport[dict[str, float]]:
    """Leave-one-repository-out choice of the fusion parameters, and the overall best (the
    report's ``chosen``)."""
    points = grid()
    held_out: list[dict[str, float]] = []
    chosen: dict[str, dict[str, float]] = {}
    for repo, train, test in leave_one_repository_out(rows, lambda x: str(x["repo"])):
        best = max(points, key=lambda p: _objective(score(train, p)))
        chosen[repo] = best
        held_out += [score([x], best) for x in test]
    overall = max(points, key=lambda p: _objective(score(rows, p)))
    plain = {
        "fusion_k": 60,
        "fusion_dense": 1.0,
        "fusion_bm25": 1.0,
        "fusion_signals": 0.0,
        "fusion_file": 0.0,
        "fusion_history": 0.0,
    }
    figures = {
        "instances": len(rows),
        "chosen_per_fold": chosen,
        "cv": {k: float(np.mean([h[k] for h in held_out])) for k in ("R@20", "A@20", "MRR@20")},
        "best_on_all": overall,
        "best_on_all_scores": score(rows, overall),
        "plain_rrf_scores": score(rows, plain),
    }
    return CVReport(overall, len(rows), "leave one repository out", figures)
