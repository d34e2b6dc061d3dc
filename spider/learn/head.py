"""Fit the head model of ``spider.rank.rerank`` by grouped cross-validation on dev data only.

    spider train head --dataset FILE --repos TEMPLATE --out DIR [--write-weights]

Per instance the default first stage runs once without re-ranking, and the features of its
top ``POOL`` functions are stored with their labels (``DIR/<instance>.npz``; the expensive
part, resumable). A logistic model p(edited | features) is fitted on the top ``pool`` items
of each instance with L2 strength ``C``; (pool, C) is chosen from ``GRID`` by
leave-one-repository-out CV. The reported figure is *nested*: each repository's top K is
re-sorted by a model whose (pool, C) and coefficients were chosen without it, so the choice
itself is cross-validated. The shipped weights use the choice made on every instance; the
CV figures go into the weights file beside the command line.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import fmean
from typing import Any

import numpy as np

from spider.errors import InputError
from spider.eval.dataset import Instance
from spider.eval.metrics import reciprocal_rank
from spider.eval.snapshot import RepoResolver, index_instance
from spider.learn.cv import CVReport, leave_one_repository_out
from spider.learn.estimator import Logistic
from spider.learn.model_file import Provenance, WeightsBody, write_model_file
from spider.rank.features import HEAD_FEATURES as FEATURES
from spider.rank.features import head_features
from spider.rank.rerank import WEIGHTS_KIND, RerankWeights
from spider.retrieve.first_stage import first_stage
from spider.settings import EngineSettings

log = logging.getLogger(__name__)

MIN_REPOS = 3  # nested CV: an outer fold holds one out, the inner choice needs two more
POOL = 100  # first-stage items per instance collected (the most any grid point uses)
L2_C = 0.1  # inverse L2 strength on standardised features (the grid's usual choice)
MAX_ITER = 5000  # lbfgs iterations: small C on many features converges slowly
GRID: tuple[tuple[int, float], ...] = tuple(
    (pool, c) for pool in (20, 50, 100) for c in (0.003, 0.01, 0.03, 0.1, 1.0)
)  # (items per instance that teach the model, inverse L2 strength)


def collect(
    instances: Sequence[Instance], resolve: RepoResolver, settings: EngineSettings, out: Path
) -> list[dict[str, Any]]:
    """Features and labels of each instance's first-stage top ``POOL`` (cached in ``out``)."""

    out.mkdir(parents=True, exist_ok=True)
    plain = settings.model_copy(update={"rerank": False})
    rows: list[dict[str, Any]] = []
    for inst in instances:
        path = out / f"{inst.instance_id}.npz"
        if not path.exists():
            index, truth, id_map = index_instance(inst, resolve, plain)
            issue = inst.issue()
            fs = first_stage(index, issue, plain, history=False)
            head = [int(i) for i in fs.order[:POOL]]
            wanted = set(truth)
            np.savez(
                path,
                x=head_features(index, fs, head),
                y=np.array([id_map[index.function_ids[i]] in wanted for i in head]),
                ngt=len(wanted),
                repo=inst.repo,
            )
            log.info("collected %s", inst.instance_id)
        data = dict(np.load(path))
        if list(data["x"].shape[1:]) != [len(FEATURES)]:
            raise InputError(f"{path} holds other features; delete {out} and collect again")
        data["repo"] = str(data["repo"])
        data["instance_id"] = inst.instance_id
        if int(data["ngt"]) > 0:
            rows.append(data)
    return rows


def fit(rows: Sequence[dict[str, Any]], c: float = L2_C, pool: int = POOL) -> RerankWeights:
    """Logistic fit on the top ``pool`` items of each row (standardised features),
    returned on the raw feature scale. Nothing edited among these items: a flat model,
    and the fused order stands."""
    x = np.vstack([r["x"][:pool] for r in rows])
    y = np.concatenate([r["y"][:pool] for r in rows]).astype(int)
    model = Logistic(c=c, max_iter=MAX_ITER, standardise=True).fit(x, y)
    return RerankWeights(coef=model.named(FEATURES), bias=model.intercept)


def reordered_mrr(row: dict[str, Any], weights: RerankWeights | None, k: int) -> float:
    """MRR@k of one instance's top k, as first-stage order or re-sorted by ``weights``."""
    y = row["y"][:k]
    if weights is None:
        return reciprocal_rank(y, k)
    order = np.argsort(-weights.logits(row["x"][:k]), kind="stable")
    return reciprocal_rank(y[order], k)


def _repo(row: dict[str, Any]) -> str:
    return str(row["repo"])


def _loro(rows: Sequence[dict[str, Any]], k: int, pool: int, c: float) -> list[float]:
    """Per-instance MRR@k, each repository re-sorted by a model fitted on the others."""
    out: list[float] = []
    for _held, train, test in leave_one_repository_out(rows, _repo):
        w = fit(train, c, pool)
        out.extend(reordered_mrr(r, w, k) for r in test)
    return out


def choose(
    rows: Sequence[dict[str, Any]], k: int, grid: Sequence[tuple[int, float]] = GRID
) -> tuple[int, float]:
    """The (pool, C) with the best leave-one-repository-out MRR@k on ``rows``."""
    return max(grid, key=lambda g: (round(fmean(_loro(rows, k, *g)), 6), -g[0], -g[1]))


def cross_validate(
    rows: Sequence[dict[str, Any]], k: int, grid: Sequence[tuple[int, float]] = GRID
) -> CVReport[tuple[int, float]]:
    """Nested leave-one-repository-out MRR@k of the re-sorted head, per repository and
    overall, and the (pool, C) chosen on all rows (the report's ``chosen``)."""
    repos: list[str] = []
    before: dict[str, list[float]] = {}
    after: dict[str, list[float]] = {}
    chosen: dict[str, tuple[int, float]] = {}
    for held, train, test in leave_one_repository_out(rows, _repo):
        repos.append(held)
        chosen[held] = choose(train, k, grid) if len(grid) > 1 else grid[0]
        w = fit(train, chosen[held][1], chosen[held][0])
        before[held] = [reordered_mrr(r, None, k) for r in test]
        after[held] = [reordered_mrr(r, w, k) for r in test]
    pool, c = choose(rows, k, grid) if len(grid) > 1 else grid[0]
    every_before = [v for vs in before.values() for v in vs]
    every_after = [v for vs in after.values() for v in vs]
    folds = "leave one repository out; (pool, C) chosen inside each fold (nested)"
    figures = {
        "instances": len(rows),
        "folds": folds,
        "pool": pool,
        "C": c,
        f"MRR@{k} first stage": round(fmean(every_before), 4),
        f"MRR@{k} re-ranked (nested cv)": round(fmean(every_after), 4),
        "by_repo": {
            rp: {
                "n": len(before[rp]),
                "before": round(fmean(before[rp]), 4),
                "after": round(fmean(after[rp]), 4),
                "pool, C": list(chosen[rp]),
            }
            for rp in repos
        },
    }
    return CVReport((pool, c), len(rows), folds, figures)


COMMENT = "Fitted by `spider train head` on the dev set only; see README."


def write_weights(weights: RerankWeights, cv: Mapping[str, Any], command: str, path: Path) -> None:
    """Write the weights file ``spider.rank.rerank`` ships with."""
    body = WeightsBody(
        kind=WEIGHTS_KIND,
        sections={"coef": {n: round(v, 5) for n, v in weights.coef.items()}},
        scalars={"bias": round(weights.bias, 5)},
    )
    figures = {k: v for k, v in cv.items() if k != "by_repo"}
    write_model_file(path, body, Provenance(command=command, comment=COMMENT, cv=figures))
