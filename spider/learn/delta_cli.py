"""``spider train pairs`` and ``spider train delta``: the tuned encoder's two commands.

spider train pairs --repos TEMPLATE --code-repos owner/name,... --dataset FILE --out DIR
spider train delta --pairs DIR --work DIR [--holdout 0.15] [--budget-minutes M] [--write-weights]

``pairs`` writes code–text and issue pairs (:mod:`spider.learn.pairs`); ``delta`` tunes
both sides of the bundled encoder on them and writes the LoRA delta
(:mod:`spider.learn.encoder_tune`). ``delta`` checkpoints into ``--work`` and the same
command resumes; with ``--write-weights`` the finished delta replaces the shipped
``spider/encoder_delta.npz``. Registered on ``spider train`` by :mod:`spider.learn.cli`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from spider.cli_common import (
    DatasetsOpt,
    ProgressOpt,
    ReposOpt,
    WeightsFileOpt,
    WriteWeightsOpt,
    command_line,
    engine_settings,
    exit_error,
    split_csv,
    terminal_progress,
)
from spider.errors import SpiderError

if TYPE_CHECKING:
    from spider.learn.encoder_tune import DeltaFit
    from spider.progress import Progress

GROUP = "train"
ExcludedOpt = Annotated[
    list[Path],
    typer.Option(
        "--excluded",
        help="further lists of owner/name never to train on (the shipped list always applies)",
    ),
]


Bf16Opt = Annotated[
    bool | None,
    typer.Option(
        "--bf16/--fp32",
        help="bfloat16 autocast [default: where the CPU multiplies bf16 natively (AMX, "
        "AVX-512 BF16); elsewhere it is emulated and several times slower than fp32]",
        show_default=False,
    ),
]
BudgetOpt = Annotated[
    float | None, typer.Option(help="stop at a checkpoint after this long (run again)")
]
WorkOpt = Annotated[
    Path, typer.Option("--work", help="checkpoints (the same command resumes from them)")
]
RankOpt = Annotated[int, typer.Option(help="LoRA rank")]
EvalEveryOpt = Annotated[int, typer.Option(help="steps between validations")]
SeedOpt = Annotated[int, typer.Option()]
CommitStepsOpt = Annotated[
    int, typer.Option(help="optimiser steps on mined fix commits (after code-text)")
]
BatchingOpt = Annotated[
    str,
    typer.Option(
        help="'mixed': a batch draws from every repository; 'repo': from one repository, "
        "so the other queries' functions are same-repository negatives"
    ),
]
FractionOpt = Annotated[
    float, typer.Option(help="share of each kind's pairs used (learning curves)")
]
DeltaHoldoutOpt = Annotated[
    float,
    typer.Option(
        help="share of issue queries kept out (whole repositories) to validate on; "
        "writes the learning curve to WORK/curve.jsonl"
    ),
]
CodeReposOpt = Annotated[
    str | None,
    typer.Option(help="comma-separated owner/name whose HEAD gives code-text pairs"),
]
MinedOpt = Annotated[
    list[Path],
    typer.Option(
        "--mined",
        help="fix commits mined from history (`spider bench history --mine-only` "
        "writes DIR/dataset.jsonl): each message, and the changelog line it adds, is a query",
    ),
]
FragmentsOpt = Annotated[
    bool,
    typer.Option(
        "--fragments/--no-fragments", help="a mined commit's changelog line as a second query"
    ),
]
ConsistencyOpt = Annotated[
    bool,
    typer.Option(
        "--consistency/--no-consistency",
        help="drop issue pairs the untuned model ranks last among their negatives",
    ),
]


def step_reporter(listener: Progress | None) -> Callable[[int, int, float], None]:
    """What a training loop calls after each step: the progress bar's training phase, or
    a log line every 25 steps when there is no bar."""
    from spider.progress import TRAINING

    def on_step(step: int, total: int, loss: float) -> None:
        if listener is not None:
            listener(TRAINING, step, total, f"loss {loss:.3f}")
        elif step % 25 == 0:
            logging.getLogger("spider").info("step %d/%d loss %.4f", step, total, loss)

    return on_step


def pairs(
    repos: ReposOpt,
    out: Annotated[Path, typer.Option("--out", "-o", help="pairs folder (resumable)")],
    code_repos: CodeReposOpt = None,
    dataset: DatasetsOpt = [],  # noqa: B006 - typer reads the default, never mutates it
    mined: MinedOpt = [],  # noqa: B006
    fragments: FragmentsOpt = True,
    excluded: ExcludedOpt = [],  # noqa: B006
    max_files: Annotated[int, typer.Option(help="files sampled per code repository")] = 2000,
    max_pairs: Annotated[int, typer.Option(help="code-text pairs per repository at most")] = 4000,
    max_per_repo: Annotated[int, typer.Option(help="issues per repository at most")] = 200,
    progress: ProgressOpt = True,
) -> None:
    """Write code-text pairs (docstring or comment -> the function without it), commit
    pairs (a mined fix commit's message or changelog line -> each function it edits) and
    issue pairs (issue -> each function its fix edits), with hard negatives, into OUT."""
    from spider.learn.pairs import PairsRun, run

    logging.getLogger("spider").setLevel(logging.INFO)
    config = PairsRun(
        repos, out, command_line(GROUP), engine_settings(),
        code_repos=tuple(split_csv(code_repos) or []) if code_repos else None,
        datasets=tuple(dataset), mined=tuple(mined), fragments=fragments,
        excluded=tuple(excluded), max_files=max_files, max_pairs=max_pairs,
        max_per_repo=max_per_repo,
    )  # fmt: skip
    try:
        with terminal_progress(progress) as listener:
            fit = run(replace(config, progress=listener))
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    for kind, dropped in fit.excluded().items():
        typer.echo(
            f"{kind}: dropped {sum(dropped.values())} from excluded repositories: "
            + ", ".join(sorted(dropped))
        )
    typer.echo(json.dumps(fit.summary, indent=2))


def delta(
    pairs_dir: Annotated[Path, typer.Option("--pairs", help="a `spider train pairs` folder")],
    work: WorkOpt,
    code_steps: Annotated[int, typer.Option(help="optimiser steps on code-text pairs")] = 500,
    commit_steps: CommitStepsOpt = 0,
    issue_steps: Annotated[int, typer.Option(help="optimiser steps on issue pairs")] = 300,
    batch: Annotated[int, typer.Option(help="queries per step")] = 16,
    negatives: Annotated[int, typer.Option(help="hard negatives per query")] = 1,
    batching: BatchingOpt = "mixed",
    rank: RankOpt = 16,
    lr: Annotated[float, typer.Option(help="peak learning rate")] = 2e-4,
    fraction: FractionOpt = 1.0,
    holdout: DeltaHoldoutOpt = 0.0,
    eval_every: EvalEveryOpt = 100,
    seed: SeedOpt = 0,
    consistency: ConsistencyOpt = True,
    bf16: Bf16Opt = None,
    budget_minutes: BudgetOpt = None,
    excluded: ExcludedOpt = [],  # noqa: B006
    write_weights: WriteWeightsOpt = False,
    weights_file: WeightsFileOpt = None,
    progress: ProgressOpt = True,
) -> None:
    """Tune both sides of the bundled encoder (LoRA) on the pairs: code-text first, then
    issues; write the delta (WORK/encoder_delta.npz, or the shipped file)."""
    from spider.cpu import has_native_bf16
    from spider.learn.encoder_tune import DeltaRun, TuneConfig, run
    from spider.retrieve.delta import DELTA_FILE

    logging.getLogger("spider").setLevel(logging.INFO)
    cfg = TuneConfig(
        stages=[("code-text", code_steps), ("commit", commit_steps), ("issue", issue_steps)],
        batch=batch, negatives=negatives, batching=batching, rank=rank, alpha=2.0 * rank, lr=lr,
        fraction=fraction, holdout=holdout, eval_every=eval_every, seed=seed,
        consistency=consistency, bf16=has_native_bf16() if bf16 is None else bf16,
    )  # fmt: skip
    target = (weights_file or DELTA_FILE) if write_weights else work / "encoder_delta.npz"
    budget = budget_minutes * 60 if budget_minutes is not None else None
    config = DeltaRun(pairs_dir, work, target, command_line(GROUP), cfg, tuple(excluded), budget)
    try:
        with terminal_progress(progress) as listener:
            fit = run(replace(config, on_step=step_reporter(listener)))
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    _print_delta(fit, work)


def _print_delta(fit: DeltaFit, work: Path) -> None:
    """What a run did: the learning curve, then the file written or where it stopped."""
    result = fit.training
    for point in result.curve:
        seen = ", ".join(f"{k} {v}" for k, v in point["seen"].items() if v)
        typer.echo(
            f"held-out issues ({', '.join(result.holdout_repos)}) at step {point['step']} "
            f"({seen or 'untuned'}): MRR {point['mrr']:.3f}, top-1 {point['top1']:.3f}, "
            f"top-3 {point['top3']:.3f} of {point['queries']}"
            + (
                f"; in the repository's pool of ~{point['repo_pool']}: MRR "
                f"{point['repo_mrr']:.3f}, top-10 {point['repo_top10']:.3f}"
                if "repo_mrr" in point
                else ""
            )
        )
    if fit.written is None:
        typer.echo(
            f"stopped at step {result.steps_done} of {result.steps_total} (checkpoint in "
            f"{work}); run the same command again to go on"
        )
        return
    typer.echo(f"wrote {fit.written} ({fit.written.stat().st_size / 1e6:.1f} MB)")
