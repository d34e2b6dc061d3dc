"""``spider train``: build the training corpus and fit the learned models from it.

spider train corpus --dataset FILE [--dataset FILE ...] --repos TEMPLATE --out DIR
spider train ranker --corpus DIR [--weak-corpus DIR] [--out DIR] [--write-weights]
spider train selector --dataset FILE [--dataset FILE ...] --repos TEMPLATE --corpus DIR --out DIR
spider train encoder --corpus DIR --dataset FILE [--folds K] [--write-weights]
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from spider.bench.cli import command_line, exit_error, split_csv
from spider.bench.dataset import read_dataset, select_instances
from spider.bench.run import template_resolver
from spider.errors import SpiderError
from spider.settings import EngineSettings

CorpusDirs = Annotated[
    list[Path], typer.Option("--corpus", "-c", help="a `train corpus` folder (repeatable: pooled)")
]
ReportFile = Annotated[
    Path | None, typer.Option("--out", "-o", help="write the CV report here (JSON)")
]

train_app = typer.Typer(
    help="Learn the engine's models from real fixes of other projects (never the benchmark's).",
    no_args_is_help=True,
    add_completion=False,
)


@train_app.command("corpus")
def corpus(
    dataset: Annotated[
        list[Path], typer.Option("--dataset", "-d", help="SWE-bench-style JSONL (repeatable)")
    ],
    repos: Annotated[str, typer.Option("--repos", "-r", help="repository path template")],
    out: Annotated[Path, typer.Option("--out", "-o", help="corpus folder (resumable)")],
    pool: Annotated[int, typer.Option(help="candidates kept per instance")] = 200,
    max_per_repo: Annotated[int, typer.Option(help="instances per repository at most")] = 40,
    only_repo: Annotated[str | None, typer.Option(help="comma-separated owner/name")] = None,
    skip_repo: Annotated[str | None, typer.Option(help="comma-separated owner/name")] = None,
    budget_s: Annotated[
        float | None, typer.Option(help="start no new instance after this many seconds")
    ] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="graph and embedding cache")] = None,
    warm: Annotated[
        bool,
        typer.Option(
            "--warm/--cold",
            help="embed every function (the pools an indexed repository ranks) or only each "
            "pool (the cold path: much cheaper)",
        ),
    ] = False,
) -> None:
    """Collect each instance's candidate pool, features and labels into OUT."""
    from spider.train.corpus import build_corpus

    logging.getLogger("spider").setLevel(logging.INFO)
    try:
        rows = [i for d in dataset for i in read_dataset(d)]
        rows = select_instances(rows, repos=split_csv(only_repo))
        skip = set(split_csv(skip_repo) or [])
        rows = [r for r in rows if r.repo not in skip]
        settings = EngineSettings()
        if cache_dir is not None:
            settings = settings.model_copy(update={"cache_dir": cache_dir})
        summary = build_corpus(
            rows,
            template_resolver(repos),
            settings,
            out,
            pool=pool,
            max_per_repo=max_per_repo,
            budget_s=budget_s,
            warm=warm,
        )
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    typer.echo(json.dumps(summary, indent=2))


@train_app.command("ranker")
def ranker(
    corpus_dirs: CorpusDirs,
    out: ReportFile = None,
    write_weights: Annotated[
        bool, typer.Option("--write-weights", help="replace the shipped spider/pool_ranker.json")
    ] = False,
    curve: Annotated[
        bool, typer.Option("--curve/--no-curve", help="also the learning curve")
    ] = True,
    weights_file: Annotated[
        Path | None, typer.Option(help="write the model here instead of the shipped file")
    ] = None,
    folds: Annotated[
        int,
        typer.Option(
            help="CV folds of whole repositories (0 = one repository per fold; fewer folds, "
            "fewer fits)"
        ),
    ] = 0,
    weak_dirs: Annotated[
        list[Path] | None,
        typer.Option(
            "--weak-corpus",
            "-w",
            help="a corpus fitted on but never scored (e.g. fix commits mined by `spider "
            "bench history --mine-only`); a fold leaves out its held-out repositories' rows",
        ),
    ] = None,
) -> None:
    """Choose the pool ranker's settings by leave-repository-out CV and fit it."""
    from spider.pool_rank import MODEL_FILE, dump_ranker
    from spider.train import fit_ranker as fitting
    from spider.train.corpus import read_corpus, summarise

    logging.getLogger("spider").setLevel(logging.INFO)
    try:
        rows, bench = fitting.training_rows([r for d in corpus_dirs for r in read_corpus(d)])
        weak, weak_bench = fitting.training_rows(
            [r for d in weak_dirs or [] for r in read_corpus(d)]
        )
        bench += weak_bench
        params, cv, calibration = fitting.cross_validate(rows, folds=folds, weak=weak)
        if curve:
            cv["learning_curve"] = fitting.learning_curve(rows, params, folds=folds, weak=weak)
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    data = summarise(rows)
    cv["data"] = {k: data[k] for k in ("repositories", "total", "pool_recall", "by_repo")}
    cv["benchmark_rows_left_out"] = bench
    if weak:
        w = summarise(weak)
        cv["weak"] = {k: w[k] for k in ("repositories", "total", "pool_recall")}
    report = json.dumps(cv, indent=2)
    if out is not None:
        out.write_text(report + "\n")
    typer.echo(
        json.dumps(
            {k: cv[k] for k in ("chosen_by", "chosen", "learning_curve") if k in cv}, indent=2
        )
    )
    if write_weights:
        import dataclasses

        import lightgbm

        model = dataclasses.replace(fitting.fit([*rows, *weak], params), calibration=calibration)
        meta = {
            "comment": "Fitted by `spider train ranker` on the training corpus (other projects' "
            "fixed issues; never a benchmark repository). See README.",
            "command": command_line("train"),
            "lightgbm": lightgbm.__version__,
            "params": cv["chosen"]["params"],
            "cv": {k: cv["chosen"][k] for k in ("instances", "first_stage", "ranker")},
            "learning_curve": cv.get("learning_curve"),
            "trained_on": cv["data"],
            "weak": cv.get("weak"),
        }
        target = weights_file or MODEL_FILE
        dump_ranker(target, model, meta)
        typer.echo(f"wrote {target}")


@train_app.command("selector")
def selector(
    dataset: Annotated[
        list[Path], typer.Option("--dataset", "-d", help="SWE-bench-style JSONL (repeatable)")
    ],
    repos: Annotated[str, typer.Option("--repos", "-r", help="repository path template")],
    corpus_dir: Annotated[
        Path, typer.Option("--corpus", "-c", help="only the instances of this corpus")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="expansion data and CV report")],
    pool: Annotated[int, typer.Option(help="the corpus's pool (cold path)")] = 200,
    max_per_repo: Annotated[int, typer.Option(help="instances per repository at most")] = 40,
    write_weights: Annotated[
        bool,
        typer.Option("--write-weights", help="replace spider/select/offline_weights.json"),
    ] = False,
    cache_dir: Annotated[Path | None, typer.Option(help="graph and embedding cache")] = None,
    weights_file: Annotated[
        Path | None, typer.Option(help="write the weights here instead of the shipped file")
    ] = None,
) -> None:
    """Refit the offline neighbour selector on the corpus's expansion candidates: centres
    are the top of the list the shipped ranker makes, the admission margin is chosen by
    the η > τ rule under leave-one-repository-out CV (``spider bench fit``'s body)."""
    from spider.bench import fit as fitting
    from spider.select.offline import WEIGHTS_FILE
    from spider.train.corpus import (
        BENCHMARK_REPOS,
        corpus_settings,
        dedupe_by_text,
        interleave,
        read_corpus,
    )

    logging.getLogger("spider").setLevel(logging.INFO)
    try:
        kept = {r.instance_id for r in read_corpus(corpus_dir) if r.labels > 0}
        rows = dedupe_by_text(i for d in dataset for i in read_dataset(d))
        rows = [r for r in rows if r.instance_id in kept and r.repo not in BENCHMARK_REPOS]
        rows = interleave(rows, max_per_repo)
        settings = EngineSettings()
        if cache_dir is not None:
            settings = settings.model_copy(update={"cache_dir": cache_dir})
        settings = corpus_settings(settings, pool).model_copy(update={"rerank": True})
        records = fitting.collect(rows, template_resolver(repos), settings, out)
        if not records:
            raise exit_error("no instance could be collected")
        cv = fitting.cross_validate(records, settings.k)
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    (out / "selector-cv.json").write_text(json.dumps(cv, indent=2, ensure_ascii=False) + "\n")
    typer.echo(fitting.describe_cv(cv, settings.k))
    if write_weights:
        fitting.write_weights(
            fitting.fit_chosen(records, cv, settings.k),
            cv,
            command_line("train"),
            weights_file or WEIGHTS_FILE,
            comment="Fitted by `spider train selector` on the training corpus (other projects' "
            "fixed issues, centres from the shipped pool ranker); see README.",
        )
        typer.echo(f"wrote {weights_file or WEIGHTS_FILE}")


@train_app.command("encoder")
def encoder(
    corpus_dirs: CorpusDirs,
    dataset: Annotated[
        list[Path],
        typer.Option("--dataset", "-d", help="the JSONL the corpus came from (issue texts)"),
    ],
    out: ReportFile = None,
    folds: Annotated[int, typer.Option(help="CV folds of whole repositories")] = 5,
    write_weights: Annotated[
        bool, typer.Option("--write-weights", help="replace the shipped spider/query_adapter.npz")
    ] = False,
    weights_file: Annotated[
        Path | None, typer.Option(help="write the adapter here instead of the shipped file")
    ] = None,
) -> None:
    """Tune the issue encoder's query side (a linear map of the query vectors; function
    vectors unchanged) on the corpus's (issue, edited function) pairs, settings chosen by
    CV over folds of whole repositories against the bundled model as is."""
    from spider.retrieve.adapter import ADAPTER_FILE, dump_adapter
    from spider.retrieve.dense import Encoder
    from spider.train import fit_adapter as fitting
    from spider.train.corpus import corpus_files

    logging.getLogger("spider").setLevel(logging.INFO)
    try:
        files = [p for d in corpus_dirs for p in corpus_files(d)]
        wanted = {p.stem for p in files}
        instances = [i for d in dataset for i in read_dataset(d) if i.instance_id in wanted]
        settings = EngineSettings()
        enc = Encoder.from_settings(settings, None)  # queries are never cached
        queries: dict[str, np.ndarray] = {}
        for d in corpus_dirs:
            mine = [i for i in instances if (d / f"{i.instance_id}.npz").exists()]
            queries.update(fitting.embed_windows(mine, enc, settings, d / fitting.QUERIES_FILE))
        rows, skipped = fitting.adapter_rows(files, queries)
        cv = fitting.cross_validate(rows, folds=folds)
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    cv["left_out"] = skipped
    report = json.dumps(cv, indent=2)
    if out is not None:
        out.write_text(report + "\n")
    typer.echo(
        json.dumps({k: cv[k] for k in ("chosen_by", "chosen", "pays", "left_out")}, indent=2)
    )
    if write_weights:
        params = fitting.AdapterParams(**cv["chosen"]["params"])
        meta = {
            "comment": "Fitted by `spider train encoder` on the training corpus (other "
            "projects' fixed issues; never a benchmark repository). See README.",
            "command": command_line("train"),
            "params": cv["chosen"]["params"],
            "cv": {k: cv[k] for k in ("instances", "repositories", "identity", "pays")}
            | {"adapter": cv["chosen"]["adapter"]},
            "model": settings.model or "all-MiniLM-L6-v2 (bundled)",
        }
        target = weights_file or ADAPTER_FILE
        dump_adapter(target, fitting.fit_adapter(rows, params), meta)
        typer.echo(f"wrote {target}")
