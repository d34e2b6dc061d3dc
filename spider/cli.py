"""The ``spider`` command: index a repository, locate an issue, benchmark, train."""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from spider.errors import EmptyIssue, EnginePermanentError, InputError, SpiderError
from spider.models import Issue, Localization
from spider.settings import EngineSettings

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="SpIDER issue localization: which functions will a fix most likely edit?",
)
err = Console(stderr=True, soft_wrap=True)
PIPE_WIDTH = 200  # output piped to a file or another program is not wrapped at 80 columns


def _console() -> Console:
    c = Console()
    return c if c.is_terminal else Console(width=PIPE_WIDTH)


PathArg = Annotated[Path, typer.Argument(help="repository: a working tree or a git dir")]
RevOpt = Annotated[
    str | None, typer.Option("--rev", help="read this commit from git instead of the work tree")
]


def _fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[red]error:[/red] {message}", highlight=False)
    return typer.Exit(code)


def _settings(**overrides: object) -> EngineSettings:
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        return EngineSettings(**clean)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "settings"
        raise _fail(f"invalid {where}: {first.get('msg', 'bad value')}") from exc


def _open(path: Path, rev: str | None):  # -> SourceTree
    from spider.source import open_source

    return open_source(path, rev)


@app.command()
def index(
    path: PathArg,
    rev: RevOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="print counts as JSON")] = False,
    first_stage: Annotated[str | None, typer.Option(help="dense, bm25 or hybrid")] = None,
) -> None:
    """Build or warm the index (graph + embeddings) and print what it holds."""
    try:
        settings = _settings(first_stage=first_stage, cold_pool=0)  # index = embed everything
        from spider.index import build_index

        t0 = time.perf_counter()
        idx = build_index(_open(path, rev), settings, progress=sys.stderr.isatty())
        seconds = time.perf_counter() - t0
    except SpiderError as exc:
        raise _fail(str(exc)) from exc
    report = {**idx.graph.stats_dict(), **idx.stats, "seconds": round(seconds, 3)}
    if json_out:
        typer.echo(json.dumps(report, indent=2, default=str))
        return
    c = _console()
    c.print(f"[bold]{path}[/bold] at {idx.commit or 'working tree'}")
    parsed = report["parsed"]
    c.print(
        f"files parsed: {sum(parsed.values())} "
        + " ".join(f"{k}={v}" for k, v in sorted(parsed.items()))
    )
    skipped = report["skipped"]
    c.print(
        f"files skipped: {sum(skipped.values())} "
        + " ".join(f"{k}={v}" for k, v in sorted(skipped.items()))
    )
    nodes = report["nodes"]
    c.print("nodes: " + " ".join(f"{k}={v}" for k, v in sorted(nodes.items())))
    c.print("edges: " + " ".join(f"{k}={v}" for k, v in sorted(report["edges"].items())))
    c.print(
        f"embedded {report.get('embedded', 0)} functions, {report.get('embed_cached', 0)} from cache"
        f"; graph {'from cache' if report.get('graph_cached') else 'built'}"
        f"; {seconds:.2f} s"
    )


@app.command()
def locate(
    path: PathArg,
    issue: Annotated[str | None, typer.Option("--issue", help="issue text (title first)")] = None,
    issue_file: Annotated[
        Path | None, typer.Option("--issue-file", help="file holding the issue text")
    ] = None,
    k: Annotated[int | None, typer.Option("--k", help="results to return (K)")] = None,
    selector: Annotated[str | None, typer.Option(help="offline, anthropic or none")] = None,
    edges: Annotated[str | None, typer.Option(help="contains, invokes or both")] = None,
    first_stage: Annotated[str | None, typer.Option(help="dense, bm25 or hybrid")] = None,
    rev: RevOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="print JSON (= --format json)")] = False,
    fmt: Annotated[
        str,
        typer.Option(
            "--format", help="table, json, or markdown: exactly the comment the app would post"
        ),
    ] = "table",
    repo_url: Annotated[
        str | None,
        typer.Option(help="https://github.com/OWNER/NAME for permalinks (default: origin)"),
    ] = None,
) -> None:
    """Rank the functions most likely to need an edit for an issue."""
    fmt = "json" if json_out else fmt
    if fmt not in ("table", "json", "markdown"):
        raise _fail(f"--format must be table, json or markdown, not {fmt!r}")
    if (issue is None) == (issue_file is None):
        raise _fail("give exactly one of --issue TEXT or --issue-file FILE")
    if issue_file is not None:
        try:
            text = issue_file.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise _fail(f"cannot read issue file {issue_file}: {exc.strerror}") from exc
    else:
        text = issue or ""
    if not text.strip():
        raise _fail("the issue text is empty")
    title, _, body = text.strip().partition("\n")
    try:
        settings = _settings(k=k, selector=selector, edges=edges, first_stage=first_stage)
        from spider.index import build_index
        from spider.localize import locate as run_locate

        t0 = time.perf_counter()
        idx = build_index(_open(path, rev), settings, progress=sys.stderr.isatty())
        t1 = time.perf_counter()
        result = run_locate(idx, Issue(title=title, body=body), settings)
        t2 = time.perf_counter()
    except (InputError, EmptyIssue, EnginePermanentError) as exc:
        raise _fail(str(exc)) from exc
    except SpiderError as exc:
        raise _fail(f"{exc} (transient: try again)", code=3) from exc
    result.timings.update(index=t1 - t0, query=t2 - t1)
    if fmt == "json":
        typer.echo(json.dumps(result.to_dict(), indent=2))
        return
    if fmt == "markdown":
        typer.echo(_markdown(path, result, repo_url), nl=False)
        return
    table = Table(title=f"top {len(result.hits)} for: {title[:70]}", show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("function")
    table.add_column("lines", justify="right")
    table.add_column("why")
    for n, h in enumerate(result.hits, 1):
        table.add_row(
            str(n), h.id, f"{h.start_line}-{h.end_line}", "; ".join(r.describe() for r in h.reasons)
        )
    c = _console()
    c.print(table)
    c.print(
        f"commit {result.commit or 'working tree'} · index {t1 - t0:.2f} s · query {t2 - t1:.2f} s"
    )


def _markdown(path: Path, result: Localization, repo_url: str | None) -> str:
    """The comment the app would post for ``result`` (same view, same template)."""
    from spider.comment import build_view, render
    from spider.remote import find_remote

    if result.commit is None:
        raise _fail("--format markdown needs a git checkout: permalinks pin a commit")
    try:
        remote = find_remote(path, repo_url)
        view = build_view(
            result,
            html_url=remote.html_url,
            branch=remote.branch,
            skip_label="spider:skip",
            app_name="spider-bot",
        )
        return render(view)
    except SpiderError as exc:
        raise _fail(str(exc)) from exc


model_app = typer.Typer(no_args_is_help=True, help="The embedding model's files.")
app.add_typer(model_app, name="model")


@model_app.command("export")
def model_export(
    force: Annotated[bool, typer.Option("--force", help="export again even if present")] = False,
) -> None:
    """Export the configured model to ONNX (fp32) and int8 into SPIDER_ONNX_DIR (default:
    the cache directory).

    The ONNX encoders do this on first use; run it ahead (e.g. in an image build) so the
    first query does not pay the export (seconds, and the only step that imports torch).
    """
    settings = _settings()
    try:
        from spider.retrieve.dense import bundled_model_path
        from spider.retrieve.onnx_encoder import export_onnx

        paths = export_onnx(
            Path(settings.model or bundled_model_path()), settings.export_dir(), force=force
        )
    except SpiderError as exc:
        raise _fail(str(exc)) from exc
    for p in paths:
        typer.echo(f"{p}\t{p.stat().st_size / 1e6:.1f} MB")


def _mount_bench() -> None:
    try:
        from spider.bench.cli import bench_app
    except ImportError:  # the benchmark package is optional in slim installs
        return
    app.add_typer(bench_app, name="bench")


_mount_bench()


def _mount_train() -> None:
    try:
        from spider.learn.cli import train_app
    except ImportError:  # the training package is optional in slim installs
        return
    app.add_typer(train_app, name="train")


_mount_train()


def main() -> None:
    """Console-script entry point."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    app()


if __name__ == "__main__":
    main()
