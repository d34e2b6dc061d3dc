"""The one body of the fits on development data (``spider train selector``, ``head``,
``calibration``, ``fusion``): collect each instance at its base commit, cross-validate by
repository, write the CV report and, when asked, fit on every instance and write the model
file. A fit declares itself as a :class:`Fitting`; :func:`run` does the rest and returns
what it did (:class:`DevFit`); the command only parses and prints.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from spider.errors import InputError
from spider.progress import INSTANCES, Progress, ended

if TYPE_CHECKING:
    from spider.eval.dataset import Instance
    from spider.eval.snapshot import RepoResolver
    from spider.learn.cv import CVReport
    from spider.settings import EngineSettings

_T = TypeVar("_T")  # one collected instance of a fit
_W = TypeVar("_W")  # the weights a fit writes

CROSS_VALIDATING = "cross-validating"  # a fit's second phase (no total)


@dataclass(frozen=True)
class Fitting(Generic[_T, _W]):
    """What a fit on development data declares; :func:`run` does the rest."""

    collect: Callable[[Sequence[Instance], RepoResolver, EngineSettings, Path], list[_T]]
    cross_validate: Callable[[list[_T], int], CVReport[Any]]  # leave-one-repository-out
    cv_file: str  # the CV report, written into the run's folder
    describe: Callable[[dict[str, Any]], str] = lambda cv: json.dumps(cv, indent=2)
    weights: Callable[[list[_T], dict[str, Any], int], _W] | None = None  # fit on everything
    write: Callable[[_W, dict[str, Any], str, Path], None] | None = None
    weights_file: Path | None = None  # the shipped file a written fit replaces
    min_repos: int = 2  # leave-one-repository-out needs one to hold out and one to fit on


@dataclass(frozen=True)
class DevRun:
    """The instances to fit on, where their repositories are, the settings, the folder of
    the collected data and the CV report, and whether (and where) to write the model."""

    rows: Sequence[Instance]
    resolve: RepoResolver
    settings: EngineSettings
    out: Path
    command: str  # as typed: the file's provenance
    write: bool = False
    weights_file: Path | None = None  # else the fit's shipped file
    progress: Progress | None = None


@dataclass
class DevFit:
    """What :func:`run` did: the CV report (also ``out/<cv_file>``) and the file written."""

    cv: dict[str, Any]
    written: Path | None = None


def reporting(resolve: RepoResolver, total: int, progress: Progress | None) -> RepoResolver:
    """``resolve``, telling ``progress`` which of the ``total`` instances a collector has
    reached (each collector resolves an instance's repository when it starts on it)."""
    if progress is None:
        return resolve
    seen: dict[str, None] = {}

    def resolve_and_report(inst: Instance) -> Path:
        if inst.instance_id not in seen:
            seen[inst.instance_id] = None
            progress(INSTANCES, len(seen) - 1, total, inst.instance_id)
        return resolve(inst)

    return resolve_and_report


def run(spec: Fitting[_T, _W], config: DevRun) -> DevFit:
    """Collect the rows, run the CV, write its report and, when asked, fit on every
    instance and write the model file. Nothing collected is a clean error."""
    rows, settings, progress = config.rows, config.settings, config.progress
    data = spec.collect(rows, reporting(config.resolve, len(rows), progress), settings, config.out)
    if progress is not None:
        progress(INSTANCES, len(rows), len(rows))
    if not data:
        raise InputError("no instance could be collected")
    if progress is not None:
        progress(CROSS_VALIDATING, 0, None)
    cv = spec.cross_validate(data, settings.k).to_json()
    ended(progress, CROSS_VALIDATING)
    (config.out / spec.cv_file).write_text(json.dumps(cv, indent=2, ensure_ascii=False) + "\n")
    result = DevFit(cv)
    target = config.weights_file or spec.weights_file
    if config.write and spec.weights and spec.write and target:
        spec.write(spec.weights(data, cv, settings.k), cv, config.command, target)
        result.written = target
    return result


__all__ = ["CROSS_VALIDATING", "DevFit", "DevRun", "Fitting", "reporting", "run"]
