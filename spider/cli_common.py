"""What the ``spider`` commands and the ``spider bench`` and ``spider train`` groups share.

Option types are declared once here (typer's ``Annotated`` form) and used by every
command that takes them, so ``--dataset``, ``--repos``, ``--only-repo``, ``--cache-dir``
and the rest read the same in both groups. Also: the error exit, the command line as
typed (recorded in every report and model file), comma-separated lists, and the progress
display on stderr (:class:`TerminalProgress`, the ``rich`` listener of
``spider.progress``), and :func:`terminal_safe`, through which every string from an issue or
a repository passes before it is printed in anything but JSON.
"""

from __future__ import annotations

import importlib
import re
import shlex
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, ClassVar, cast

import click
import typer
import typer.main
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress
from typer.core import TyperCommand, TyperGroup

from spider.comment.markdown import printable
from spider.progress import UNITS
from spider.settings import EngineSettings

ERROR_EXIT = 2  # a usage or data error: the command cannot do what it was asked


def _plain_params(params: list[click.Parameter]) -> list[click.Parameter]:
    """``params`` with no type shown beside a flag (typer prints ``--help <bool>``)."""
    for p in params:
        if getattr(p, "is_flag", False) and p.metavar is None:
            p.metavar = ""  # typer's options are no click.Option: read the flag as such
    return params


def _plain_usage(pieces: list[str]) -> list[str]:
    """Usage pieces with arguments as the manual writes them: ``PATH``, ``[REV]``, not
    typer's ``{path}``."""
    out = []
    for piece in pieces:
        if piece[:1] == "{":
            piece = piece[1:].replace("}", "", 1).upper()
        elif piece[:1] == "[" and piece != "[OPTIONS]":
            piece = piece.upper()
        out.append(piece)
    return out


class PlainCommand(TyperCommand):
    """A command whose help reads like a manual: ``PATH`` in the usage line, flags
    without a ``<bool>`` beside them."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        return _plain_params(super().get_params(ctx))

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return _plain_usage(super().collect_usage_pieces(ctx))


class PlainGroup(TyperGroup):
    """A command group with the help of :class:`PlainCommand`."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        return _plain_params(super().get_params(ctx))

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return _plain_usage(super().collect_usage_pieces(ctx))


class LazyGroup(PlainGroup):
    """A :class:`PlainGroup` whose sub-groups named in ``LAZY`` (name -> ``(module,
    attribute)`` of a ``typer.Typer``) are imported when a command line names them (or
    asks for help), so that ``spider locate`` never loads the benchmark and training code.
    A sub-group whose module is missing (a slim install) is simply not there."""

    LAZY: ClassVar[Mapping[str, tuple[str, str]]] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = super().list_commands(ctx)
        return [*names, *(n for n in self.LAZY if n not in names)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None or cmd_name not in self.LAZY:
            return cast(click.Command | None, command)  # typer's vendored click, same classes
        module, attribute = self.LAZY[cmd_name]
        try:
            sub = getattr(importlib.import_module(module), attribute)
        except ImportError:  # the optional package is not installed
            return None
        command = typer.main.get_group(sub)
        command.name = cmd_name
        self.add_command(command, cmd_name)
        return cast(click.Command, command)


MAX_TITLE_CHARS = 120  # an issue's title in a table's heading: one line on a wide terminal
MAX_ID_CHARS = 300  # a function id or path: longer than any real one, short of a flood
MAX_MESSAGE_CHARS = 2_000  # an error or note that quotes a path or an issue
# What a terminal acts on or reorders: C0 and C1 control characters (ESC starts colour,
# title, hyperlink and clipboard sequences; CSI is 0x9b on its own), DEL, and the Unicode
# bidi embeddings, overrides, isolates and marks that make text read other than it is.
_TERMINAL_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
_BREAKS = frozenset("\t\n\r\x0b\x0c\x85\u2028\u2029")  # whitespace that ends a line


def terminal_safe(value: object, limit: int | None = MAX_ID_CHARS, *, lines: bool = False) -> str:
    """``value`` as it may reach a terminal: control and bidi characters shown as visible
    escapes (``\\x1b``, ``\\u202e``), line breaks as spaces (kept with ``lines``), bytes
    that were not UTF-8 as U+FFFD, and at most ``limit`` characters (``…`` ends a cut)."""
    text = printable(value)
    cut = limit is not None and len(text) > limit
    if cut:
        text = text[:limit]  # cut first: a megabyte-long title costs nothing to escape

    def shown(m: re.Match[str]) -> str:
        ch = m.group()
        if ch in _BREAKS:
            return "\n" if lines and ch == "\n" else " "
        code = ord(ch)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    text = _TERMINAL_UNSAFE.sub(shown, text)
    if limit is not None and (cut or len(text) > limit):
        text = text[: limit - 1] + "…"
    return text

_DATASET = typer.Option("--dataset", "-d", help="SWE-bench-style JSONL")
_REPOS = typer.Option(
    "--repos",
    "-r",
    help="git repository path template with {owner} and {name}, "
    "e.g. '/work/.mirror/{owner}+{name}/repo'",
)

DatasetOpt = Annotated[Path, _DATASET]
OptionalDatasetOpt = Annotated[Path | None, _DATASET]  # a group callback's: checked by hand
DatasetsOpt = Annotated[
    list[Path], typer.Option("--dataset", "-d", help="SWE-bench-style JSONL (repeatable)")
]
ReposOpt = Annotated[str, _REPOS]
OptionalReposOpt = Annotated[str | None, _REPOS]
OnlyRepoOpt = Annotated[
    str | None, typer.Option("--only-repo", help="comma-separated owner/name filter")
]
SkipRepoOpt = Annotated[
    str | None, typer.Option("--skip-repo", help="comma-separated owner/name to leave out")
]
InstancesOpt = Annotated[
    str | None, typer.Option("--instances", help="comma-separated instance ids")
]
KOpt = Annotated[int, typer.Option("--k", help="results per query (the budget K)")]
CacheOpt = Annotated[
    Path | None, typer.Option("--cache-dir", help="graph and embedding cache (SPIDER_CACHE_DIR)")
]
ProgressOpt = Annotated[
    bool,
    typer.Option(
        "--progress/--no-progress", help="show progress on stderr (only ever on a terminal)"
    ),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="no progress display on stderr")]
WriteWeightsOpt = Annotated[
    bool, typer.Option("--write-weights", help="overwrite the shipped model file")
]
WeightsFileOpt = Annotated[
    Path | None,
    typer.Option("--weights-file", help="with --write-weights: write here, not the shipped file"),
]


def split_csv(value: str | None) -> list[str] | None:
    """``"a, b,"`` -> ``["a", "b"]``; None or empty -> None."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def exit_error(message: str) -> typer.Exit:
    """Print ``error: message`` on stderr; the Exit (code :data:`ERROR_EXIT`) to raise."""
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(ERROR_EXIT)


def command_line(group: str) -> str:
    """The command as typed, spelled ``spider GROUP ...`` however it was launched."""
    args = sys.argv[1:]
    if args[:1] == [group]:  # `spider GROUP ...`; else `python -m spider.GROUP.cli ...`
        args = args[1:]
    return f"spider {group} " + " ".join(shlex.quote(a) for a in args)


def engine_settings(k: int | None = None, cache_dir: Path | None = None) -> EngineSettings:
    """The engine's settings with the budget ``k`` and the cache folder given on the command
    line (None: the setting's own default)."""
    update: dict[str, object] = {}
    if k is not None:
        update["k"] = k
    if cache_dir is not None:
        update["cache_dir"] = cache_dir
    return EngineSettings().model_copy(update=update)


class TerminalProgress:
    """A ``spider.progress.Progress`` drawn by ``rich`` on stderr: one line per phase
    ("parsing 120 files", "embedding 15,240 functions") with a bar when the phase has a
    total, a spinner when not. Lines of finished phases stay, so the work done is seen."""

    def __init__(self, display: RichProgress) -> None:
        self._display = display
        self._tasks: dict[str, TaskID] = {}

    def __call__(self, phase: str, done: int, total: int | None, detail: str = "") -> None:
        """Start ``phase`` (or restart it when ``done`` is 0) or move its bar to ``done``."""
        unit = UNITS.get(phase, "")
        label = f"{phase} {total:,} {unit}" if unit and total is not None else phase
        if detail:
            label = f"{label} · {detail}"
        task = self._tasks.get(phase)
        if task is None:
            self._tasks[phase] = self._display.add_task(label, total=total, completed=done)
        elif done == 0 and not detail:
            self._display.reset(task, total=total, completed=0, description=label)
        else:
            self._display.update(task, total=total, completed=done, description=label)

    def finish(self) -> None:
        """Mark every phase done (their lines then show full bars)."""
        for task in self._tasks.values():
            t = self._display.tasks[task]
            self._display.update(task, total=t.total or 1, completed=t.total or 1)


def progress_console() -> Console:
    """The console progress is drawn on: stderr."""
    return Console(stderr=True)


@contextmanager
def terminal_progress(enabled: bool = True) -> Iterator[TerminalProgress | None]:
    """A progress display on stderr for the ``with`` block, or None (nothing is drawn) when
    disabled (``--quiet``) or when stderr is not a terminal (a pipe, a file, CI)."""
    console = progress_console()
    if not enabled or not console.is_terminal:
        yield None
        return
    display = RichProgress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )
    with display:
        progress = TerminalProgress(display)
        yield progress
        progress.finish()
