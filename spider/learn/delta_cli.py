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
    code_repos: Annotated[
        str | None,
        typer.Option(help="comma-separated owner/name whose HEAD gives code-text pairs"),
    ] = None,
    dataset: DatasetsOpt = [],  # noqa: B006 - typer reads the default, never mutates it
    mined: Annotated[
        list[Path],
        typer.Option(
            "--mined",
            help="fix commits mined from history (`spider bench history --mine-only` "
            "writes DIR/dataset.jsonl): each message, and the changelog line it adds, is a query",
        ),
    ] = [],  # noqa: B006
    fragments: Annotated[
        bool,
        typer.Option(
            "--fragments/--no-fragments", help="a mined commit's changelog line as a second query"
        ),
    ] = True,
    excluded: ExcludedOpt = [],  # noqa: B006
    max_files: Annotated[int, typer.Option(help="files sampled per code repository")] = 2000,
    max_pairs: Annotated[int, typer.Option(help="code-text pairs per repository at most")] = 4000,
    max_per_repo: Annotated[int, typer.Option(help="issues per repository at most")] = 200,
    progress: ProgressOpt = True,
) -> None:
    """Write code-text pairs (docstring or comment -> the function without it), commit
    pairs (a mined fix commit's message or changelog line -> each function it edits) and
    issue pairs (issue -> each function its fix edits), with hard negatives, into OUT.

    Long because the mining logic still lives in the command: issue 40's `run(config)` moves it
    into :mod:`spider.learn.pairs`."""
    from spider.dataset import read_dataset
    from spider.learn.excluded import excluded_repos
    from spider.learn.pairs import (
        SUMMARY_FILE,
        build_code_text,
        build_issue_pairs,
        commit_queries,
    )
    from spider.snapshot import template_resolver

    logging.getLogger("spider").setLevel(logging.INFO)
    settings = engine_settings()
    try:
        banned = excluded_repos(excluded)
        resolve = template_resolver(repos)
        summary: dict[str, object] = {"command": command_line(GROUP)}
        with terminal_progress(progress) as listener:
            if code_repos:

                def repo_path(repo: str) -> str:
                    owner, _, name = repo.partition("/")
                    return repos.format(owner=owner, name=name)

                summary["code-text"] = build_code_text(
                    split_csv(code_repos) or [],
                    repo_path,
                    settings,
                    out,
                    banned,
                    max_files=max_files,
                    max_pairs=max_pairs,
                    progress=listener,
                )
            if mined:
                commits = [i for d in mined for i in read_dataset(_mined_file(d))]
                summary["commits"] = build_issue_pairs(
                    commit_queries(commits, fragments=fragments),
                    resolve,
                    settings,
                    out,
                    banned,
                    max_per_repo=2 * max_per_repo,
                    kind="commit",
                    progress=listener,
                )
            if dataset:
                rows = [i for d in dataset for i in read_dataset(d)]
                summary["issues"] = build_issue_pairs(
                    rows,
                    resolve,
                    settings,
                    out,
                    banned,
                    max_per_repo=max_per_repo,
                    progress=listener,
                )
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    out.mkdir(parents=True, exist_ok=True)
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    for kind in ("code-text", "commits", "issues"):
        part = summary.get(kind)
        if isinstance(part, dict) and part.get("excluded"):
            dropped = sum(part["excluded"].values())
            typer.echo(
                f"{kind}: dropped {dropped} from excluded repositories: "
                + ", ".join(sorted(part["excluded"]))
            )
    typer.echo(json.dumps(summary, indent=2))


def _mined_file(path: Path) -> Path:
    """A mined dataset: the file itself, or the one a ``spider bench history`` folder holds."""
    from spider.dataset import HISTORY_DATASET_FILE

    return path / HISTORY_DATASET_FILE if path.is_dir() else path


def delta(
    pairs_dir: Annotated[Path, typer.Option("--pairs", help="a `spider train pairs` folder")],
    work: Annotated[
        Path, typer.Option("--work", help="checkpoints (the same command resumes from them)")
    ],
    code_steps: Annotated[int, typer.Option(help="optimiser steps on code-text pairs")] = 500,
    commit_steps: Annotated[
        int, typer.Option(help="optimiser steps on mined fix commits (after code-text)")
    ] = 0,
    issue_steps: Annotated[int, typer.Option(help="optimiser steps on issue pairs")] = 300,
    batch: Annotated[int, typer.Option(help="queries per step")] = 16,
    negatives: Annotated[int, typer.Option(help="hard negatives per query")] = 1,
    batching: Annotated[
        str,
        typer.Option(
            help="'mixed': a batch draws from every repository; 'repo': from one repository, "
            "so the other queries' functions are same-repository negatives"
        ),
    ] = "mixed",
    rank: Annotated[int, typer.Option(help="LoRA rank")] = 16,
    lr: Annotated[float, typer.Option(help="peak learning rate")] = 2e-4,
    fraction: Annotated[
        float, typer.Option(help="share of each kind's pairs used (learning curves)")
    ] = 1.0,
    holdout: Annotated[
        float,
        typer.Option(
            help="share of issue queries kept out (whole repositories) to validate on; "
            "writes the learning curve to WORK/curve.jsonl"
        ),
    ] = 0.0,
    eval_every: Annotated[int, typer.Option(help="steps between validations")] = 100,
    seed: Annotated[int, typer.Option()] = 0,
    consistency: Annotated[
        bool,
        typer.Option(
            "--consistency/--no-consistency",
            help="drop issue pairs the untuned model ranks last among their negatives",
        ),
    ] = True,
    bf16: Bf16Opt = None,
    budget_minutes: BudgetOpt = None,
    excluded: ExcludedOpt = [],  # noqa: B006
    write_weights: WriteWeightsOpt = False,
    weights_file: WeightsFileOpt = None,
    progress: ProgressOpt = True,
) -> None:
    """Tune both sides of the bundled encoder (LoRA) on the pairs: code-text first, then
    issues; write the delta (WORK/encoder_delta.npz, or the shipped file).

    Long because the fitting logic still lives in the command (two phases, holdout, provenance,
    writing): issue 40's `run(config) -> FitResult` moves it into
    :mod:`spider.learn.encoder_tune`."""
    from spider.cpu import has_native_bf16
    from spider.learn.encoder_tune import TuneConfig, tune, write_delta
    from spider.learn.excluded import excluded_repos
    from spider.learn.pairs import read_pair_folder
    from spider.retrieve.delta import DELTA_FILE, weights_fingerprint
    from spider.retrieve.dense import bundled_model_path

    logging.getLogger("spider").setLevel(logging.INFO)
    cfg = TuneConfig(
        stages=[("code-text", code_steps), ("commit", commit_steps), ("issue", issue_steps)],
        batch=batch,
        negatives=negatives,
        batching=batching,
        rank=rank,
        alpha=2.0 * rank,
        lr=lr,
        fraction=fraction,
        holdout=holdout,
        eval_every=eval_every,
        seed=seed,
        consistency=consistency,
        bf16=has_native_bf16() if bf16 is None else bf16,
    )
    try:
        data = read_pair_folder(pairs_dir, excluded_repos(excluded))
        base = bundled_model_path()
        with terminal_progress(progress) as listener:
            budget = budget_minutes * 60 if budget_minutes is not None else None
            model, result = tune(
                data, base, work, cfg, budget_s=budget, on_step=step_reporter(listener)
            )
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
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
    if not result.finished:
        typer.echo(
            f"stopped at step {result.steps_done} of {result.steps_total} (checkpoint in "
            f"{work}); run the same command again to go on"
        )
        return
    target = (weights_file or DELTA_FILE) if write_weights else work / "encoder_delta.npz"
    meta = {
        "command": command_line(GROUP),
        "trained_on": {
            "pairs": result.pairs,
            "dropped_inconsistent": result.dropped_inconsistent,
            "repositories": sorted(
                {p.repo for kind in data.values() for p in kind} - set(result.holdout_repos)
            ),
            "held_out": result.holdout_repos,
        },
        "curve": result.curve,
        "config": {k: v for k, v in vars(cfg).items() if k != "stages"}
        | {"stages": [list(s) for s in cfg.stages]},
        "final_loss": sum(result.losses[-50:]) / max(1, len(result.losses[-50:])),
    }
    write_delta(model, target, cfg, weights_fingerprint(Path(base)), meta)
    typer.echo(f"wrote {target} ({target.stat().st_size / 1e6:.1f} MB)")
