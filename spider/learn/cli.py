"""``spider train``: build the training corpus and fit every learned model of the engine.

spider train corpus --dataset FILE [--dataset FILE ...] --repos TEMPLATE --out DIR
spider train ranker --corpus DIR [--weak-corpus DIR] [--out FILE] [--write-weights]
spider train encoder --corpus DIR --dataset FILE [--folds K] [--write-weights]
spider train selector --dataset FILE --repos TEMPLATE --out DIR [--corpus DIR] [--write-weights]
spider train head --dataset FILE --repos TEMPLATE --out DIR [--write-weights]
spider train calibration --dataset FILE --repos TEMPLATE --out DIR [--write-weights]
spider train fusion --dataset FILE --repos TEMPLATE --out DIR
spider train pairs --repos TEMPLATE --code-repos owner/name,... --dataset FILE --out DIR
spider train delta --pairs DIR --work DIR [--budget-minutes M] [--write-weights]

The last four collect per-instance data from repositories at their base commits, choose
by leave-one-repository-out cross-validation and (with ``--write-weights``) fit on every
instance: one body, :func:`spider.learn.dev_fit.run` (through :func:`run_fit`), for all of them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from spider.cli_common import (
    CacheOpt,
    DatasetsOpt,
    KOpt,
    OnlyRepoOpt,
    PlainCommand,
    PlainGroup,
    ProgressOpt,
    ReposOpt,
    SkipRepoOpt,
    WeightsFileOpt,
    WriteWeightsOpt,
    command_line,
    engine_settings,
    exit_error,
    split_csv,
    terminal_progress,
)
from spider.errors import SpiderError
from spider.eval.dataset import Instance, read_dataset, select_instances
from spider.eval.snapshot import RepoResolver, template_resolver
from spider.learn import cross_cli, delta_cli
from spider.settings import EngineSettings

if TYPE_CHECKING:
    from spider.learn.dev_fit import Fitting

GROUP = "train"  # the command group: `spider train ...` in every recorded command line
DEFAULT_K = 20  # the budget K the fits are scored at (EngineSettings' default)
# spider.learn.corpus's defaults, repeated (a test keeps them equal): importing the corpus
# module would load the first stage (numpy, scipy, bm25s) into every `spider` start
DEFAULT_POOL = 200
DEFAULT_MAX_PER_REPO = 40
_T = TypeVar("_T")  # one collected instance of a fitting command
_W = TypeVar("_W")  # the weights a fitting command writes

CorpusDirs = Annotated[
    list[Path], typer.Option("--corpus", "-c", help="a `train corpus` folder (repeatable: pooled)")
]
ReportFile = Annotated[
    Path | None, typer.Option("--out", "-o", help="write the CV report here (JSON)")
]
OutDir = Annotated[
    Path, typer.Option("--out", "-o", help="collected data (resumable) and the CV report")
]
PoolOpt = Annotated[
    int, typer.Option(help="candidates kept per instance (the corpus's pool: the cold path's too)")
]
MaxPerRepoOpt = Annotated[int, typer.Option(help="instances per repository at most")]
FoldsOpt = Annotated[
    int,
    typer.Option(
        help="CV folds of whole repositories (0 = one repository per fold; fewer folds, fewer fits)"
    ),
]
WeakCorpusOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--weak-corpus",
        "-w",
        help="a corpus fitted on but never scored (e.g. fix commits mined by `spider "
        "bench history --mine-only`); a fold leaves out its held-out repositories' rows",
    ),
]
WithoutOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--without",
        help="leave a feature family out of the fit (history), to measure what it adds",
    ),
]
RecipeOfOpt = Annotated[
    Path | None,
    typer.Option(
        "--recipe-of",
        exists=True,
        dir_okay=False,
        help="cross-validate and fit this model file's recipe (its recorded settings, without "
        "the feature families it never read) instead of choosing on the grid: to measure an "
        "older file's recipe on today's corpus, paired against --weights-file's",
    ),
]
DevCorpusOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--dev-corpus",
        help="also score the fitted model, and the model file it would replace, on these "
        "pools (`spider train corpus --warm` over a development set; one per set): "
        "chooses between models, never fits. Writing the shipped model needs both dev "
        "sets and no lower R@20 or MRR@20 on either",
    ),
]

train_app = typer.Typer(
    cls=PlainGroup,
    help="Learn the engine's models: the training corpus, the pool ranker, the query encoder, "
    "the selector, the head model, its calibration and the fusion weights.",
    no_args_is_help=True,
    add_completion=False,
)


def run_fit(
    spec: Fitting[_T, _W],
    rows: Sequence[Instance],
    resolve: RepoResolver,
    settings: EngineSettings,
    out: Path,
    *,
    write_weights: bool = False,
    weights_file: Path | None = None,
) -> None:
    """:func:`spider.learn.dev_fit.run` on ``rows``, with a progress bar; print the CV
    report and the file written. Too few repositories, or nothing collected, is a clean
    error."""
    from spider.learn.dev_fit import DevRun, run

    found = sorted({r.repo for r in rows})
    if rows and len(found) < spec.min_repos:
        raise exit_error(
            f"leave-one-repository-out CV needs instances from at least {spec.min_repos} "
            f"repositories; --only-repo leaves {', '.join(found)}"
        )
    config = DevRun(rows, resolve, settings, out, command_line(GROUP), write_weights, weights_file)
    try:
        with terminal_progress() as progress:
            fit = run(spec, replace(config, progress=progress))
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    typer.echo(spec.describe(fit.cv))
    if fit.written is not None:
        typer.echo(f"wrote {fit.written}")


def _fit_dev(
    spec: Fitting[_T, _W],
    dataset: Sequence[Path],
    repos: str,
    out: Path,
    only_repo: str | None,
    settings: EngineSettings,
    *,
    write_weights: bool = False,
    weights_file: Path | None = None,
) -> None:
    """:func:`run_fit` on the rows of ``dataset`` (``--only-repo`` applied), their
    repositories found through the ``--repos`` template: the dev-data commands' one body."""
    run_fit(
        spec,
        _instances(dataset, only_repo),
        template_resolver(repos),
        settings,
        out,
        write_weights=write_weights,
        weights_file=weights_file,
    )


def _instances(
    dataset: Sequence[Path], only_repo: str | None, skip_repo: str | None = None
) -> list[Instance]:
    """The rows of every dataset, ``--only-repo`` kept (in its order), ``--skip-repo`` not;
    an unreadable dataset is a clean error."""
    try:
        rows = [i for d in dataset for i in read_dataset(d)]
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    rows = select_instances(rows, repos=split_csv(only_repo))
    skip = set(split_csv(skip_repo) or [])
    return [r for r in rows if r.repo not in skip]


@train_app.command(cls=PlainCommand, name="corpus")
def corpus(
    dataset: DatasetsOpt,
    repos: ReposOpt,
    out: Annotated[Path, typer.Option("--out", "-o", help="corpus folder (resumable)")],
    pool: PoolOpt = DEFAULT_POOL,
    max_per_repo: MaxPerRepoOpt = DEFAULT_MAX_PER_REPO,
    only_repo: OnlyRepoOpt = None,
    skip_repo: SkipRepoOpt = None,
    budget_s: Annotated[
        float | None, typer.Option(help="start no new instance after this many seconds")
    ] = None,
    cache_dir: CacheOpt = None,
    warm: Annotated[
        bool,
        typer.Option(
            "--warm/--cold",
            help="embed every function (the pools an indexed repository ranks) or only each "
            "pool (the cold path: much cheaper)",
        ),
    ] = False,
    progress: ProgressOpt = True,
) -> None:
    """Collect each instance's candidate pool, features and labels into OUT."""
    from spider.learn.corpus import build_corpus

    logging.getLogger("spider").setLevel(logging.INFO)
    try:
        with terminal_progress(progress) as listener:
            summary = build_corpus(
                _instances(dataset, only_repo, skip_repo),
                template_resolver(repos),
                engine_settings(cache_dir=cache_dir),
                out,
                pool=pool,
                max_per_repo=max_per_repo,
                budget_s=budget_s,
                warm=warm,
                progress=listener,
            )
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    typer.echo(json.dumps(summary, indent=2))


@train_app.command(cls=PlainCommand, name="ranker")
def ranker(
    corpus_dirs: CorpusDirs,
    out: ReportFile = None,
    write_weights: WriteWeightsOpt = False,
    curve: Annotated[
        bool, typer.Option("--curve/--no-curve", help="also the learning curve")
    ] = True,
    weights_file: WeightsFileOpt = None,
    folds: FoldsOpt = 0,
    weak_dirs: WeakCorpusOpt = None,
    without_families: WithoutOpt = None,
    dev_dirs: DevCorpusOpt = None,
    recipe_from: RecipeOfOpt = None,
    seeds: Annotated[
        int,
        typer.Option(
            min=1,
            help="boosters with different bagging seeds averaged at every grid point "
            "(each fit takes this many times as long)",
        ),
    ] = 1,
    repeats: Annotated[
        int,
        typer.Option(
            min=1,
            help="run the paired CV against the replaced file's recipe this many times, "
            "each with another split of the repositories into --folds and another bagging "
            "seed, and average each issue's figures before pairing (each run refits both)",
        ),
    ] = 1,
) -> None:
    """Choose the pool ranker's settings by leave-repository-out CV and fit it
    (spider/rank/pool_ranker.json)."""
    from spider.learn.ranker import RankerRun, run
    from spider.rank.pool_rank import MODEL_FILE

    logging.getLogger("spider").setLevel(logging.INFO)
    config = RankerRun(
        tuple(corpus_dirs), command_line(GROUP), weights_file or MODEL_FILE, write_weights,
        curve, folds, tuple(weak_dirs or []), tuple(without_families or []),
        tuple(dev_dirs or []), recipe_from, seeds, repeats,
    )  # fmt: skip
    try:
        fit = run(config)
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    if out is not None:
        out.write_text(json.dumps(fit.cv, indent=2) + "\n")
    shown = ("chosen_by", "chosen", "learning_curve", "without", "dev", "versus_predecessor_recipe")
    typer.echo(json.dumps({k: fit.cv[k] for k in shown if k in fit.cv}, indent=2))
    if fit.refusal is not None:
        raise exit_error(
            f"not written to {MODEL_FILE.name}: {fit.refusal}. docs/learning.md, 'Choosing a "
            "model'; --weights-file writes a candidate elsewhere"
        )
    if fit.written is not None:
        typer.echo(f"wrote {fit.written}")


@train_app.command(cls=PlainCommand, name="encoder")
def encoder(
    corpus_dirs: CorpusDirs,
    dataset: DatasetsOpt,  # the JSONL the corpus came from: its issue texts
    out: ReportFile = None,
    folds: Annotated[int, typer.Option(help="CV folds of whole repositories")] = 5,
    write_weights: WriteWeightsOpt = False,
    weights_file: WeightsFileOpt = None,
) -> None:
    """Tune the issue encoder's query side (a linear map of the query vectors; function
    vectors unchanged) on the corpus's (issue, edited function) pairs, settings chosen by
    CV over folds of whole repositories against the bundled model as is
    (spider/query_adapter.npz)."""
    from spider.learn.adapter import AdapterRun, run
    from spider.retrieve.adapter import ADAPTER_FILE

    logging.getLogger("spider").setLevel(logging.INFO)
    target = weights_file or ADAPTER_FILE
    config = AdapterRun(tuple(corpus_dirs), tuple(dataset), command_line(GROUP), target,
                        write_weights, folds)  # fmt: skip
    try:
        fit = run(config)
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    if out is not None:
        out.write_text(json.dumps(fit.cv, indent=2) + "\n")
    shown = ("chosen_by", "chosen", "pays", "left_out")
    typer.echo(json.dumps({k: fit.cv[k] for k in shown}, indent=2))
    if fit.written is not None:
        typer.echo(f"wrote {fit.written}")


@train_app.command(cls=PlainCommand, name="selector")
def selector(
    dataset: DatasetsOpt,
    repos: ReposOpt,
    out: OutDir,
    corpus_dir: Annotated[
        Path | None,
        typer.Option(
            "--corpus",
            "-c",
            help="fit on this corpus's instances (other projects; centres from the shipped "
            "pool ranker: how the shipped weights were made); without it, on the dataset's "
            "instances as given (dev data)",
        ),
    ] = None,
    pool: PoolOpt = DEFAULT_POOL,  # with --corpus
    max_per_repo: MaxPerRepoOpt = DEFAULT_MAX_PER_REPO,  # with --corpus
    only_repo: OnlyRepoOpt = None,
    k: KOpt = DEFAULT_K,
    cache_dir: CacheOpt = None,
    write_weights: WriteWeightsOpt = False,
    weights_file: WeightsFileOpt = None,
) -> None:
    """Fit the offline neighbour selector (spider/expand/select/offline_weights.json): the
    admission margin by the η > τ rule under leave-one-repository-out CV.

    Long because its signature is the command's options (a third of the lines) and the --corpus
    form chooses its rows here."""
    from spider.expand.select.offline import WEIGHTS_FILE
    from spider.learn import selector as fitting
    from spider.learn.corpus import (
        corpus_settings,
        dedupe_by_text,
        interleave,
        read_corpus,
    )
    from spider.learn.dev_fit import Fitting
    from spider.learn.excluded import drop_excluded, excluded_repos

    settings = engine_settings(k, cache_dir)
    comment = fitting.COMMENT
    try:
        rows = _instances(dataset, only_repo)
        if corpus_dir is not None:
            logging.getLogger("spider").setLevel(logging.INFO)
            kept = {r.instance_id for r in read_corpus(corpus_dir) if r.labels > 0}
            rows = dedupe_by_text(rows)
            rows, _ = drop_excluded(rows, lambda r: r.repo, excluded_repos())
            rows = [r for r in rows if r.instance_id in kept]
            rows = interleave(rows, max_per_repo)
            settings = corpus_settings(settings, pool).model_copy(update={"rerank": True})
            comment = fitting.CORPUS_COMMENT
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    spec = Fitting(
        fitting.collect,
        fitting.cross_validate,
        "selector-cv.json",
        describe=lambda cv: fitting.describe_cv(cv, settings.k),
        weights=fitting.fit_chosen,
        write=lambda w, cv, command, path: fitting.write_weights(w, cv, command, path, comment),
        weights_file=WEIGHTS_FILE,
    )
    run_fit(
        spec,
        rows,
        template_resolver(repos),
        settings,
        out,
        write_weights=write_weights,
        weights_file=weights_file,
    )


@train_app.command(cls=PlainCommand, name="head")
def head(
    dataset: DatasetsOpt,
    repos: ReposOpt,
    out: OutDir,
    only_repo: OnlyRepoOpt = None,
    k: KOpt = DEFAULT_K,
    cache_dir: CacheOpt = None,
    write_weights: WriteWeightsOpt = False,
    weights_file: WeightsFileOpt = None,
) -> None:
    """Fit the head re-ranker (spider/rank/rerank_weights.json) by nested leave-one-repository-out
    CV on dev data only."""
    from spider.learn import head as fitting
    from spider.learn.dev_fit import Fitting
    from spider.rank.rerank import WEIGHTS_FILE

    spec = Fitting(
        fitting.collect,
        fitting.cross_validate,
        "head-cv.json",
        weights=lambda data, cv, _k: fitting.fit(data, cv["C"], cv["pool"]),
        write=fitting.write_weights,
        weights_file=WEIGHTS_FILE,
        min_repos=fitting.MIN_REPOS,
    )
    _fit_dev(
        spec,
        dataset,
        repos,
        out,
        only_repo,
        engine_settings(k, cache_dir),
        write_weights=write_weights,
        weights_file=weights_file,
    )


@train_app.command(cls=PlainCommand, name="calibration")
def calibration(
    dataset: DatasetsOpt,
    repos: ReposOpt,
    out: OutDir,
    only_repo: OnlyRepoOpt = None,
    k: KOpt = DEFAULT_K,
    cache_dir: CacheOpt = None,
    write_weights: WriteWeightsOpt = False,
    weights_file: WeightsFileOpt = None,
) -> None:
    """Calibrate the head model's probability (spider/rank/head_calibration.json; Platt,
    leave-one-repository-out) on dev data; reports the reliability curve and what a
    confidence bar would silence. Shares `train head`'s collected data (same --out)."""
    from spider.learn import calibration as calibrating
    from spider.learn import head as fitting
    from spider.learn.dev_fit import Fitting
    from spider.rank.rerank import CALIBRATION_FILE

    spec = Fitting(
        fitting.collect,
        calibrating.cross_validate,
        "calibration-cv.json",
        describe=calibrating.describe,
        weights=lambda _data, cv, _k: cv,
        write=lambda cv, _cv, command, path: calibrating.write_calibration(cv, command, path),
        weights_file=CALIBRATION_FILE,
    )
    _fit_dev(
        spec,
        dataset,
        repos,
        out,
        only_repo,
        engine_settings(k, cache_dir),
        write_weights=write_weights,
        weights_file=weights_file,
    )


@train_app.command(cls=PlainCommand, name="fusion")
def fusion(
    dataset: DatasetsOpt,
    repos: ReposOpt,
    out: OutDir,
    only_repo: OnlyRepoOpt = None,
    cache_dir: CacheOpt = None,
) -> None:
    """Choose the first-stage fusion weights by leave-one-repository-out CV (dev data only;
    the chosen point is reported, not written: the weights are EngineSettings defaults)."""
    from spider.learn import fusion as tuning
    from spider.learn.dev_fit import Fitting

    spec: Fitting[dict[str, Any], None] = Fitting(
        tuning.collect, lambda data, _k: tuning.cross_validate(data), "fusion-cv.json"
    )
    _fit_dev(spec, dataset, repos, out, only_repo, engine_settings(tuning.K, cache_dir))


train_app.command(cls=PlainCommand, name="pairs")(delta_cli.pairs)
train_app.command(cls=PlainCommand, name="delta")(delta_cli.delta)
train_app.command(cls=PlainCommand, name="cross")(cross_cli.cross)


def main() -> None:
    """Run ``train_app`` on its own (``python -m spider.learn.cli``)."""
    train_app()


if __name__ == "__main__":
    main()
