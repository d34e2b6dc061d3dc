"""Fit the offline selector's coefficients by grouped cross-validation on dev data.

    spider bench fit --dataset FILE --repos TEMPLATE --out DIR [--write-weights]

For every instance the default first stage is run once and the SpIDER neighbourhoods of
its centres are gathered with their features (the expensive part; cached in
``DIR/fit-data.jsonl``). Two logistic models are fitted: p(edited | first-stage rank) for
plain ranked items, and p(edited | neighbour features). The admission margin is chosen by
cross-validation grouped by repository, maximising mean Recall@K of the simulated
exchange. Only the dev data given is ever used.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from spider.bench.dataset import Instance
from spider.bench.ids import graph_ids_for, normalise_id
from spider.bench.metrics import aggregate, dedupe, score_instance
from spider.bench.runner import RepoResolver, index_instance
from spider.expand import exchange
from spider.models import Issue
from spider.select.base import Candidate, SelectionRequest
from spider.select.offline import OfflineSelector, OfflineWeights
from spider.settings import EngineSettings

log = logging.getLogger(__name__)

FIT_DATA = "fit-data.jsonl"
NEIGHBOUR_FEATURES = (
    "log_rank",
    "log_centre_rank",
    "hops",
    "edge_invokes",
    "same_file",
    "same_class",
    "mentioned",
    "same_name",
    "name_overlap",
    "log_dense_rank",
    "log_bm25_rank",
    "signal",
    "centre_signal",
)  # what the neighbour model may use (all computed in spider.expand / spider.locate)
RANKED_FEATURES = ("log_rank",)
L2_C = 1.0  # inverse regularisation strength of both logistic fits
MARGINS = (-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)  # log-odds grid
RANKED_SAMPLE = 500  # first-stage ranks per instance used to fit p(edited | rank)


@dataclass
class FitRecord:
    """What one instance contributes: the pool, the centres' candidates and the truth."""

    instance_id: str
    repo: str
    pool: list[str]  # graph ids, first-stage order
    to_dataset: dict[str, str]  # graph id -> dataset id for pool items
    truth: list[str]  # dataset ids
    requests: list[dict[str, Any]]  # centre, centre_rank, candidates [{id, rank, edge, hops, f}]

    def to_json(self) -> str:
        """One JSON line."""
        return json.dumps(self.__dict__)


def collect(
    instances: Sequence[Instance], resolve: RepoResolver, settings: EngineSettings, out: Path
) -> list[FitRecord]:
    """Gather fit records (resumable: instances already in ``out/fit-data.jsonl`` are reused)."""
    from spider.expand import build_requests
    from spider.locate import first_stage

    path = out / FIT_DATA
    out.mkdir(parents=True, exist_ok=True)
    done: dict[str, FitRecord] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                rec = FitRecord(**json.loads(line))
                done[rec.instance_id] = rec
    with path.open("a") as fh:
        for inst in instances:
            if inst.instance_id in done:
                continue
            t0 = time.perf_counter()
            index, truth, id_map = index_instance(inst, resolve, settings)
            issue = inst.issue()
            fs = first_stage(index, issue, settings)
            ids = index.function_ids
            pool = [ids[i] for i in fs.order[: settings.pool]]
            scores = {ids[i]: float(fs.scores[i]) for i in fs.order[: settings.pool]}
            reqs = build_requests(
                index.graph, issue, pool, scores, settings, fs.item_features(ids, settings.pool)
            )
            cand_ids = {c.id for r in reqs for c in r.candidates}
            rec = FitRecord(
                instance_id=inst.instance_id,
                repo=inst.repo,
                pool=pool,
                to_dataset={g: id_map.get(g, normalise_id(g)) for g in set(pool) | cand_ids},
                truth=truth,
                requests=[
                    {
                        "centre": r.centre,
                        "centre_rank": r.centre_rank,
                        "candidates": [
                            {
                                "id": c.id,
                                "rank": c.rank,
                                "edge": c.edge,
                                "hops": c.hops,
                                "f": c.features,
                            }
                            for c in r.candidates
                        ],
                    }
                    for r in reqs
                ],
            )
            fh.write(rec.to_json() + "\n")
            fh.flush()
            done[inst.instance_id] = rec
            log.info("fit data %s: %.1f s", inst.instance_id, time.perf_counter() - t0)
    return [done[i.instance_id] for i in instances if i.instance_id in done]


def _requests(rec: FitRecord, k: int) -> list[SelectionRequest]:
    issue = Issue("")
    return [
        SelectionRequest(
            issue=issue,
            centre=r["centre"],
            centre_text="",
            centre_rank=r["centre_rank"],
            candidates=tuple(
                Candidate(c["id"], "", c["edge"], c["hops"], c["rank"], 0.0, c["f"])
                for c in r["candidates"]
            ),
            budget_rank=k,
        )
        for r in rec.requests
    ]


def simulate(
    rec: FitRecord, weights: OfflineWeights | None, k: int, placement: str = "probability"
) -> dict[str, float]:
    """Metrics of the exchange under ``weights`` (None = no expansion) for one record."""
    top_k = rec.pool[:k]
    if weights is None:
        final = top_k
    else:
        reqs = _requests(rec, k)
        sel = OfflineSelector(weights)
        admitted = sel.judge(reqs)
        final, placed = exchange(top_k, reqs, admitted, k)
        if placed and placement == "probability":
            rank_of = {n: i + 1 for i, n in enumerate(rec.pool)}
            final = sel.place(final, placed, reqs, rank_of)
    ranked = dedupe(rec.to_dataset.get(g, normalise_id(g)) for g in final)
    return score_instance(ranked, set(rec.truth))


def oracle(rec: FitRecord, k: int) -> dict[str, float]:
    """Metrics when exactly the ground-truth candidates are admitted (expansion's ceiling)."""
    truth = set(rec.truth)
    reqs = _requests(rec, k)
    admitted = [[c.id for c in r.candidates if rec.to_dataset.get(c.id) in truth] for r in reqs]
    final, _ = exchange(rec.pool[:k], reqs, admitted, k)
    return score_instance(dedupe(rec.to_dataset.get(g, g) for g in final), truth)


def _rows(
    records: Sequence[FitRecord], k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    xn, yn, xr, yr = [], [], [], []
    for rec in records:
        truth = set(rec.truth)
        for r, g in enumerate(rec.pool[:RANKED_SAMPLE], 1):
            xr.append([math.log(r)])
            yr.append(1 if rec.to_dataset.get(g) in truth else 0)
        seen: set[str] = set()
        for req in rec.requests:
            for c in req["candidates"]:
                if c["rank"] <= k or c["id"] in seen:
                    continue  # only items that would be inserted teach the neighbour model
                seen.add(c["id"])
                xn.append([float(c["f"].get(name, 0.0)) for name in NEIGHBOUR_FEATURES])
                yn.append(1 if rec.to_dataset.get(c["id"]) in truth else 0)
    return np.array(xn), np.array(yn), np.array(xr), np.array(yr)


def fit_weights(records: Sequence[FitRecord], k: int, margin: float = 0.0) -> OfflineWeights:
    """Logistic fits of both models on ``records``."""
    from sklearn.linear_model import LogisticRegression

    xn, yn, xr, yr = _rows(records, k)
    ranked_model = LogisticRegression(C=L2_C, max_iter=1000).fit(xr, yr)
    ranked = {
        "bias": float(ranked_model.intercept_[0]),
        "log_rank": float(ranked_model.coef_[0][0]),
    }
    if len(set(yn.tolist())) < 2:
        neighbour = {"bias": -30.0}  # no positive example: admit nothing
    else:
        nb_model = LogisticRegression(C=L2_C, max_iter=2000).fit(xn, yn)
        neighbour = {"bias": float(nb_model.intercept_[0])}
        neighbour.update(
            {n: float(w) for n, w in zip(NEIGHBOUR_FEATURES, nb_model.coef_[0], strict=True)}
        )
    return OfflineWeights(neighbour=neighbour, ranked=ranked, margin=margin)


def cross_validate(records: Sequence[FitRecord], k: int) -> dict[str, Any]:
    """Leave-one-repository-out CV over the margin grid; returns the chosen margin and scores."""
    repos = sorted({r.repo for r in records})
    per_margin: dict[float, list[dict[str, float]]] = {m: [] for m in MARGINS}
    base: list[dict[str, float]] = []
    ceiling: list[dict[str, float]] = []
    for held in repos:
        train = [r for r in records if r.repo != held]
        test = [r for r in records if r.repo == held]
        w = fit_weights(train, k)
        for m in MARGINS:
            wm = OfflineWeights(w.neighbour, w.ranked, m)
            per_margin[m].extend(simulate(r, wm, k) for r in test)
        base.extend(simulate(r, None, k) for r in test)
        ceiling.extend(oracle(r, k) for r in test)
    table = {m: aggregate(v) for m, v in per_margin.items()}
    best = max(MARGINS, key=lambda m: (round(table[m][f"R@{k}"], 4), table[m]["MRR@20"]))
    return {
        "margin": best,
        "folds": repos,
        "by_margin": {str(m): table[m] for m in MARGINS},
        "first_stage": aggregate(base),
        "oracle": aggregate(ceiling),
        "instances": len(records),
    }


def write_weights(weights: OfflineWeights, cv: dict[str, Any], command: str, path: Path) -> None:
    """Write the weights file the offline selector ships with."""
    k_key = "R@20"
    data = {
        "comment": "Fitted by `spider bench fit` on the dev set only; see README.",
        "command": command,
        "cv": {
            "instances": cv["instances"],
            "folds": "leave one repository out",
            k_key + " first stage": round(cv["first_stage"][k_key], 4),
            k_key + " offline (cv)": round(cv["by_margin"][str(cv["margin"])][k_key], 4),
            k_key + " oracle": round(cv["oracle"][k_key], 4),
        },
        "neighbour": {n: round(v, 5) for n, v in weights.neighbour.items()},
        "ranked": {n: round(v, 5) for n, v in weights.ranked.items()},
        "margin": weights.margin,
    }
    path.write_text(json.dumps(data, indent=2) + "\n")


__all__ = [
    "FitRecord",
    "collect",
    "cross_validate",
    "fit_weights",
    "graph_ids_for",
    "write_weights",
]
