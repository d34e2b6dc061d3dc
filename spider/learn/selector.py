"""Fit the offline selector's coefficients by grouped cross-validation.

    spider train selector --dataset FILE --repos TEMPLATE --out DIR [--corpus DIR] [--write-weights]

For every instance the default first stage is run once and the SpIDER neighbourhoods of
its centres are gathered with their features (the expensive part; cached in
``DIR/fit-data.jsonl``). Two logistic models are fitted: p(edited | first-stage rank) for
plain ranked items, and p(edited | neighbour features). Only the instances given are used
(a training corpus's, or dev data).

The admission margin follows the paper's η > τ condition, measured by leave-one-repository-
out CV of the simulated exchange: η is the share of admitted neighbours (items the exchange
inserted into the top K) that the fix edits, τ the share of the items they evicted from the
top K that it edits. A swap helps on average only when η > τ, so the chosen margin is the
smallest (the most admissions) at which CV η > τ holds with at least one admission; when no
margin satisfies it, the smallest margin that admits nothing is chosen, and the CV report
says so.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from spider.errors import InvalidSetting, SpiderError
from spider.eval.dataset import Instance
from spider.eval.metrics import aggregate, dedupe, score_instance
from spider.eval.snapshot import RepoResolver
from spider.expand.select.base import Candidate, SelectionRequest
from spider.expand.select.exchange import exchange
from spider.expand.select.offline import WEIGHTS_KIND, OfflineSelector, OfflineWeights
from spider.ids import graph_ids_for, normalise_id
from spider.learn.corpus import pre_fix_base
from spider.learn.cv import CVReport, leave_one_repository_out
from spider.learn.estimator import Logistic
from spider.learn.model_file import Provenance, WeightsBody, write_model_file
from spider.models import Issue
from spider.rank.features import NEIGHBOUR_FEATURES, log_rank, pool_features
from spider.settings import EngineSettings

log = logging.getLogger(__name__)

FIT_DATA = "fit-data.jsonl"
L2_C = 1.0  # inverse regularisation strength of both logistic fits
NEIGHBOUR_MAX_ITER = 2000  # the neighbour model has more features than the rank model
MARGINS = (-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)  # log-odds grid, ascending
RATE_DIGITS = 4  # η, τ and recall as written into the weights file
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


def fit_settings(settings: EngineSettings) -> EngineSettings:
    """``settings`` with the edges whose neighbours the fit gathers made concrete.

    ``edges: auto`` expands nothing when no Anthropic key is set (the product's offline
    default), but the fit is for a repository that turns expansion on, so it reads ``auto``
    as the edges expansion means when a selector judges (contains and invokes). Explicitly
    no edges is refused: there would be nothing to fit on.
    """
    edges = settings.expansion_edges("anthropic")  # auto: the edges a judging selector reads
    if not edges:
        raise InvalidSetting(
            "the selector is fitted on graph neighbours, and SPIDER_EDGES is none: unset it "
            "(contains and invokes) or name the edges to fit on, e.g. SPIDER_EDGES=invokes"
        )
    return settings.model_copy(update={"edges": edges})


def collect(
    instances: Sequence[Instance], resolve: RepoResolver, settings: EngineSettings, out: Path
) -> list[FitRecord]:
    """Gather fit records (resumable: instances already in ``out/fit-data.jsonl`` are reused)
    around each instance's centres, over the edges :func:`fit_settings` makes concrete.

    Long because one instance's record (rank, expansion requests, labels) is gathered in one
    pass with its resume bookkeeping."""
    from spider.expand.neighbours import build_requests
    from spider.localize import ranked_first_stage

    settings = fit_settings(settings)
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
            try:
                index, truth, id_map, inst = pre_fix_base(inst, resolve, settings)
            except SpiderError as exc:  # one unreadable instance does not end the collection
                log.warning("fit data %s skipped: %s", inst.instance_id, exc)
                continue
            issue = inst.issue()
            fs = ranked_first_stage(index, issue, settings)
            ids = index.function_ids
            pool = [ids[i] for i in fs.order[: settings.pool]]
            scores = {ids[i]: float(fs.scores[i]) for i in fs.order[: settings.pool]}
            reqs = build_requests(
                index.graph, issue, pool, scores, settings, pool_features(fs, ids, settings.pool)
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


@dataclass
class Swaps:
    """What the exchange did: items inserted into the top K and items evicted from it,
    each with how many of them the fix edits."""

    admitted: int = 0
    admitted_in_gt: int = 0
    evicted: int = 0
    evicted_in_gt: int = 0

    def __iadd__(self, other: Swaps) -> Swaps:
        self.admitted += other.admitted
        self.admitted_in_gt += other.admitted_in_gt
        self.evicted += other.evicted
        self.evicted_in_gt += other.evicted_in_gt
        return self

    @property
    def eta(self) -> float | None:
        """Share of admitted neighbours in the ground truth (None: nothing admitted)."""
        return self.admitted_in_gt / self.admitted if self.admitted else None

    @property
    def tau(self) -> float | None:
        """Share of evicted items in the ground truth (None: nothing evicted)."""
        return self.evicted_in_gt / self.evicted if self.evicted else None

    def helps(self) -> bool:
        """The paper's condition: something admitted, and η > τ (no eviction costs 0)."""
        eta, tau = self.eta, self.tau
        return eta is not None and eta > (tau or 0.0)


def simulate_swaps(
    rec: FitRecord, weights: OfflineWeights | None, k: int, placement: str = "probability"
) -> tuple[dict[str, float], Swaps]:
    """Metrics of the exchange under ``weights`` (None = no expansion) for one record, and
    its swaps."""
    top_k = rec.pool[:k]
    swaps = Swaps()
    if weights is None:
        final = top_k
    else:
        reqs = _requests(rec, k)
        sel = OfflineSelector(weights)
        admitted = sel.judge(reqs)
        final, placed = exchange(top_k, reqs, admitted, k)
        truth = set(rec.truth)

        def in_gt(g: str) -> bool:
            return rec.to_dataset.get(g, normalise_id(g)) in truth

        kept = set(final)
        evicted = [g for g in top_k if g not in kept]
        swaps = Swaps(len(placed), sum(map(in_gt, placed)), len(evicted), sum(map(in_gt, evicted)))
        if placed and placement == "probability":
            rank_of = {n: i + 1 for i, n in enumerate(rec.pool)}
            final = sel.place(final, placed, reqs, rank_of)
    ranked = dedupe(rec.to_dataset.get(g, normalise_id(g)) for g in final)
    return score_instance(ranked, set(rec.truth)), swaps


def simulate(
    rec: FitRecord, weights: OfflineWeights | None, k: int, placement: str = "probability"
) -> dict[str, float]:
    """Metrics of the exchange under ``weights`` (None = no expansion) for one record."""
    return simulate_swaps(rec, weights, k, placement)[0]


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
            xr.append([log_rank(r)])
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
    """Logistic fits of both models on ``records`` (a model that saw a single class is flat
    at it: no edited neighbour, the selector admits nothing)."""
    xn, yn, xr, yr = _rows(records, k)
    ranked_model = Logistic(c=L2_C).fit(xr, yr)
    ranked = {"bias": ranked_model.intercept, "log_rank": float(ranked_model.coef[0])}
    nb_model = Logistic(c=L2_C, max_iter=NEIGHBOUR_MAX_ITER).fit(
        xn.reshape(-1, len(NEIGHBOUR_FEATURES)), yn
    )
    neighbour = {"bias": nb_model.intercept, **nb_model.named(NEIGHBOUR_FEATURES)}
    return OfflineWeights(neighbour=neighbour, ranked=ranked, margin=margin)


def choose_margin(
    by_margin: dict[float, Swaps],
    recall: dict[float, float] | None = None,
    baseline: float | None = None,
) -> tuple[float, bool, str]:
    """The margin by the η > τ rule, whether the rule was met, and why (one line).

    With ``recall`` (CV Recall@K per margin) and ``baseline`` (the list's own CV Recall@K),
    a margin also has to keep recall at least at the baseline: η > τ counts items, while
    recall averages over issues, and near η ≈ τ the two can disagree."""
    grid = sorted(by_margin)
    for m in grid:
        sw = by_margin[m]
        if recall is not None and baseline is not None and recall[m] < baseline - 1e-9:
            continue
        if sw.helps():
            tau = sw.tau or 0.0
            return (
                m,
                True,
                (
                    f"margin {m}: the smallest with CV η > τ "
                    f"(η {sw.eta:.3f} > τ {tau:.3f}, {sw.admitted} admitted)"
                ),
            )
    silent = [m for m in grid if by_margin[m].admitted == 0]
    if silent:
        return (
            silent[0],
            False,
            (f"no margin satisfies η > τ; margin {silent[0]} admits nothing and is chosen"),
        )
    m = grid[-1]
    return (
        m,
        False,
        (
            f"no margin satisfies η > τ and every margin admits something; the largest, {m}, "
            f"is chosen ({by_margin[m].admitted} admitted)"
        ),
    )


def _rate(x: float | None) -> float | None:
    return None if x is None else round(x, RATE_DIGITS)


def cross_validate(records: Sequence[FitRecord], k: int) -> CVReport[float]:
    """Leave-one-repository-out CV over the margin grid: per margin the exchange's metrics,
    admissions, η and τ; the margin chosen by the η > τ rule (``choose_margin``: the
    report's ``chosen``)."""
    per_margin: dict[float, list[dict[str, float]]] = {m: [] for m in MARGINS}
    swaps: dict[float, Swaps] = {m: Swaps() for m in MARGINS}
    base: list[dict[str, float]] = []
    ceiling: list[dict[str, float]] = []
    folds: list[str] = []
    for held, train, test in leave_one_repository_out(records, lambda r: r.repo):
        folds.append(held)
        w = fit_weights(train, k)
        for m in MARGINS:
            wm = OfflineWeights(w.neighbour, w.ranked, m)
            for r in test:
                metrics, sw = simulate_swaps(r, wm, k)
                per_margin[m].append(metrics)
                swaps[m] += sw
        base.extend(simulate(r, None, k) for r in test)
        ceiling.extend(oracle(r, k) for r in test)
    key = f"R@{k}"
    recall = {m: aggregate(per_margin[m])[key] for m in MARGINS}
    margin, satisfied, reason = choose_margin(swaps, recall, aggregate(base)[key])
    by_margin = {
        str(m): {
            **aggregate(per_margin[m]),
            **asdict(swaps[m]),
            "eta": _rate(swaps[m].eta),
            "tau": _rate(swaps[m].tau),
        }
        for m in MARGINS
    }
    figures = {
        "margin": margin,
        "rule": "smallest margin with CV η > τ, at least one admission and CV "
        f"R@{k} no lower than without expansion",
        "rule_met": satisfied,
        "reason": reason,
        "folds": folds,
        "by_margin": by_margin,
        "first_stage": aggregate(base),
        "oracle": aggregate(ceiling),
        "instances": len(records),
    }
    return CVReport(margin, len(records), "leave one repository out", figures)


def margin_grid(cv: dict[str, Any], k: int = 20) -> list[dict[str, Any]]:
    """One row per candidate margin: admissions, η, τ, R@k and MRR@20 (CV figures)."""
    return [
        {
            "margin": float(m),
            "admissions": row["admitted"],
            "eta": row["eta"],
            "tau": row["tau"],
            f"R@{k}": round(row[f"R@{k}"], RATE_DIGITS),
            "MRR@20": round(row["MRR@20"], RATE_DIGITS),
        }
        for m, row in cv["by_margin"].items()
    ]


def describe_cv(cv: dict[str, Any], k: int = 20) -> str:
    """The CV report as printed by ``spider train selector``: the margin grid, then the choice."""

    def cell(x: float | None) -> str:
        return "–" if x is None else f"{x:.3f}"

    lines = [f"{'margin':>7} {'admitted':>8} {'η':>6} {'τ':>6} {f'R@{k}':>7} {'MRR@20':>7}"]
    for g in margin_grid(cv, k):
        lines.append(
            f"{g['margin']:>7} {g['admissions']:>8} {cell(g['eta']):>6} {cell(g['tau']):>6} "
            f"{g[f'R@{k}']:>7.4f} {g['MRR@20']:>7.4f}"
        )
    chosen = cv["by_margin"][str(cv["margin"])]
    lines.append(cv["reason"])
    lines.append(
        f"first stage R@{k} {cv['first_stage'][f'R@{k}']:.4f}  "
        f"offline (cv, margin {cv['margin']}) {chosen[f'R@{k}']:.4f}  "
        f"oracle {cv['oracle'][f'R@{k}']:.4f}  over {cv['instances']} instances"
    )
    return "\n".join(lines)


def fit_chosen(records: Sequence[FitRecord], cv: dict[str, Any], k: int) -> OfflineWeights:
    """The shipped weights: both models fitted on every record, the CV-chosen margin."""
    return fit_weights(records, k, margin=cv["margin"])


COMMENT = "Fitted by `spider train selector` on the dev set only; see README."
CORPUS_COMMENT = (
    "Fitted by `spider train selector` on the training corpus (other projects' fixed issues, "
    "centres from the shipped pool ranker); see README."
)


def write_weights(
    weights: OfflineWeights,
    cv: dict[str, Any],
    command: str,
    path: Path,
    comment: str = COMMENT,
) -> None:
    """Write the weights file the offline selector ships with (CV figures in ``cv``)."""
    k_key = "R@20"
    chosen = cv["by_margin"][str(cv["margin"])]
    figures = {
        "instances": cv["instances"],
        "folds": "leave one repository out",
        k_key + " first stage": round(cv["first_stage"][k_key], RATE_DIGITS),
        k_key + " offline (cv)": round(chosen[k_key], RATE_DIGITS),
        k_key + " oracle": round(cv["oracle"][k_key], RATE_DIGITS),
        "margin rule": cv["rule"],
        "margin rule met": cv["rule_met"],
        "margin reason": cv["reason"],
        "eta": chosen["eta"],
        "tau": chosen["tau"],
        "admissions": chosen["admitted"],
        "grid": margin_grid(cv),
    }
    body = WeightsBody(
        kind=WEIGHTS_KIND,
        sections={
            "neighbour": {n: round(v, 5) for n, v in weights.neighbour.items()},
            "ranked": {n: round(v, 5) for n, v in weights.ranked.items()},
        },
        # the rule not met: the selector admits nothing, whatever the all-data fit scores
        scalars={"margin": weights.margin, "admits": 1.0 if cv["rule_met"] else 0.0},
    )
    write_model_file(path, body, Provenance(command=command, comment=comment, cv=figures))


__all__ = [
    "FitRecord",
    "Swaps",
    "choose_margin",
    "collect",
    "cross_validate",
    "describe_cv",
    "fit_chosen",
    "fit_weights",
    "graph_ids_for",
    "write_weights",
]
