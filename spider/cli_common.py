"""What the ``spider bench`` and ``spider train`` command groups share.

Option types are declared once here (typer's ``Annotated`` form) and used by every
command that takes them, so ``--dataset``, ``--repos``, ``--only-repo``, ``--cache-dir``
and the rest read the same in both groups. Also: the error exit, the command line as
typed (recorded in every report and model file) and comma-separated lists.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer

from spider.settings import EngineSettings

ERROR_EXIT = 2  # a usage or data error: the command cannot do what it was asked

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
ProgressOpt = Annotated[bool, typer.Option("--progress/--no-progress")]
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
