"""``spider bench``: the dataset benchmark (group callback) and its subcommands.

spider bench --dataset FILE --repos TEMPLATE --method M[,M...] --out DIR
spider bench history REPO_PATH [--max N] [--since DATE] --out DIR
spider bench runnable --dataset FILE --repos TEMPLATE
spider bench check-gt --dataset FILE --repos TEMPLATE [--out FILE]
spider bench show DIR
spider bench coverage --dataset FILE --repos TEMPLATE [--out FILE.json]
spider bench speed REPO_PATH [--rev SHA] [--out FILE.json]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from spider.bench.config import BenchConfig
from spider.bench.history import (
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_FUNCTIONS,
    DEFAULT_MAX_INSTANCES,
    DEFAULT_SCAN_LIMIT,
    mine_history,
)
from spider.bench.methods import METHODS, parse_methods
from spider.bench.report import render_tables, render_timings
from spider.bench.run import run_benchmark, unrunnable
from spider.bench.store import SUMMARY, read_summary
from spider.cli_common import (
    CacheOpt,
    DatasetOpt,
    InstancesOpt,
    KOpt,
    OnlyRepoOpt,
    OptionalDatasetOpt,
    OptionalReposOpt,
    PlainCommand,
    PlainGroup,
    ProgressOpt,
    ReposOpt,
    command_line,
    engine_settings,
    exit_error,
    split_csv,
)
from spider.errors import InputError, SpiderError
from spider.eval.dataset import (
    HISTORY_DATASET_FILE,
    read_dataset,
    select_instances,
    write_dataset,
)
from spider.eval.snapshot import GT_CHOICES, GtChoice, fixed_resolver, template_resolver
from spider.retrieve.dense import BACKENDS
from spider.settings import EngineSettings

GROUP = "bench"  # the command group: `spider bench ...` in every recorded command line
DEFAULT_METHODS = "bm25,dense,hybrid"  # the cheap baselines; add spider-* / oracle explicitly

bench_app = typer.Typer(
    cls=PlainGroup,
    help="Measure localization (Recall/Acc/MRR@K) on SWE-bench-style data or on git history.",
    no_args_is_help=False,
    add_completion=False,
)

MethodOpt = Annotated[
    str,
    typer.Option(
        "--method",
        "-m",
        help=f"comma-separated methods: {', '.join(METHODS)}; overrides as "
        "name:key=value,key=value",
    ),
]
WarmOpt = Annotated[
    bool, typer.Option("--warm/--no-warm", help="also time a warm re-index per instance")
]
GtOpt = Annotated[
    str,
    typer.Option(
        "--gt",
        help="ground truth: edit_functions (the labels; the precise patch rule when absent), "
        "precise or dataset (always from the patch, by that rule)",
    ),
]


def _gt_choice(value: str) -> GtChoice:
    if value not in GT_CHOICES:
        raise InputError(f"--gt must be one of {', '.join(GT_CHOICES)}, not {value!r}")
    return value  # type: ignore[return-value]


def _finished(out: Path) -> dict[str, Any]:
    """A finished run's summary, or a clean error."""
    summary = read_summary(out)
    if summary is None:
        raise exit_error(f"no {SUMMARY} in {out}")
    return summary


@bench_app.callback(cls=PlainGroup, invoke_without_command=True)
def bench(
    ctx: typer.Context,
    dataset: OptionalDatasetOpt = None,
    repos: OptionalReposOpt = None,
    method: MethodOpt = DEFAULT_METHODS,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="output directory")] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="first N instances only")] = None,
    k: KOpt = 20,
    instances: InstancesOpt = None,
    only_repo: OnlyRepoOpt = None,
    cache_dir: CacheOpt = None,
    warm: WarmOpt = True,
    progress: ProgressOpt = True,
    gt: GtOpt = "edit_functions",
) -> None:
    """Benchmark methods on a dataset (the form without a subcommand)."""
    if ctx.invoked_subcommand is not None:
        return
    if dataset is None or repos is None or out is None:
        typer.echo(ctx.get_help())
        raise exit_error("the dataset benchmark needs --dataset, --repos and --out")
    try:
        methods = parse_methods(method)
        rows = select_instances(
            read_dataset(dataset), ids=split_csv(instances), repos=split_csv(only_repo), limit=limit
        )
        cfg = BenchConfig(
            methods=methods,
            out=out,
            settings=engine_settings(k, cache_dir),
            warm=warm,
            progress=progress,
            command=command_line(GROUP),
            gt=_gt_choice(gt),
        )
        summary = run_benchmark(rows, template_resolver(repos), cfg)
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    render_tables(summary)


@bench_app.command(cls=PlainCommand, name="history")
def history(
    repo_path: Annotated[Path, typer.Argument(help="git repository (bare or not)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="output directory")],
    max_instances: Annotated[
        int, typer.Option("--max", help="fix commits to keep")
    ] = DEFAULT_MAX_INSTANCES,
    since: Annotated[
        str | None, typer.Option("--since", help="only commits after this date (git syntax)")
    ] = None,
    rev: Annotated[str, typer.Option("--rev", help="history to walk")] = "HEAD",
    max_functions: Annotated[
        int, typer.Option("--max-functions", help="keep fixes touching 1..N functions")
    ] = DEFAULT_MAX_FUNCTIONS,
    max_files: Annotated[
        int, typer.Option("--max-files", help="skip commits touching more files")
    ] = DEFAULT_MAX_FILES,
    scan_limit: Annotated[
        int, typer.Option("--scan-limit", help="commits examined at most")
    ] = DEFAULT_SCAN_LIMIT,
    repo_name: Annotated[
        str | None, typer.Option("--repo-name", help="owner/name recorded in the dataset")
    ] = None,
    method: MethodOpt = DEFAULT_METHODS,
    k: KOpt = 20,
    mine_only: Annotated[
        bool, typer.Option("--mine-only", help="write the dataset, do not benchmark")
    ] = False,
    cache_dir: CacheOpt = None,
    warm: WarmOpt = True,
    progress: ProgressOpt = True,
) -> None:
    """Mine fix commits of REPO_PATH into OUT/dataset.jsonl, then benchmark them.

    Long because its signature is the command's options; the body only builds the run and calls
    :func:`mine_history` and the bench."""
    try:
        methods = parse_methods(method)
        settings = engine_settings(k, cache_dir)
        out.mkdir(parents=True, exist_ok=True)
        data_path = out / HISTORY_DATASET_FILE
        if data_path.exists():  # resumable: reuse what was mined before
            rows = read_dataset(data_path)
            typer.echo(f"reusing {len(rows)} instances from {data_path}", err=True)
        else:
            rows = mine_history(
                repo_path,
                settings,
                max_instances=max_instances,
                max_functions=max_functions,
                max_files=max_files,
                since=since,
                rev=rev,
                scan_limit=scan_limit,
                repo_name=repo_name,
            )
            write_dataset(data_path, rows)
            typer.echo(f"mined {len(rows)} fix commits into {data_path}", err=True)
        if mine_only or not rows:
            return
        cfg = BenchConfig(
            methods=methods,
            out=out,
            settings=settings,
            warm=warm,
            progress=progress,
            command=command_line(GROUP),
        )
        summary = run_benchmark(rows, fixed_resolver(repo_path), cfg)
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    render_tables(summary)


@bench_app.command(cls=PlainCommand, name="runnable")
def runnable(
    dataset: DatasetOpt,
    repos: ReposOpt,
) -> None:
    """List which instances have their repository and base commit here."""
    rows = read_dataset(dataset)
    resolve = template_resolver(repos)
    ok: dict[str, int] = {}
    bad: dict[str, str] = {}
    for inst in rows:
        reason = unrunnable(resolve(inst), inst)
        if reason:
            bad[inst.instance_id] = reason
        else:
            ok[inst.repo] = ok.get(inst.repo, 0) + 1
    for repo, n in sorted(ok.items(), key=lambda kv: -kv[1]):
        typer.echo(f"{repo}\t{n}")
    typer.echo(f"runnable: {sum(ok.values())} of {len(rows)}")
    missing: dict[str, int] = {}
    for iid in bad:
        repo = next(i.repo for i in rows if i.instance_id == iid)
        missing[repo] = missing.get(repo, 0) + 1
    for repo, n in sorted(missing.items()):
        typer.echo(f"not runnable: {repo}\t{n}")


@bench_app.command(cls=PlainCommand, name="check-gt")
def check_gt(
    dataset: DatasetOpt,
    repos: ReposOpt,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="per-instance JSONL")] = None,
    instances: InstancesOpt = None,
    only_repo: OnlyRepoOpt = None,
) -> None:
    """GT id match rate and patch-rule agreement with edit_functions."""
    from spider.bench.gtcheck import check_groundtruth, summarise_check

    rows = select_instances(read_dataset(dataset), ids=split_csv(instances), repos=split_csv(only_repo))
    checked, skipped = check_groundtruth(rows, template_resolver(repos), EngineSettings())
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", encoding="utf-8") as fh:
            for r in checked:
                fh.write(json.dumps(r) + "\n")
    summary = summarise_check(checked)
    summary["skipped"] = len(skipped)
    typer.echo(json.dumps(summary, indent=2))


@bench_app.command(cls=PlainCommand, name="rescore")
def rescore_cmd(
    src: Annotated[Path, typer.Argument(help="a finished --out directory")],
    dataset: DatasetOpt,
    repos: ReposOpt,
    out: Annotated[Path, typer.Option("--out", "-o", help="where the rescored run goes")],
    gt: GtOpt = "precise",
) -> None:
    """Score a run's rankings against another ground truth (no engine run)."""
    from spider.bench.methods import Method
    from spider.bench.run import rescore
    from spider.bench.store import read_predictions, summarise, write_predictions, write_summary

    try:
        rows = read_predictions(src)
        instances = read_dataset(dataset)
        ids = {r["instance_id"] for r in rows}
        instances = [i for i in instances if i.instance_id in ids]
        settings = EngineSettings()
        new_rows = rescore(rows, instances, template_resolver(repos), settings, _gt_choice(gt))
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    write_predictions(out, new_rows)
    names = list(dict.fromkeys(r["method"] for r in new_rows))
    methods = [Method(n, n.partition(":")[0]) for n in names]
    cfg = BenchConfig(methods, out, settings=settings, command=command_line(GROUP))
    summary = summarise(new_rows, instances, cfg)
    write_summary(out, summary)
    render_tables(summary)


@bench_app.command(cls=PlainCommand, name="show")
def show(
    out: Annotated[Path, typer.Argument(help="a --out directory")],
    timings: Annotated[
        bool, typer.Option("--timings", help="also one row of timings per instance")
    ] = False,
) -> None:
    """Print the tables of a finished run's summary.json."""
    summary = _finished(out)
    render_tables(summary)
    if timings:
        render_timings(summary)


@bench_app.command(cls=PlainCommand, name="markdown")
def markdown(
    out: Annotated[Path, typer.Argument(help="a --out directory")],
    method: Annotated[
        str | None, typer.Option("--per-repo", help="also this method's per-repository table")
    ] = None,
    only_repo: Annotated[
        str | None, typer.Option("--only-repo", help="average over these repositories only")
    ] = None,
    skip_repo: Annotated[
        str | None, typer.Option("--skip-repo", help="average over all but these repositories")
    ] = None,
    language: Annotated[
        str | None,
        typer.Option(
            "--per-language",
            help="also this method's per-language table (a repository counts under the "
            "language of most files its fixes edit)",
        ),
    ] = None,
) -> None:
    """Print a finished run's tables as Markdown (as pasted into the README)."""
    from spider.bench.report import markdown_report

    summary = _finished(out)
    if language and language not in summary.get("per_language", {}):
        raise exit_error(
            f"{out}/{SUMMARY} has no per-language table for {language!r}: run the same "
            "`spider bench` command again (it skips finished pairs and rewrites the summary)"
        )
    typer.echo(
        markdown_report(
            summary, method, split_csv(only_repo) or (), split_csv(skip_repo) or (), language
        )
    )


@bench_app.command(cls=PlainCommand, name="llm")
def llm_table(
    out: Annotated[Path, typer.Argument(help="a --out directory of a run with LLM methods")],
    methods: Annotated[str | None, typer.Option(
        "--methods", help="only these methods (comma-separated); the figures are over the "
        "instances all of them scored")] = None,
    per_language: Annotated[bool, typer.Option(
        "--per-language", help="the figures again for each language")] = False,
) -> None:
    """What the LLM roles did in a run (no-llm, llm-read, llm-select, llm-both): quality,
    admissions against evictions (eta, tau), seconds and tokens per issue, and the reader's
    weight swept over the recorded verdicts of each reading method; as Markdown."""
    from spider.bench.llm_report import markdown as llm_markdown
    from spider.bench.store import read_predictions

    rows = read_predictions(out)
    if not rows:
        raise exit_error(f"{out} holds no predictions")
    typer.echo(llm_markdown(rows, methods=split_csv(methods), per_language=per_language))


@bench_app.command(cls=PlainCommand, name="coverage")
def coverage(
    dataset: DatasetOpt,
    repos: ReposOpt,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="JSON report: counts and every hunk")
    ] = None,
    instances: InstancesOpt = None,
    only_repo: OnlyRepoOpt = None,
    limit: Annotated[int | None, typer.Option("--limit")] = None,
) -> None:
    """Graph fidelity: the share of function-bearing fix hunks inside a function node."""
    from spider.bench.coverage import measure_coverage, render_coverage

    rows = select_instances(
        read_dataset(dataset), ids=split_csv(instances), repos=split_csv(only_repo), limit=limit
    )
    report = measure_coverage(rows, template_resolver(repos), EngineSettings())
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        body = {"command": command_line(GROUP), **report.to_dict()}
        out.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n")
    typer.echo(render_coverage(report))


@bench_app.command(cls=PlainCommand, name="speed")
def speed(
    repo: Annotated[Path, typer.Argument(help="git repository (bare or not)")],
    rev: Annotated[str, typer.Option("--rev", help="commit to measure")] = "HEAD",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="JSON file to write")] = None,
    work: Annotated[
        Path | None, typer.Option("--work", help="folder for the run's caches (default: temp)")
    ] = None,
    backends: Annotated[str, typer.Option(help="encoders to compare")] = ",".join(BACKENDS),
    sample: Annotated[
        int, typer.Option(help="function texts per encoder throughput figure (0 = all)")
    ] = 512,
    full: Annotated[
        bool, typer.Option("--full/--no-full", help="also embed every function (shipped encoder)")
    ] = True,
    queries: Annotated[int, typer.Option(help="issues for the latency percentiles")] = 20,
    dataset: Annotated[
        Path | None, typer.Option("--dataset", "-d", help="take issue texts from this JSONL")
    ] = None,
    hook: Annotated[
        str | None,
        typer.Option(help="a command to time as one more row (e.g. a webhook replay)"),
    ] = None,
    index_encoders: Annotated[
        str,
        typer.Option(help="document encoders whose full index, cold path and warm answers "
                          "are measured, one after the other (e.g. auto,onnx; default: the "
                          "configured one)"),
    ] = "",
) -> None:
    """Encoder throughput (fp32 vs int8), cold index, cold path, warm load, query p50/p99,
    warm CLI wall: one run, one machine, the load average beside every figure."""
    from spider.bench.speed import default_work_dir, measure_speed, render_speed, write_speed
    from spider.source import GitSource

    try:
        commit = GitSource(repo, rev).commit or rev
        texts = [r.issue().text for r in read_dataset(dataset)] if dataset else []
        run = measure_speed(
            repo,
            commit,
            base=EngineSettings(),
            work=work or default_work_dir(),
            backends=[b.strip() for b in backends.split(",") if b.strip()],
            sample=sample,
            full=full,
            queries=queries,
            issue_texts=texts,
            hook=hook,
            index_encoders=[EngineSettings(encoder=e.strip()).encoder
                            for e in index_encoders.split(",") if e.strip()],
            log=lambda m: typer.echo(m, err=True),
        )
    except SpiderError as exc:
        raise exit_error(str(exc)) from exc
    write_speed(run, out)
    typer.echo(render_speed(run))


def main() -> None:
    """Run ``bench_app`` on its own (``python -m spider.bench.cli``)."""
    bench_app()


if __name__ == "__main__":
    main()
