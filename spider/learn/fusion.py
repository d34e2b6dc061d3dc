"""Choose the first-stage fusion weights by grid search with leave-one-repository-out CV.

    spider train fusion --dataset FILE --repos TEMPLATE --out DIR [--only-repo ...]

Per instance the raw rankings are computed once (dense and BM25 rank of every function,
file-level BM25 rank, issue-signal strength) and cached in ``DIR/tune-data.npz`` files;
then every grid point is scored on each held-out repository after being chosen on the
others. The objective is Recall@20 plus half of MRR@20. Only the dev data given is used.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from spider.dataset import Instance
from spider.learn.cv import leave_one_repository_out
from spider.retrieve.fusion import ranks_from_scores, reciprocal_rank_fusion
from spider.retrieve.query import best_cosine, issue_queries
from spider.retrieve.signals import extract_signals, signal_bonus, signal_scores
from spider.settings import EngineSettings
from spider.snapshot import RepoResolver, index_instance

log = logging.getLogger(__name__)

GRID: dict[str, tuple[float, ...]] = {
    "fusion_k": (10, 20, 30, 60),
    "fusion_dense": (0.5, 1.0, 1.5, 2.0),
    "fusion_bm25": (0.5, 1.0, 1.5, 2.0),
    "fusion_signals": (0.0, 0.5, 1.0, 2.0, 3.0, 4.0),
    "fusion_file": (0.0, 0.5, 1.0, 2.0),
}  # the search space; plain RRF is k=60, 1, 1, 0, 0
MRR_WEIGHT = 0.5  # objective = R@20 + MRR_WEIGHT * MRR@20: recall first, then the head
K = 20


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
            issue = inst.issue().clipped(settings.max_issue_chars)
            text = issue.text
            q = issue_queries(index.encoder(), issue, settings)
            sig, _ = signal_scores(index.name_table(), extract_signals(text), len(id_map))
            file_rank = ranks_from_scores(index.file_lexical().scores(text))[index.file_of()]
            np.savez(
                path,
                rd=ranks_from_scores(best_cosine(index.vectors(), q)),
                rb=ranks_from_scores(index.lexical().scores(text)),
                rf=file_rank,
                sig=np.asarray(sig, dtype=np.float64),
                gt=np.array([id_map[i] in set(truth) for i in index.function_ids]),
                ngt=len(truth),
                repo=inst.repo,
            )
        data = dict(np.load(path))
        data["repo"] = str(data["repo"])
        rows.append(data)
    return rows


def fused(x: dict[str, Any], p: dict[str, float]) -> np.ndarray:
    """The first-stage score of every function under parameters ``p`` (as spider.localize)."""
    k = int(p["fusion_k"])
    rrf = reciprocal_rank_fusion(
        [x["rd"], x["rb"], x["rf"]], [p["fusion_dense"], p["fusion_bm25"], p["fusion_file"]], k
    )
    return rrf + signal_bonus(x["sig"], p["fusion_signals"], k)


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
        first = np.nonzero(hit)[0]
        mrr.append(1.0 / (first[0] + 1) if len(first) else 0.0)
    return {"R@20": float(np.mean(rec)), "A@20": float(np.mean(acc)), "MRR@20": float(np.mean(mrr))}


def _objective(m: dict[str, float]) -> float:
    return m["R@20"] + MRR_WEIGHT * m["MRR@20"]


def grid() -> list[dict[str, float]]:
    """Every point of the search space."""
    names = list(GRID)
    return [dict(zip(names, vals, strict=True)) for vals in itertools.product(*GRID.values())]


def cross_validate(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Leave-one-repository-out choice of the fusion parameters, and the overall best."""
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
    }
    return {
        "instances": len(rows),
        "chosen_per_fold": chosen,
        "cv": {k: float(np.mean([h[k] for h in held_out])) for k in ("R@20", "A@20", "MRR@20")},
        "best_on_all": overall,
        "best_on_all_scores": score(rows, overall),
        "plain_rrf_scores": score(rows, plain),
    }
