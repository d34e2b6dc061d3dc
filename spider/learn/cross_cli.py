"""``spider train cross``: train the cross-encoder that re-scores the pool ranker's top.

    spider train cross --corpus DIR --work DIR [--holdout 0.2] [--write-weights]

Reads the training corpus (``spider train corpus``: each pool with its texts), trains
the cross-encoder (:mod:`spider.learn.cross_tune`) and writes its file
(``WORK/cross_encoder.npz``, or the shipped ``spider/cross_encoder.npz`` with
``--write-weights``). With ``--holdout`` the weight of its score is chosen on the kept-out
repositories; without, ``--weight`` gives it (the value a holdout run chose). The command
checkpoints into ``--work`` and the same command resumes. Registered on ``spider train``
by :mod:`spider.learn.cli`.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from spider.cli_common import (
    ProgressOpt,
    WeightsFileOpt,
    WriteWeightsOpt,
    command_line,
    engine_settings,
    exit_error,
    terminal_progress,
)
from spider.errors import SpiderError
from spider.learn.delta_cli import (
    Bf16Opt,
    BudgetOpt,
    EvalEveryOpt,
    ExcludedOpt,
    RankOpt,
    SeedOpt,
    WorkOpt,
    step_reporter,
)

if TYPE_CHECKING:
    from spider.learn.cross_tune import CrossFit, DevScores

GROUP = "train"
CorpusOpt = Annotated[
    Path, typer.Option("--corpus", "-c", help="a `spider train corpus` folder (with texts)")
]
NegativesOpt = Annotated[
    int, typer.Option(help="non-edited functions of the ranker's top per issue and step")
]
MaxTokensOpt = Annotated[int, typer.Option(help="token cap of issue and function together")]
HoldoutOpt = Annotated[
    float,
    typer.Option(
        help="share of issues kept out (whole repositories): a ranker refitted without "
        "them orders their pools, the run validates on them (WORK/curve.jsonl) and the "
        "best weight of the cross-encoder's score is the file's"
    ),
]
WeightOpt = Annotated[
    float | None,
    typer.Option(help="the weight of its standardised score (needed without --holdout)"),
]
DevCorpusOpt = Annotated[
    Path | None,
    typer.Option(
        help="development pools (`spider train corpus`) to score the finished model on, "
        "ordered by the shipped ranker: these only choose between models"
    ),
]


def cross(
    corpus: CorpusOpt,
    work: WorkOpt,
    steps: Annotated[int, typer.Option(help="optimiser steps")] = 400,
    batch: Annotated[int, typer.Option(help="issues per step")] = 4,
    negatives: NegativesOpt = 7,
    depth: Annotated[int, typer.Option(help="the pool ranker's top items it re-scores")] = 30,
    max_tokens: MaxTokensOpt = 192,
    rank: RankOpt = 16,
    lr: Annotated[float, typer.Option(help="peak learning rate of the adapters")] = 2e-4,
    holdout: HoldoutOpt = 0.0,
    weight: WeightOpt = None,
    eval_every: EvalEveryOpt = 100,
    dev_corpus: DevCorpusOpt = None,
    seed: SeedOpt = 0,
    bf16: Bf16Opt = None,
    budget_minutes: BudgetOpt = None,
    excluded: ExcludedOpt = [],  # noqa: B006 - typer reads the default, never mutates it
    write_weights: WriteWeightsOpt = False,
    weights_file: WeightsFileOpt = None,
    progress: ProgressOpt = True,
) -> None:
    """Train the cross-encoder (LoRA on the bundled MiniLM and a head) on the corpus's
    pools; write its file (WORK/cross_encoder.npz, or the shipped file)."""
    from spider.cpu import has_native_bf16
    from spider.learn.cross_tune import CrossConfig, CrossRun, run
    from spider.rank.cross import CROSS_FILE

    logging.getLogger("spider").setLevel(logging.INFO)
    if holdout <= 0 and weight is None:
        raise exit_error("without --holdout, give --weight (the value a holdout run chose)")
    cfg = CrossConfig(
        steps=steps, batch=batch, negatives=negatives, depth=depth, max_tokens=max_tokens,
        rank=rank, alpha=2.0 * rank, lr=lr, holdout=holdout, eval_every=eval_every, seed=seed,
        bf16=has_native_bf16() if bf16 is None else bf16,
    )  # fmt: skip
    target = (weights_file or CROSS_FILE) if write_weights else work / "cross_encoder.npz"
    config = CrossRun(
        corpus, work, target, command_line(GROUP), cfg, weight, tuple(excluded),
        budget_s=budget_minutes * 60 if budget_minutes is not None else None,
        dev_corpus=dev_corpus,
        export_dir=engine_settings().export_dir() if dev_corpus is not None else None,
    )  # fmt: skip
    try:
        with terminal_progress(progress) as listener:
            fit = run(replace(config, on_step=step_reporter(listener)))
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    _print_fit(fit, work)


def _print_fit(fit: CrossFit, work: Path) -> None:
    """What a run did: the holdout, the learning curve, the file (or where it stopped)
    and the development pools' figures."""
    result = fit.training
    if result.holdout_repos:
        typer.echo(
            f"held out {fit.held_issues} issues of {', '.join(result.holdout_repos)}; their "
            "pools are ordered by a ranker refitted without them"
        )
    if fit.dropped:
        typer.echo(f"left out {fit.dropped} issues of excluded repositories")
    for point in result.curve:
        by, best = point["by"], f"{point['best_weight']:g}"
        typer.echo(
            f"step {point['step']}: held-out R@20 / MRR@20: ranker "
            f"{by['0']['R@20']:.3f} / {by['0']['MRR@20']:.3f}; cross-encoder alone "
            f"{by['cross']['R@20']:.3f} / {by['cross']['MRR@20']:.3f}; best weight {best}: "
            f"{by[best]['R@20']:.3f} / {by[best]['MRR@20']:.3f} ({point['issues']} issues)"
        )
    if fit.written is None:
        typer.echo(
            f"stopped at step {result.steps_done} of {result.steps_total} (checkpoint in "
            f"{work}); run the same command again to go on"
        )
        return
    typer.echo(
        f"wrote {fit.written} ({fit.written.stat().st_size / 1e6:.1f} MB; weight "
        f"{fit.weight:g}, depth {fit.depth})"
    )
    if fit.dev is not None:
        _print_dev(fit.dev)


def _print_dev(dev: DevScores) -> None:
    """R@20 / MRR@20 of the development pools by weight, the file's marked."""
    from spider.learn.cross_tune import CROSS_ONLY

    typer.echo(f"development pools ({dev.corpus}, {dev.issues} issues), R@20 / MRR@20 by weight:")
    for key, m in dev.by.items():
        label = "cross-encoder alone" if key == CROSS_ONLY else f"weight {key}"
        mark = " (the file's)" if key == f"{dev.weight:g}" else ""
        typer.echo(f"  {label}: {m['R@20']:.3f} / {m['MRR@20']:.3f}{mark}")
