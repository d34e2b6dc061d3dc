"""Fit the pool ranker (``spider.rank.pool_rank``) on the training corpus.

    spider train ranker --corpus DIR [--write-weights]

LightGBM's lambdarank learns, per instance (one query group), to put the edited functions
of the first stage's pool first. The settings (leaves, trees) are chosen from :data:`GRID`
by leave-one-repository-out cross-validation on the corpus: each repository's pools are
ordered by a model fitted on the other repositories only, and Recall@K / MRR@K are
compared with the first stage's own order of the same pools. Rows from the benchmark's
repositories are never fitted on. The shipped model is fitted on every training row with
the chosen settings; a Platt calibration of the first item's score comes from the
out-of-fold scores of the chosen settings.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any

import numpy as np

from spider.errors import InputError
from spider.eval.metrics import reciprocal_rank
from spider.learn.corpus import CorpusRow, read_corpus, summarise
from spider.learn.cv import CVReport, repository_folds
from spider.learn.excluded import drop_excluded, excluded_repos
from spider.learn.model_file import Provenance, write_model_file
from spider.learn.paired import Scored, mean_scored, paired_deltas
from spider.learn.platt import fit_platt
from spider.rank.calibration import Calibration
from spider.rank.features import HISTORY_FEATURES, RANKER_FEATURES
from spider.rank.pool_rank import MODEL_FILE, PoolRanker, TreeEnsemble, load_ranker, prior_scores

log = logging.getLogger(__name__)

KS = (1, 5, 10, 20)
SEED = 0
SHIP_METRICS = ("R@20", "MRR@20")  # what a new shipped ranker may not lower on any dev set
MIN_DEV_SETS = 2  # Lite and multilingual: a shipped ranker is chosen on both dev sets' pools


@dataclass(frozen=True)
class Params:
    """One point of the settings grid."""

    leaves: int
    trees: int
    learning_rate: float = 0.05
    min_child: int = 50
    prior: float = 0.0  # the trees start from prior x the first stage's order (-log rank)
    # boosters fitted with bagging seeds SEED, SEED + 1, ... and averaged: the rows and
    # features each tree sees are drawn at random, so one seed's order carries that draw
    seeds: int = 1

    def lgbm(self, seed: int = SEED) -> dict[str, Any]:
        """LightGBM parameters for this point (deterministic for a ``seed``, two threads)."""
        return {
            "objective": "lambdarank",
            "metric": "ndcg",
            "ndcg_eval_at": [20],
            "lambdarank_truncation_level": 40,
            "num_leaves": self.leaves,
            "learning_rate": self.learning_rate,
            "min_data_in_leaf": self.min_child,
            "feature_fraction": 0.8,
            "bagging_fraction": 0.8,
            "bagging_freq": 1,
            "lambda_l2": 1.0,
            "num_threads": 2,
            "deterministic": True,
            "force_row_wise": True,
            "seed": seed,
            "verbosity": -1,
        }


GRID: tuple[Params, ...] = tuple(
    Params(leaves, trees, prior=prior)
    for prior in (0.0, 1.0)
    for leaves in (3, 7)
    for trees in (50, 100, 200)
)  # small trees, few rounds: a few hundred issues overfit 300 rounds of 7 leaves


# feature families a fit can leave out (``spider train ranker --without``), to measure them
FAMILIES: dict[str, tuple[str, ...]] = {"history": HISTORY_FEATURES}


def without(rows: Sequence[CorpusRow], families: Sequence[str]) -> list[CorpusRow]:
    """``rows`` with the columns of ``families`` set to 0: trees never split on a constant,
    so a model fitted on them never reads those features."""
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        raise InputError(
            f"unknown feature family {', '.join(unknown)}; known: {', '.join(FAMILIES)}"
        )
    cols = [RANKER_FEATURES.index(n) for f in families for n in FAMILIES[f]]
    if not cols:
        return list(rows)
    out = []
    for r in rows:
        x = r.x.copy()
        x[:, cols] = 0.0
        out.append(dataclasses.replace(r, x=x))
    return out


def score_pools(model: PoolRanker, rows: Sequence[CorpusRow]) -> dict[str, Any]:
    """``model`` against the first stage's order on pools it never saw (e.g. the
    development sets' pools from ``spider train corpus --warm``): overall and per
    repository. Benchmark repositories are welcome here: this only measures."""
    tally = Tally()
    for r in rows:
        if r.labels > 0:
            tally.add(r, np.argsort(-model.scores(r.x), kind="stable"))
    if not tally.after:
        raise InputError("no pool to score: the corpus has no instance with a label")
    return {
        "instances": len(tally.after),
        "first_stage": mean_metrics(tally.before),
        "ranker": mean_metrics(tally.after),
        "by_repo": {
            repo: {"n": len(b), "first_stage": mean_metrics(b), "ranker": mean_metrics(a)}
            for repo, (b, a) in sorted(tally.per_repo.items())
        },
    }


def dev_evidence(
    candidate: PoolRanker,
    predecessor: PoolRanker | None,
    dev: Mapping[str, Sequence[CorpusRow]],
    families: Sequence[str] = (),
) -> dict[str, dict[str, Any]]:
    """Per development corpus (never fitted on): the candidate's figures and, on the same
    pools, the predecessor's (the model it would replace) and the :data:`SHIP_METRICS` where
    the candidate is lower. ``families`` are left out of the candidate's rows only, as it
    was fitted."""
    out: dict[str, dict[str, Any]] = {}
    for name, rows in dev.items():
        new = score_pools(candidate, without(rows, families))
        entry: dict[str, Any] = {
            "instances": new["instances"],
            "first_stage": new["first_stage"],
            "candidate": new["ranker"],
        }
        if predecessor is not None:
            old = score_pools(predecessor, rows)["ranker"]
            entry["predecessor"] = old
            entry["lower"] = [m for m in SHIP_METRICS if new["ranker"][m] < old[m]]
        out[name] = entry
    return out


def ship_refusal(evidence: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Why a candidate may not become the shipped ranker, or None when it may: it is
    scored on at least :data:`MIN_DEV_SETS` development corpora and is lower than the
    predecessor on none of them (corpus CV alone, or one dev set, chose the regressed
    history ranker)."""
    if len(evidence) < MIN_DEV_SETS:
        return (
            f"a shipped ranker is chosen on {MIN_DEV_SETS} development sets' pools (one "
            f"--dev-corpus each: Lite and multilingual); got {len(evidence)}"
        )
    lower = {name: e["lower"] for name, e in evidence.items() if e.get("lower")}
    if lower:
        where = "; ".join(f"{name}: {', '.join(ms)}" for name, ms in sorted(lower.items()))
        return f"lower than the shipped ranker on a development set ({where})"
    return None


def training_rows(rows: Sequence[CorpusRow]) -> tuple[list[CorpusRow], int]:
    """Rows that may teach: not from an excluded repository (the benchmarks' and the held-out
    evaluation's, :mod:`spider.learn.excluded`), with an edited function in the graph.
    Returns them and how many excluded rows were left out."""
    kept, dropped = drop_excluded(rows, _repo, excluded_repos())
    return [r for r in kept if r.labels > 0], sum(dropped.values())


@dataclass
class LambdaRank:
    """LightGBM's lambdarank under ``params``: ``groups`` names each row's query (one
    instance's pool, rows of a query adjacent); the fitted model is a :class:`PoolRanker`."""

    params: Params
    seed: int = SEED  # the first booster's bagging seed (the others follow it)
    fitted: PoolRanker | None = None

    def fit(
        self, x: np.ndarray, y: np.ndarray, groups: Sequence[object] | None = None
    ) -> LambdaRank:
        """Fit on the pools in ``x`` / ``y``, one query per run of equal ``groups``."""
        import lightgbm

        if groups is None:
            raise InputError("a ranking objective needs each row's query (groups)")
        if self.params.seeds < 1:
            raise InputError(f"seeds must be at least 1, not {self.params.seeds}")
        sizes = [len(list(run)) for _key, run in itertools.groupby(groups)]
        start = prior_scores(x, self.params.prior)
        parts = []
        for seed in range(self.seed, self.seed + self.params.seeds):
            data = lightgbm.Dataset(x, y, group=sizes, init_score=start)
            booster = lightgbm.train(
                self.params.lgbm(seed), data, num_boost_round=self.params.trees
            )
            parts.append(TreeEnsemble.from_lightgbm(booster.dump_model()))
        trees = parts[0] if len(parts) == 1 else TreeEnsemble.mean(parts)
        self.fitted = PoolRanker(trees, max(sizes), prior=self.params.prior)
        return self

    @property
    def model(self) -> PoolRanker:
        """The fitted model (InputError before :meth:`fit`)."""
        if self.fitted is None:
            raise InputError("the ranker has not been fitted")
        return self.fitted

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The fitted model's score for each row of ``x``."""
        return self.model.scores(x)


def fit(rows: Sequence[CorpusRow], params: Params, seed: int = SEED) -> PoolRanker:
    """A lambdarank model over the pools of ``rows`` (rows without an edited candidate in
    the pool teach nothing and are skipped), its bagging drawn from ``seed``."""
    teach = [r for r in rows if r.positives > 0]
    if not teach:
        raise InputError("no training instance has an edited function among its candidates")
    x = np.vstack([r.x for r in teach])
    y = np.concatenate([r.y for r in teach])
    groups = [n for n, r in enumerate(teach) for _ in range(len(r.y))]
    return LambdaRank(params, seed).fit(x, y, groups).model


def metrics(y: np.ndarray, labels: int) -> dict[str, float]:
    """Recall@K, Acc@20 and MRR@20 of one ordered pool (``labels``: edited functions in the
    graph, in or out of the pool). Two graph ids of one labelled function (a property's
    setter, an overload) can both be candidates, so hits are capped at ``labels``."""
    out: dict[str, float] = {}
    if labels <= 0:
        return out
    for k in KS:
        out[f"R@{k}"] = min(float(y[:k].sum()), labels) / labels
    out["A@20"] = float(y[:20].sum() >= labels)
    out["MRR@20"] = reciprocal_rank(y, 20)
    return out


def mean_metrics(items: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The mean of each metric over instances (4 decimals)."""
    keys = items[0].keys() if items else ()
    return {k: round(fmean(m[k] for m in items), 4) for k in keys}


@dataclass
class Tally:
    """Per-instance metrics of the first stage's order (before) and a model's (after),
    overall and per repository."""

    before: list[dict[str, float]] = field(default_factory=list)
    after: list[dict[str, float]] = field(default_factory=list)
    per_repo: dict[str, tuple[list[dict[str, float]], list[dict[str, float]]]] = field(
        default_factory=dict
    )

    def add(self, row: CorpusRow, order: np.ndarray) -> dict[str, float]:
        """Score ``row``'s pool as the first stage ordered it and as ``order`` does; returns
        the metrics of ``order``."""
        b, a = metrics(row.y, row.labels), metrics(row.y[order], row.labels)
        self.before.append(b)
        self.after.append(a)
        mine = self.per_repo.setdefault(row.repo, ([], []))
        mine[0].append(b)
        mine[1].append(a)
        return a


def _repo(r: CorpusRow) -> str:
    return r.repo


def with_weak(
    train: Sequence[CorpusRow], test: Sequence[CorpusRow], weak: Sequence[CorpusRow]
) -> list[CorpusRow]:
    """A fold's training rows plus the weak rows (fitted on, never scored) of repositories
    the fold does not hold out."""
    held = {r.repo for r in test}
    return [*train, *(w for w in weak if w.repo not in held)]


def held_out_orders(
    rows: Sequence[CorpusRow],
    params: Params,
    folds: int = 0,
    weak: Sequence[CorpusRow] = (),
    repeat: int = 0,
) -> Iterator[tuple[CorpusRow, np.ndarray, np.ndarray]]:
    """Each row with its scores and order under ``params`` fitted without its fold
    (``folds`` groups of repositories, 0 = one per repository; ``weak`` rows join each
    fold's fit, never its scores). ``repeat`` > 0 draws another split of the repositories
    into folds and another bagging seed (repeated CV); 0 is the one split every run makes."""
    shuffle = repeat if repeat > 0 else None
    for _held, train, test in repository_folds(rows, _repo, folds, shuffle):
        model = fit(with_weak(train, test, weak), params, SEED + repeat)
        for r in test:
            s = model.scores(r.x)
            yield r, s, np.argsort(-s, kind="stable")


@dataclass(frozen=True)
class HeldOut:
    """One recipe's leave-repository-out run: the ``report`` (before = the first stage's
    order of the same pools), the out-of-fold (first item's score, whether it is edited)
    pairs in ``top``, and each instance's metrics in ``scored`` (for a paired comparison)."""

    report: dict[str, Any]
    top: list[tuple[float, int]]
    scored: Scored


def loro(
    rows: Sequence[CorpusRow],
    params: Params,
    folds: int = 0,
    weak: Sequence[CorpusRow] = (),
    repeat: int = 0,
) -> HeldOut:
    """Leave-repository-out figures of ``params`` (``folds`` groups of repositories, 0 = one
    per repository). ``weak`` rows (e.g. fix commits mined from history) join each fold's
    fit, never its scores; ``repeat``: which split and seed (:func:`held_out_orders`)."""
    tally = Tally()
    top: list[tuple[float, int]] = []
    scored: dict[str, tuple[str, dict[str, float]]] = {}
    for r, s, order in held_out_orders(rows, params, folds, weak, repeat):
        scored[r.instance_id] = (r.repo, tally.add(r, order))
        if len(order):
            top.append((float(s[order[0]]), int(r.y[order[0]])))
    before, after = tally.before, tally.after
    by_repo = {
        repo: {"n": len(b), "before": mean_metrics(b), "after": mean_metrics(a)}
        for repo, (b, a) in sorted(tally.per_repo.items())
    }
    report = {
        "params": {
            "leaves": params.leaves,
            "trees": params.trees,
            "learning_rate": params.learning_rate,
            "min_child": params.min_child,
            "prior": params.prior,
            "seeds": params.seeds,
        },
        "folds": folds or "one repository per fold",
        "instances": len(after),
        "first_stage": mean_metrics(before),
        "ranker": mean_metrics(after),
        "by_repo": by_repo,
    }
    return HeldOut(report, top, scored)


def recipe_of(path: Path) -> tuple[Params, tuple[str, ...]] | None:
    """The settings a model file was fitted with and the feature families it never read (a
    file older than a family lacks its features), or None when the file does not say."""
    doc = json.loads(path.read_text())
    params, features = doc.get("params"), doc.get("features")
    if not isinstance(params, dict) or not isinstance(features, list):
        return None
    known = {f.name for f in dataclasses.fields(Params)}
    left_out = tuple(f for f, names in FAMILIES.items() if not set(names) & set(features))
    return Params(**{k: v for k, v in params.items() if k in known}), left_out


def given_recipe(path: Path, drop: Sequence[str]) -> tuple[tuple[Params, ...], list[str]]:
    """A one-point grid of ``path``'s recipe, and the families to leave out: those it never
    read besides ``drop``."""
    try:
        recipe = recipe_of(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the model file {path}: {exc}") from exc
    if recipe is None:
        raise InputError(
            f"{path} records no settings or feature list, so its recipe cannot be refitted; "
            "give --recipe-of a file written by `spider train ranker`"
        )
    params, left_out = recipe
    return (params,), sorted({*drop, *left_out})


PAIRED_METRICS = ("R@5", "R@20", "MRR@20")


def versus_recipe(
    raw: Sequence[CorpusRow],
    candidate: tuple[Params, Sequence[str]],
    baseline: tuple[Params, Sequence[str]],
    folds: int = 0,
    weak: Sequence[CorpusRow] = (),
    candidate_scored: Scored | None = None,
    repeats: int = 1,
) -> dict[str, Any]:
    """Two recipes (settings, families left out) in the same corpus CV, paired per
    instance: whether the candidate's recipe loses to the baseline's beyond the noise.
    ``candidate_scored``: the candidate's out-of-fold metrics where its CV already made them
    (the same folds), so they are not fitted again. ``repeats`` > 1: the CV run that many
    times, each with another split of the repositories and bagging seed (both recipes on
    the same ones), and each instance's metrics averaged over the runs before pairing, so
    that which repositories happened to share a fold weighs less."""
    if repeats < 1:
        raise InputError(f"repeats must be at least 1, not {repeats}")

    def scored(recipe: tuple[Params, Sequence[str]], repeat: int) -> Scored:
        params, drop = recipe
        return loro(without(raw, drop), params, folds, without(weak, drop), repeat).scored

    params, drop = baseline
    mine = [
        candidate_scored if r == 0 and candidate_scored is not None else scored(candidate, r)
        for r in range(repeats)
    ]
    theirs = [scored(baseline, r) for r in range(repeats)]
    return {
        "baseline": {**dataclasses.asdict(params), "without": list(drop)},
        "repeats": repeats,
        **paired_deltas(mean_scored(mine), mean_scored(theirs), PAIRED_METRICS),
    }


@dataclass(frozen=True)
class RankerChoice:
    """What the pool ranker's CV chooses: the parameters and their out-of-fold calibration."""

    params: Params
    calibration: Calibration
    scored: Scored  # each instance's out-of-fold metrics under ``params``


def calibrate(top: Sequence[tuple[float, int]]) -> Calibration:
    """Platt scaling of out-of-fold first-item scores (:func:`spider.learn.platt.fit_platt`:
    flat at a single class)."""
    return fit_platt(np.array([s for s, _ in top]), np.array([t for _, t in top]))


def cross_validate(
    rows: Sequence[CorpusRow],
    grid: Sequence[Params] = GRID,
    key: str = "R@20",
    folds: int = 0,
    weak: Sequence[CorpusRow] = (),
) -> CVReport[RankerChoice]:
    """The grid point with the best leave-repository-out ``key`` (MRR@20 breaks ties) and
    its out-of-fold calibration (the report's ``chosen``), and every point's figures."""
    if len({r.repo for r in rows}) < 2:
        raise InputError("leave-one-repository-out CV needs instances from at least 2 repositories")
    points: list[tuple[Params, HeldOut]] = []
    for params in grid:
        run = loro(rows, params, folds, weak)
        log.info("%s: %s", params, run.report["ranker"])
        points.append((params, run))
    best_params, best = max(
        points, key=lambda p: (p[1].report["ranker"][key], p[1].report["ranker"]["MRR@20"])
    )
    how = f"{folds} groups of repositories" if folds else "leave one repository out"
    cv = {
        "folds": how,
        "chosen_by": key,
        "chosen": best.report,
        "grid": [
            {**r.report["params"], **{f"ranker {k}": v for k, v in r.report["ranker"].items()}}
            for _p, r in points
        ],
    }
    choice = RankerChoice(best_params, calibrate(best.top), best.scored)
    return CVReport(choice, len(rows), how, cv)


def learning_curve(
    rows: Sequence[CorpusRow],
    params: Params,
    shares: Sequence[float] = (0.25, 0.5, 1.0),
    folds: int = 0,
    weak: Sequence[CorpusRow] = (),
) -> list[dict[str, Any]]:
    """Leave-repository-out R@20 / MRR@20 when each fold fits on a share of the other
    repositories' instances (the same random subset order for every share)."""
    rng = np.random.default_rng(SEED)
    rank = {r.instance_id: float(v) for r, v in zip(rows, rng.random(len(rows)), strict=True)}
    out = []
    for share in shares:
        after: list[dict[str, float]] = []
        for _held, train, test in repository_folds(rows, _repo, folds):
            keep = sorted(train, key=lambda r: rank[r.instance_id])[
                : max(1, int(len(train) * share))
            ]
            model = fit(with_weak(keep, test, weak), params)
            for r in test:
                after.append(metrics(r.y[np.argsort(-model.scores(r.x), kind="stable")], r.labels))
        m = mean_metrics(after)
        out.append({"share": share, "R@20": m["R@20"], "MRR@20": m["MRR@20"]})
    return out


COMMENT = (
    "Fitted by `spider train ranker` on the training corpus (other projects' fixes; never a "
    "benchmark repository). See README."
)


def write_ranker(path: Path, model: PoolRanker, cv: Mapping[str, Any], command: str) -> Path:
    """Write the model file (``cv`` as :func:`cross_validate` returns it, with ``data`` and
    optionally ``weak`` and ``learning_curve`` added by the command)."""
    import lightgbm

    provenance = Provenance(
        command=command,
        comment=COMMENT,
        cv={k: cv["chosen"][k] for k in ("instances", "first_stage", "ranker")},
        extra={
            "lightgbm": lightgbm.__version__,
            "params": cv["chosen"]["params"],
            "learning_curve": cv.get("learning_curve"),
            "trained_on": cv["data"],
            "weak": cv.get("weak"),
            "dev": cv.get("dev"),  # the development pools it was chosen on, beside its predecessor
            "versus_predecessor_recipe": cv.get("versus_predecessor_recipe"),  # in corpus CV
        },
    )
    return write_model_file(path, model, provenance)


@dataclass(frozen=True)
class RankerRun:
    """What ``spider train ranker`` asks for: the corpora, the CV, and where the model would
    go (``target``; written only with ``write``, and to the shipped file only when the
    development pools allow it)."""

    corpus_dirs: tuple[Path, ...]
    command: str  # as typed: the file's provenance
    target: Path = MODEL_FILE
    write: bool = False
    curve: bool = True  # also the learning curve
    folds: int = 0  # 0: one repository per fold
    weak_dirs: tuple[Path, ...] = ()  # fitted on, never scored
    without: tuple[str, ...] = ()  # feature families left out
    dev_dirs: tuple[Path, ...] = ()  # development pools: choose between models, never fit
    recipe_from: Path | None = None  # this file's recipe instead of the grid's choice
    seeds: int = 1  # boosters averaged at every grid point (Params.seeds)
    repeats: int = 1  # runs of the paired CV against the predecessor's recipe, averaged


@dataclass
class RankerFit:
    """What :func:`run` did: the CV report (with the data, the learning curve and the
    development evidence), the file written, or why the shipped file was not replaced."""

    cv: dict[str, Any]
    written: Path | None = None
    refusal: str | None = None


def run(config: RankerRun) -> RankerFit:
    """Cross-validate the grid (or one file's recipe) on the corpus, fit the chosen point on
    every row (when it is to be written, compared on development pools, or is a file's
    recipe), compare its recipe with the replaced file's in the same CV, paired (when that
    file records its settings), and write it where allowed."""
    grid, drop = GRID, list(config.without)
    if config.recipe_from is not None:
        if config.seeds != 1:
            raise InputError("--seeds sets the grid's points; --recipe-of refits the file's own")
        grid, drop = given_recipe(config.recipe_from, drop)
    else:
        grid = tuple(dataclasses.replace(p, seeds=config.seeds) for p in grid)
    replaced = config.target if config.target.is_file() else MODEL_FILE  # else the shipped
    if config.repeats > 1 and not (replaced.is_file() and recipe_of(replaced)):
        raise InputError(  # before the CV's minutes, not after
            f"--repeats repeats the paired CV against the recipe of {replaced}, which "
            "records no settings; name a file written by `spider train ranker` with "
            "--weights-file"
        )
    raw, banned = training_rows([r for d in config.corpus_dirs for r in read_corpus(d)])
    raw_weak, weak_banned = training_rows([r for d in config.weak_dirs for r in read_corpus(d)])
    rows, weak = without(raw, drop), without(raw_weak, drop)
    names = [d.name for d in config.dev_dirs]
    dev = {d.name if names.count(d.name) == 1 else str(d): read_corpus(d) for d in config.dev_dirs}
    report = cross_validate(rows, grid, folds=config.folds, weak=weak)
    chosen, cv = report.chosen, report.to_json()
    if config.recipe_from is not None:
        cv["chosen_by"] = f"the recipe of {config.recipe_from.name}"

    if config.curve:
        cv["learning_curve"] = learning_curve(rows, chosen.params, folds=config.folds, weak=weak)
    data = summarise(rows)
    cv["data"] = {k: data[k] for k in ("repositories", "total", "pool_recall", "by_repo")}
    cv["excluded_rows_left_out"] = banned + weak_banned
    if weak:
        w = summarise(weak)
        cv["weak"] = {k: w[k] for k in ("repositories", "total", "pool_recall")}
    cv["without"] = drop
    result = RankerFit(cv)
    if not (config.write or dev or config.recipe_from or config.repeats > 1):
        return result
    model = dataclasses.replace(fit([*rows, *weak], chosen.params), calibration=chosen.calibration)
    predecessor = load_ranker(replaced) if replaced.is_file() else None
    if dev:
        cv["dev"] = dev_evidence(model, predecessor, dev, drop)
    recipe = recipe_of(replaced) if predecessor is not None else None
    if recipe is not None:  # the predecessor's recipe in the same CV, paired
        cv["versus_predecessor_recipe"] = versus_recipe(
            raw, (chosen.params, drop), recipe, config.folds, raw_weak, chosen.scored,
            config.repeats,
        )  # fmt: skip
    if config.write:
        shipped = config.target.resolve() == MODEL_FILE.resolve()
        result.refusal = ship_refusal(cv.get("dev", {})) if shipped else None
        if result.refusal is None:
            result.written = write_ranker(config.target, model, cv, config.command)
    return result
