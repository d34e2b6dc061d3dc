"""A dataset instance's repository at its base commit: where it lives, its index, its truth.

What measuring (``spider bench``) and learning (``spider train``) both start from: a
``--repos`` template resolves an :class:`~spider.eval.dataset.Instance` to a repository on
disk, :func:`index_instance` indexes its base commit (read straight from git, no
checkout) and derives the ground-truth ids in the dataset's convention, by the rule
:data:`GtChoice` names.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from spider.errors import InputError
from spider.eval.dataset import Instance
from spider.ids import dataset_id_map, normalise_id
from spider.patch import GroundTruthMode, patch_ground_truth
from spider.settings import EngineSettings
from spider.source import GitSource

if TYPE_CHECKING:
    from spider.index import Index

GtChoice = Literal["edit_functions", "precise", "dataset"]
GT_CHOICES: tuple[str, ...] = ("edit_functions", "precise", "dataset")

RepoResolver = Callable[[Instance], Path]


def template_resolver(template: str) -> RepoResolver:
    """``--repos`` template (``{owner}``, ``{name}``, ``{repo}``) -> path of an instance's repo."""

    def resolve(inst: Instance) -> Path:
        owner, name = inst.owner_name
        return Path(template.format(owner=owner, name=name, repo=inst.repo))

    return resolve


def fixed_resolver(path: str | Path) -> RepoResolver:
    """Every instance lives in one repository (history backtests)."""
    return lambda _inst: Path(path)


def ground_truth(
    inst: Instance,
    graph: Any,
    source: GitSource | None = None,
    mode: GtChoice = "edit_functions",
) -> tuple[list[str], str]:
    """The instance's ground-truth ids (dataset convention) and where they came from.

    ``edit_functions``: the row's labels, or the precise patch rule when it has none;
    ``precise`` / ``dataset``: always from the patch, by that rule (``spider.patch``).
    """
    if mode == "edit_functions" and inst.edit_functions:
        return sorted({normalise_id(e) for e in inst.edit_functions}), "edit_functions"
    if not inst.patch:
        raise InputError(f"{inst.instance_id}: no patch to derive ground truth from")

    def read_old(paths: list[str]) -> dict[str, str]:
        if source is None:
            return {}
        return {p: b.decode("utf-8", "replace") for p, b in source.read_many(paths)}

    rule: GroundTruthMode = "dataset" if mode == "dataset" else "precise"
    truth = patch_ground_truth(inst.patch, graph, rule, read_old=read_old)
    return truth, "patch" if mode == "edit_functions" else f"patch:{rule}"


def index_instance(
    inst: Instance, resolve: RepoResolver, settings: EngineSettings
) -> tuple[Index, list[str], dict[str, str]]:
    """An instance's base-commit index, its ground-truth ids (dataset convention) and the
    graph id -> dataset id map (what every fitting command starts from)."""
    from spider.index import build_index

    source = GitSource(resolve(inst), inst.base_commit)
    index = build_index(source, settings)
    truth, _ = ground_truth(inst, index.graph, source)
    return index, truth, dataset_id_map(index.graph)
