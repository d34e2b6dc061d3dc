"""Check ground truth against the base-commit graph: id match rate and rule agreement.

Match rate: the fraction of ``edit_functions`` ids that exist as function nodes of the
base-commit graph under the dataset convention (``spider.ids``). Agreement: for both
patch rules (``precise`` and ``dataset``), how many instances give exactly the
``edit_functions`` set, and the function-level precision/recall against it.

Ceiling: what a localizer that returns exactly a rule's functions would score against the
labels, as the benchmark scores (Recall macro-averaged over instances, Acc = every label
found). For the ``precise`` rule this is the best any ranking of *edited* functions can do:
labels that only a diff's context lines touch (a neighbouring ``def``, the last line of the
function above) are out of its reach.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean
from typing import Any

from spider.bench.history import GraphBuilder
from spider.eval.dataset import Instance
from spider.eval.snapshot import RepoResolver
from spider.ids import dataset_id_map, normalise_id, split_id
from spider.patch import GT_MODES, literal_globs, patch_ground_truth, patch_paths
from spider.settings import EngineSettings
from spider.source import GitSource


def check_instance(
    inst: Instance,
    source: GitSource,
    settings: EngineSettings,
    graph_builder: GraphBuilder | None = None,
) -> dict[str, Any]:
    """Match and agreement figures of one instance (needs both edit_functions and a patch)."""
    if graph_builder is None:
        from spider.graph import build_graph

        graph_builder = build_graph

    edit = {normalise_id(e) for e in inst.edit_functions or []}
    paths = set(patch_paths(inst.patch or "")) | {split_id(e)[0] for e in edit}
    narrow = settings.model_copy(update={"include": literal_globs(sorted(paths))})
    graph = graph_builder(source, narrow)
    known = set(dataset_id_map(graph).values())

    def read_old(ps: list[str]) -> dict[str, str]:
        return {p: b.decode("utf-8", "replace") for p, b in source.read_many(ps)}

    row: dict[str, Any] = {
        "instance_id": inst.instance_id,
        "repo": inst.repo,
        "edit_functions": sorted(edit),
        "missing": sorted(edit - known),
    }
    for mode in GT_MODES:
        got = set(patch_ground_truth(inst.patch or "", graph, mode, read_old=read_old))
        row[mode] = {
            "ids": sorted(got),
            "exact": got == edit,
            "extra": sorted(got - edit),
            "lacking": sorted(edit - got),
        }
    return row


def summarise_check(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Micro match rate, and per rule: exact-agreement rate, precision and recall."""
    total = sum(len(r["edit_functions"]) for r in rows)
    missing = sum(len(r["missing"]) for r in rows)
    out: dict[str, Any] = {
        "instances": len(rows),
        "gt_ids": total,
        "gt_ids_in_graph": total - missing,
        "match_rate": (total - missing) / total if total else None,
        "instances_fully_matched": sum(1 for r in rows if not r["missing"]),
    }
    labelled = [r for r in rows if r["edit_functions"]]
    for mode in GT_MODES:
        got = sum(len(r[mode]["ids"]) for r in rows)
        extra = sum(len(r[mode]["extra"]) for r in rows)
        lacking = sum(len(r[mode]["lacking"]) for r in rows)
        exact = sum(1 for r in rows if r[mode]["exact"])
        out[mode] = {
            "exact_instances": exact,
            "agreement": exact / len(rows) if rows else None,
            "precision": (got - extra) / got if got else None,
            "recall": (total - lacking) / total if total else None,
            "labels_out_of_reach": lacking,
            "ceiling_recall": fmean(_reach(r, mode) for r in labelled) if labelled else None,
            "ceiling_acc": (
                fmean(float(not r[mode]["lacking"]) for r in labelled) if labelled else None
            ),
        }
    return out


def _reach(row: dict[str, Any], mode: str) -> float:
    """Fraction of an instance's labels that the rule's own functions cover."""
    n = len(row["edit_functions"])
    return (n - len(row[mode]["lacking"])) / n


def check_groundtruth(
    instances: Sequence[Instance],
    resolve: RepoResolver,
    settings: EngineSettings,
    graph_builder: GraphBuilder | None = None,
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Per-instance check rows for every runnable instance with both GT fields, plus skips."""
    from spider.errors import SpiderError

    rows: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    for inst in instances:
        if not inst.edit_functions or not inst.patch:
            skipped[inst.instance_id] = "needs both edit_functions and patch"
            continue
        try:
            source = GitSource(resolve(inst), inst.base_commit)
        except SpiderError as exc:
            skipped[inst.instance_id] = str(exc)
            continue
        rows.append(check_instance(inst, source, settings, graph_builder))
    return rows, skipped
