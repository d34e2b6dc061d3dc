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
from collections import Counter
from pathlib import Path
from typing import Annotated

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
from spider.learn.delta_cli import Bf16Opt, BudgetOpt, ExcludedOpt, step_reporter

GROUP = "train"
RANKER_PARAMS = (7, 200, 1.0)  # leaves, trees, prior: the shipped pool ranker's settings


def cross(
    corpus: Annotated[
        Path, typer.Option("--corpus", "-c", help="a `spider train corpus` folder (with texts)")
    ],
    work: Annotated[
        Path, typer.Option("--work", help="checkpoints (the same command resumes from them)")
    ],
    steps: Annotated[int, typer.Option(help="optimiser steps")] = 400,
    batch: Annotated[int, typer.Option(help="issues per step")] = 4,
    negatives: Annotated[
        int, typer.Option(help="non-edited functions of the ranker's top per issue and step")
    ] = 7,
    depth: Annotated[int, typer.Option(help="the pool ranker's top items it re-scores")] = 30,
    max_tokens: Annotated[int, typer.Option(help="token cap of issue and function together")] = 192,
    rank: Annotated[int, typer.Option(help="LoRA rank")] = 16,
    lr: Annotated[float, typer.Option(help="peak learning rate of the adapters")] = 2e-4,
    holdout: Annotated[
        float,
        typer.Option(
            help="share of issues kept out (whole repositories): a ranker refitted without "
            "them orders their pools, the run validates on them (WORK/curve.jsonl) and the "
            "best weight of the cross-encoder's score is the file's"
        ),
    ] = 0.0,
    weight: Annotated[
        float | None,
        typer.Option(help="the weight of its standardised score (needed without --holdout)"),
    ] = None,
    eval_every: Annotated[int, typer.Option(help="steps between validations")] = 100,
    dev_corpus: Annotated[
        Path | None,
        typer.Option(
            help="development pools (`spider train corpus`) to score the finished model on, "
            "ordered by the shipped ranker: these only choose between models"
        ),
    ] = None,
    seed: Annotated[int, typer.Option()] = 0,
    bf16: Bf16Opt = None,
    budget_minutes: BudgetOpt = None,
    excluded: ExcludedOpt = [],  # noqa: B006 - typer reads the default, never mutates it
    write_weights: WriteWeightsOpt = False,
    weights_file: WeightsFileOpt = None,
    progress: ProgressOpt = True,
) -> None:
    """Train the cross-encoder (LoRA on the bundled MiniLM and a head) on the corpus's
    pools; write its file (WORK/cross_encoder.npz, or the shipped file).

    Long because the fitting logic still lives in the command (ranker refit, holdout, training,
    provenance, writing): issue 40's `run(config) -> FitResult` moves it into
    :mod:`spider.learn.cross_tune`."""
    from spider.cpu import has_native_bf16
    from spider.cross import CROSS_FILE
    from spider.learn.corpus import read_corpus
    from spider.learn.cross_tune import (
        CrossConfig,
        holdout_repos,
        read_groups,
        split_holdout,
        train,
        write_cross,
    )
    from spider.learn.excluded import excluded_repos, is_excluded
    from spider.learn.ranker import Params, fit, training_rows
    from spider.pool_rank import default_ranker
    from spider.retrieve.delta import weights_fingerprint
    from spider.retrieve.dense import bundled_model_path

    logging.getLogger("spider").setLevel(logging.INFO)
    if holdout <= 0 and weight is None:
        raise exit_error("without --holdout, give --weight (the value a holdout run chose)")
    cfg = CrossConfig(
        steps=steps,
        batch=batch,
        negatives=negatives,
        depth=depth,
        max_tokens=max_tokens,
        rank=rank,
        alpha=2.0 * rank,
        lr=lr,
        holdout=holdout,
        eval_every=eval_every,
        seed=seed,
        bf16=has_native_bf16() if bf16 is None else bf16,
    )
    try:
        skip = excluded_repos(excluded)
        ranker = default_ranker()
        rows, _ = training_rows(read_corpus(corpus))
        rows = [r for r in rows if r.positives > 0 and not is_excluded(r.repo, skip)]
        held_repos = holdout_repos(dict(Counter(r.repo for r in rows)), holdout, seed)
        if held_repos:
            leaves, trees, prior = RANKER_PARAMS
            ranker = fit(
                [r for r in rows if r.repo not in held_repos], Params(leaves, trees, prior=prior)
            )
        groups, dropped = read_groups(corpus, skip, ranker.scores if ranker else None, depth)
        teach, held, held_repos = split_holdout(groups, holdout, seed)
        if held_repos:
            typer.echo(
                f"held out {len(held)} issues of {', '.join(held_repos)}; their pools are "
                "ordered by a ranker refitted without them"
            )
        if dropped:
            typer.echo(f"left out {dropped} issues of excluded repositories")
        base = bundled_model_path()
        with terminal_progress(progress) as listener:
            budget = budget_minutes * 60 if budget_minutes is not None else None
            model, result = train(
                teach, held, base, work, cfg, budget_s=budget, on_step=step_reporter(listener)
            )
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    for point in result.curve:
        by, best = point["by"], f"{point['best_weight']:g}"
        typer.echo(
            f"step {point['step']}: held-out R@20 / MRR@20: ranker "
            f"{by['0']['R@20']:.3f} / {by['0']['MRR@20']:.3f}; cross-encoder alone "
            f"{by['cross']['R@20']:.3f} / {by['cross']['MRR@20']:.3f}; best weight {best}: "
            f"{by[best]['R@20']:.3f} / {by[best]['MRR@20']:.3f} ({point['issues']} issues)"
        )
    if not result.finished:
        typer.echo(
            f"stopped at step {result.steps_done} of {result.steps_total} (checkpoint in "
            f"{work}); run the same command again to go on"
        )
        return
    chosen = weight if weight is not None else float(result.curve[-1]["best_weight"])
    target = (weights_file or CROSS_FILE) if write_weights else work / "cross_encoder.npz"
    meta = {
        "command": command_line(GROUP),
        "trained_on": {
            "issues": result.issues,
            "repositories": result.repos,
            "held_out": result.holdout_repos,
        },
        "curve": result.curve,
        "config": vars(cfg),
        "final_loss": sum(result.losses[-50:]) / max(1, len(result.losses[-50:])),
        "seconds": round(result.seconds),
    }
    write_cross(model, target, weights_fingerprint(Path(base)), chosen, meta)
    typer.echo(
        f"wrote {target} ({target.stat().st_size / 1e6:.1f} MB; weight {chosen:g}, "
        f"depth {cfg.depth})"
    )
    if dev_corpus is not None:
        _score_dev(target, dev_corpus, engine_settings().export_dir())


def _score_dev(path: Path, dev: Path, export_dir: Path) -> None:
    """Print R@20 / MRR@20 of the development pools, ordered by the shipped ranker, re-sorted
    by the written file through the engine's own scorer (ONNX) at each weight."""
    from spider.cross import CrossScorer, read_cross
    from spider.learn.cross_tune import CROSS_ONLY, evaluate, read_groups
    from spider.pool_rank import default_ranker
    from spider.retrieve.dense import bundled_model_path

    model = read_cross(path, bundled_model_path())
    scorer = CrossScorer(model, export_dir)
    ranker = default_ranker()
    groups, _ = read_groups(dev, frozenset(), ranker.scores if ranker else None, model.depth)
    by = evaluate(groups, [scorer.scores(g.query, list(g.texts)) for g in groups])
    typer.echo(f"development pools ({dev}, {len(groups)} issues), R@20 / MRR@20 by weight:")
    for key, m in by.items():
        label = "cross-encoder alone" if key == CROSS_ONLY else f"weight {key}"
        mark = " (the file's)" if key == f"{model.weight:g}" else ""
        typer.echo(f"  {label}: {m['R@20']:.3f} / {m['MRR@20']:.3f}{mark}")
