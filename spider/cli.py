"""The ``spider`` command: index a repository, locate an issue, benchmark, train."""

from __future__ import annotations

import json
import logging
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import typer
from annotated_types import Ge, Le
from pydantic import ValidationError
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from spider.cli_common import (
    MAX_MESSAGE_CHARS,
    MAX_TITLE_CHARS,
    LazyGroup,
    PlainCommand,
    PlainGroup,
    QuietOpt,
    TerminalProgress,
    terminal_progress,
    terminal_safe,
)
from spider.errors import EmptyIssue, EnginePermanentError, InputError, SpiderError
from spider.models import Hit, Issue, Localization, reader_id
from spider.progress import RANKING, ended
from spider.settings import DEFAULT_COLD_POOL, EngineSettings

if TYPE_CHECKING:
    from spider.index import Index
    from spider.source import SourceTree


class SpiderGroup(LazyGroup):
    """The ``spider`` command: ``bench`` and ``train`` load only when named."""

    LAZY: ClassVar[Mapping[str, tuple[str, str]]] = {
        "bench": ("spider.bench.cli", "bench_app"),
        "train": ("spider.learn.cli", "train_app"),
    }


app = typer.Typer(
    cls=SpiderGroup,
    add_completion=False,
    no_args_is_help=True,
    help="SpIDER issue localization: which functions will a fix most likely edit?",
)
err = Console(stderr=True, soft_wrap=True)
PIPE_WIDTH = 200  # output piped to a file or another program is not wrapped at 80 columns
MIN_WHY_WIDTH = 24  # narrower than this, the reasons go under the id instead of beside it
COLUMN_GAP = 3  # between two table columns: one space of padding each side and a rule
MIN_ID_WIDTH = 40  # ids shortened below this read badly beside the reasons: those go under
NUL = b"\0"  # never in a text file: an issue file holding one is binary


def _console() -> Console:
    c = Console()
    return c if c.is_terminal else Console(width=PIPE_WIDTH)


def _bounds(name: str) -> str:
    """A setting's range as its field declares it ("1-200", "at least 1")."""
    meta = EngineSettings.model_fields[name].metadata
    lo = next((m.ge for m in meta if isinstance(m, Ge)), None)
    hi = next((m.le for m in meta if isinstance(m, Le)), None)
    if lo is not None and hi is not None:
        return f"{lo}-{hi}"
    return f"at least {lo}" if lo is not None else f"at most {hi}" if hi is not None else "any"


PathArg = Annotated[Path, typer.Argument(help="repository: a working tree or a git dir")]
RevOpt = Annotated[
    str | None, typer.Option("--rev", help="read this commit from git instead of the work tree")
]


def _fail(message: str, code: int = 2) -> typer.Exit:
    # no markup read in message; a path or an issue it quotes cannot reach the terminal raw
    safe = terminal_safe(message, MAX_MESSAGE_CHARS, lines=True)
    err.print(Text.assemble(("error:", "red"), f" {safe}"))
    return typer.Exit(code)


def _note(message: str) -> None:
    """One line on stderr that is not an error (what was ranked, what to run next)."""
    err.print(Text(f"note: {terminal_safe(message, MAX_MESSAGE_CHARS, lines=True)}"))


def _settings(**overrides: Any) -> EngineSettings:
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        return EngineSettings(**clean)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "settings"
        raise _fail(f"invalid {where}: {first.get('msg', 'bad value')}") from exc


def _open(path: Path, rev: str | None) -> SourceTree:
    from spider.source import open_source

    return open_source(path, rev)


def _build(
    path: Path, rev: str | None, settings: EngineSettings, progress: TerminalProgress | None
) -> Index:
    """The index of ``path`` (at ``rev``), each phase reported to ``progress``."""
    from spider.index import build_index

    return build_index(_open(path, rev), settings, progress=progress)


@app.command(cls=PlainCommand)
def index(
    path: PathArg,
    rev: RevOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="print counts as JSON")] = False,
    first_stage: Annotated[str | None, typer.Option(help="dense, bm25 or hybrid")] = None,
    quiet: QuietOpt = False,
) -> None:
    """Build or warm the index (graph + embeddings) and print what it holds.

    Progress (files parsed, functions embedded) is drawn on stderr when it is a terminal.
    """
    try:
        settings = _settings(first_stage=first_stage, cold_pool=0)  # index = embed everything
        t0 = time.perf_counter()
        with terminal_progress(not quiet) as progress:
            idx = _build(path, rev, settings, progress)
            _read_history(idx, settings)
        seconds = time.perf_counter() - t0
    except SpiderError as exc:
        raise _fail(str(exc)) from exc
    report = {**idx.graph.stats_dict(), **idx.stats, "seconds": round(seconds, 3)}
    if json_out:
        typer.echo(json.dumps(report, indent=2, default=str))
        return
    c = _console()
    c.print(Text.assemble((terminal_safe(path), "bold"),
                          f" at {terminal_safe(idx.commit or 'working tree')}"))
    parsed = report["parsed"]
    c.print(
        Text(f"files parsed: {sum(parsed.values())} "
             + " ".join(f"{terminal_safe(k)}={v}" for k, v in sorted(parsed.items())))
    )
    skipped = report["skipped"]
    c.print(
        Text(f"files skipped: {sum(skipped.values())} "
             + " ".join(f"{terminal_safe(k)}={v}" for k, v in sorted(skipped.items())))
    )
    nodes = report["nodes"]
    c.print("nodes: " + " ".join(f"{k}={v}" for k, v in sorted(nodes.items())))
    c.print("edges: " + " ".join(f"{k}={v}" for k, v in sorted(report["edges"].items())))
    c.print(
        f"embedded {report.get('embedded', 0)} functions, {report.get('embed_cached', 0)} from cache"
        f"; graph {'from cache' if report.get('graph_cached') else 'built'}"
        f"; {seconds:.2f} s"
    )


def _read_history(idx: Index, settings: EngineSettings) -> None:
    """Parse the history window the ranker reads now (cached by commit, kept per index),
    so that no later ``spider locate`` pays for it."""
    from spider.rank.pool_rank import history_depth

    if history_depth(settings) > 1:
        idx.history()


def read_issue(issue: str | None, issue_file: Path | None) -> tuple[str, str]:
    """(title, body) from ``--issue`` or ``--issue-file``; InputError with the reason when
    neither or both are given, the file is unreadable, binary or not UTF-8, or it is empty."""
    if (issue is None) == (issue_file is None):
        raise InputError("give exactly one of --issue TEXT or --issue-file FILE")
    if issue_file is not None:
        try:
            data = issue_file.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read issue file {issue_file}: {exc.strerror}") from exc
        if NUL in data:
            raise InputError(f"issue file {issue_file} is binary, not text (it holds NUL bytes)")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"issue file {issue_file} is not UTF-8 text (byte {exc.start} is not)"
            ) from exc
    else:
        text = issue or ""
    if not text.strip():
        raise InputError("the issue text is empty")
    title, _, body = text.strip().partition("\n")
    return title, body


@dataclass(frozen=True)
class Permalinks:
    """What ``--format markdown`` pins its links to, settled before anything is indexed."""

    html_url: str
    branch: str
    rev: str | None  # the commit ranked through git; None: the files on disk
    commit: str | None  # --commit: the commit a tree without git was made from
    note: str | None  # what was ranked, when it is not the files on disk

    @property
    def ref(self) -> str | None:
        """What the comment says was ranked when it is not the branch's head: ``--rev``,
        or the ``--commit`` a tree without git came from."""
        if self.rev not in (None, "HEAD"):
            return self.rev
        return self.commit


def plan_permalinks(
    path: Path, rev: str | None, repo_url: str | None, commit: str | None
) -> Permalinks:
    """Where the comment's permalinks point and which tree to rank so that their line
    numbers are that commit's: a git checkout ranks its commit read through git (HEAD, or
    ``--rev``), never files on disk that may differ from it; a tree without git (a tarball)
    needs ``--repo-url`` and ``--commit``. InputError, with what is needed, otherwise."""
    from spider import remote

    if not path.exists():
        raise InputError(f"repository path does not exist: {path}")
    if not path.is_dir():
        raise InputError(f"repository path is not a directory: {path}")
    kind = remote.git_kind(path)
    if kind == "inside":
        raise InputError(
            f"{path} is a folder inside a git checkout: --format markdown needs the "
            "checkout's top folder (permalinks are paths from it)"
        )
    if kind is None:
        if repo_url is None or commit is None:
            raise InputError(
                f"{path} is not a git checkout: --format markdown needs --repo-url "
                f"{remote.REPO_URL_FORM} and --commit SHA (the commit these files are from) "
                "to pin its permalinks"
            )
        return Permalinks(remote.repo_url(repo_url), "HEAD", None, remote.commit_id(commit), None)
    if commit is not None:
        raise InputError("--commit is for a tree without git; in a git checkout use --rev")
    found = remote.find_remote(path, repo_url)
    if rev is not None:
        return Permalinks(found.html_url, found.branch, rev, None, None)
    changed = remote.uncommitted_changes(path) if kind == "top" else []
    note = None
    if changed:
        note = (
            f"{len(changed)} uncommitted change(s) on disk: ranked the committed tree (HEAD), "
            "so every permalink's line numbers are the pinned commit's"
        )
    return Permalinks(found.html_url, found.branch, "HEAD", None, note)


def _first_answer(settings: EngineSettings) -> EngineSettings:
    """The settings a query runs with: unless ``SPIDER_COLD_POOL`` says otherwise, a
    never-indexed repository is answered from the cold path (embed the best
    ``DEFAULT_COLD_POOL`` candidates, mark the list partial), as the app answers it."""
    if "cold_pool" in settings.model_fields_set:
        return settings
    return settings.model_copy(update={"cold_pool": DEFAULT_COLD_POOL})


def index_command(path: Path, rev: str | None) -> str:
    """The one command that completes a partial index of ``path``."""
    tail = f" --rev {shlex.quote(rev)}" if rev else ""
    return f"spider index {shlex.quote(str(path))}{tail}"


@app.command(cls=PlainCommand)
def locate(
    path: PathArg,
    issue: Annotated[str | None, typer.Option("--issue", help="issue text (title first)")] = None,
    issue_file: Annotated[
        Path | None, typer.Option("--issue-file", help="UTF-8 text file holding the issue")
    ] = None,
    k: Annotated[
        int | None, typer.Option("--k", help=f"results to return, {_bounds('k')} (K)")
    ] = None,
    selector: Annotated[str | None, typer.Option(help="auto (the configured LLM when its select role is on, else offline), offline, llm (the SPIDER_LLM_BASE_URL server), anthropic or none")] = None,
    edges: Annotated[str | None, typer.Option(help="auto (contains and invokes with an LLM selector, none otherwise), contains, invokes, both or none")] = None,
    llm: Annotated[str | None, typer.Option("--llm", help="what a configured LLM does (SPIDER_LLM_BASE_URL or an Anthropic key): auto (the roles that paid), read, select, both or none")] = None,
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
    commit: Annotated[
        str | None,
        typer.Option(
            help="with --format markdown on a tree without git (a tarball): the commit its "
            "files are from, for permalinks"
        ),
    ] = None,
    quiet: QuietOpt = False,
) -> None:
    """Rank the functions most likely to need an edit for an issue.

    A repository never indexed is answered at once from a partial index (the best
    candidates embedded, as the app does); `spider index PATH` completes it. With
    --format markdown a git checkout's committed tree is ranked, so the permalinks' line
    numbers always match the commit they pin.

    Long because its signature is the command's options (half the lines); the body builds
    settings, calls the facade and prints.
    """
    fmt = "json" if json_out else fmt
    if fmt not in ("table", "json", "markdown"):
        raise _fail(f"--format must be table, json or markdown, not {fmt!r}")
    try:
        title, body = read_issue(issue, issue_file)
        settings = _first_answer(
            _settings(k=k, selector=selector, edges=edges, first_stage=first_stage,
                      llm_roles=llm)
        )
        links = plan_permalinks(path, rev, repo_url, commit) if fmt == "markdown" else None
        if links is not None and links.note:
            _note(links.note)
        ranked_rev = links.rev if links is not None else rev
        from spider.retrieve.dense import preload_query_encoder

        preload_query_encoder(settings)  # its load overlaps the imports and the index's
        from spider.localize import locate as run_locate

        with terminal_progress(not quiet) as progress:
            t0 = time.perf_counter()
            idx = _build(path, ranked_rev, settings, progress)
            t1 = time.perf_counter()
            if progress is not None:
                progress(RANKING, 0, None)
            result = run_locate(idx, Issue(title=title, body=body), settings, progress=progress)
            ended(progress, RANKING)
            t2 = time.perf_counter()
    except (InputError, EmptyIssue, EnginePermanentError) as exc:
        raise _fail(str(exc)) from exc
    except SpiderError as exc:
        raise _fail(f"{exc} (transient: try again)", code=3) from exc
    result.timings.update(index=t1 - t0, query=t2 - t1)
    if links is not None and links.commit is not None:
        result = replace(result, commit=links.commit)
    _print_result(result, fmt, title, links, _ranked_tree(path, ranked_rev, result.commit, fmt))
    partial = result.settings.partial
    if partial is not None:
        _note(
            f"a first answer from a partial index ({partial.embedded_functions:,} of "
            f"{partial.functions:,} functions embedded); for the full ranking run "
            f"`{index_command(path, ranked_rev)}` once, then locate again"
        )


def _ranked_tree(path: Path, rev: str | None, commit: str | None, fmt: str) -> str:
    """What the table's last line says was ranked: a commit, a working tree, or a
    checkout's files with uncommitted changes (their lines are not the commit's)."""
    from spider import remote

    if commit is None:
        return "working tree"
    if fmt != "table" or rev is not None or remote.git_kind(path) != "top":
        return f"commit {commit}"
    if remote.uncommitted_changes(path):
        return f"working tree with uncommitted changes (HEAD {commit})"
    return f"commit {commit}"


def _print_result(
    result: Localization, fmt: str, title: str, links: Permalinks | None, ranked: str
) -> None:
    if fmt == "json":
        typer.echo(json.dumps(result.to_dict(), indent=2))
        return
    if links is not None:  # the comment's own escaping, and nothing a terminal acts on
        typer.echo(terminal_safe(_markdown(result, links), None, lines=True), nl=False)
        return
    c = _console()
    c.print(hits_table(result, title, c.width))
    partial = result.settings.partial
    tail = (
        f" · partial: {partial.embedded_functions:,} of {partial.functions:,} functions embedded"
        if partial is not None
        else ""
    )
    index_s, query_s = result.timings.get("index", 0.0), result.timings.get("query", 0.0)
    c.print(
        Text(f"{terminal_safe(ranked)} · index {index_s:.2f} s · query {query_s:.2f} s{tail}"),
    )


def plain_reasons(hit: Hit) -> str:
    """A hit's reasons as plain text: names as they are (made safe for a terminal), no
    Markdown code spans."""
    return terminal_safe("; ".join(r.describe(code=str) for r in hit.reasons), MAX_MESSAGE_CHARS)


def _room(width: int, *columns: int) -> int:
    """What is left of ``width`` beside columns this wide, for one more column (the
    table's padding: one space each side of a column, none at the edges, one rule)."""
    return width - sum(columns) - COLUMN_GAP * len(columns)


def hits_table(result: Localization, title: str, width: int) -> Table:
    """The ranked hits as a table that fits ``width`` columns.

    Ids are shown as a reader names them (an anonymous export by its file) and never cut
    inside a name: the lines' column goes first; then the reasons move under each id when
    the whole ids fit the width; else the ids are shortened at a path or dot boundary
    (:func:`spider.ids.shorten_id`), to keep the reasons beside them down to
    :data:`MIN_ID_WIDTH`, below it to the whole width with the reasons under them.
    Everything from the issue or the repository (the title, ids, reasons) passes
    :func:`terminal_safe`: cut (the title to one line, an id to ``MAX_ID_CHARS``), control
    and bidi characters shown as escapes.

    Long because the table's columns are laid out in one place, so that their widths add up to
    ``width``.
    """
    from spider.ids import shorten_id  # the graph's modules load only when a table is drawn

    hits = result.hits
    spans = [f"{h.start_line}-{h.end_line}" for h in hits]
    whys = [plain_reasons(h) for h in hits]
    names = [terminal_safe(reader_id(h.id)) for h in hits]
    n_w = max(len("#"), len(str(len(hits))))
    id_need = max((len(n) for n in names), default=len("function"))
    lines_w = max([len("lines"), *(len(s) for s in spans)])
    why_need = max([len("why"), *(len(w) for w in whys)])

    columns = ["#", "function", "lines", "why"]
    id_w = id_need
    why_w = _room(width, n_w, id_w, lines_w)
    if why_w < MIN_WHY_WIDTH:
        columns.remove("lines")
        why_w = _room(width, n_w, id_w)
    if why_w < MIN_WHY_WIDTH and id_need <= _room(width, n_w):
        columns.remove("why")  # whole ids, the reasons under each
    elif why_w < MIN_WHY_WIDTH:
        id_w = _room(width, n_w, MIN_WHY_WIDTH)
        why_w = MIN_WHY_WIDTH
        if id_w < MIN_ID_WIDTH:
            columns.remove("why")
    if "why" not in columns:
        id_w = max(1, _room(width, n_w))
    id_w = min(id_w, id_need)
    table = Table(
        title=Text(f"top {len(hits)} for: {terminal_safe(title, MAX_TITLE_CHARS)}"),
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    table.add_column("#", justify="right", no_wrap=True, width=n_w)
    table.add_column("function", overflow="fold", width=id_w)
    if "lines" in columns:
        table.add_column("lines", justify="right", no_wrap=True, width=lines_w)
    if "why" in columns:
        table.add_column("why", overflow="fold", width=max(1, min(why_w, why_need)))
    for n, (name, span, why) in enumerate(zip(names, spans, whys, strict=True), 1):
        shown = shorten_id(name, id_w)
        if "why" not in columns:
            cell = Text(shown)
            cell.append(f"\nlines {span} · {why}", style="dim")
            table.add_row(str(n), cell)
            continue
        row: list[str | Text] = [str(n), Text(shown)]
        if "lines" in columns:
            row.append(span)
        table.add_row(*row, Text(why))
    return table


def _markdown(result: Localization, links: Permalinks) -> str:
    """The comment the app would post for ``result`` (same view, same template)."""
    from spider.comment import build_view, render

    if result.commit is None:
        raise _fail("--format markdown needs a commit: permalinks pin one (see --commit)")
    try:
        view = build_view(
            result,
            html_url=links.html_url,
            branch=links.branch,
            ref=links.ref,
            skip_label="spider:skip",
            app_name="spider-bot",
        )
        return render(view)
    except SpiderError as exc:
        raise _fail(str(exc)) from exc


model_app = typer.Typer(cls=PlainGroup, no_args_is_help=True, help="The embedding model's files.")
app.add_typer(model_app, name="model")


@model_app.command(cls=PlainCommand, name="export")
def model_export(
    force: Annotated[bool, typer.Option("--force", help="export again even if present")] = False,
) -> None:
    """Export the configured model (its encoder delta merged in, when SPIDER_ENCODER_DELTA
    sets one) to ONNX (fp32) and int8 into SPIDER_ONNX_DIR (default: the cache directory).

    The ONNX encoders do this on first use; run it ahead (e.g. in an image build) so the
    first query does not pay the export (seconds, and the only step that imports torch).
    """
    settings = _settings()
    try:
        from spider.retrieve.dense import Encoder, silence_progress_bars
        from spider.retrieve.onnx_encoder import export_onnx

        silence_progress_bars()
        model_dir = Encoder.from_settings(settings, None).model_dir()  # the tuned one too
        paths = export_onnx(Path(model_dir), settings.export_dir(), force=force)
    except SpiderError as exc:
        raise _fail(str(exc)) from exc
    for p in paths:
        typer.echo(f"{p}\t{p.stat().st_size / 1e6:.1f} MB")


def main() -> None:
    """Console-script entry point."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    app()


if __name__ == "__main__":
    main()
