"""The run loop: instances x methods -> prediction rows, then the summary.

For each instance the base commit is read straight from git (no checkout), indexed once
(graph and embeddings cached on disk), and queried with every pending method. Rows go to
``spider.bench.store`` as soon as they are known, so a rerun skips finished pairs; the
summary is recomputed there from every line in the file.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spider.bench.config import BenchConfig
from spider.bench.methods import Method
from spider.bench.store import (
    ERRORS,
    PREDICTIONS,
    JsonlWriter,
    code_version,
    finished_pairs,
    read_predictions,
    round_seconds,
    summarise,
    write_summary,
)
from spider.cli_common import terminal_progress
from spider.errors import SpiderError
from spider.eval.dataset import Instance
from spider.eval.metrics import dedupe, score_instance
from spider.eval.snapshot import GtChoice, RepoResolver, ground_truth
from spider.ids import dataset_id_map, normalise_id
from spider.progress import RUNS, Progress
from spider.settings import EngineSettings
from spider.source import GitSource

if TYPE_CHECKING:
    from spider.models import Localization

log = logging.getLogger(__name__)

DENSE_STAGES = ("dense", "hybrid")  # first stages that need embeddings


def _needs_dense(settings: Iterable[EngineSettings]) -> bool:
    return any(s.first_stage in DENSE_STAGES for s in settings)


def expansion_fields(loc: Localization) -> dict[str, Any]:
    """A prediction row's expansion accounting: candidates offered to the selector and
    admitted by it, in total and per centre. None (missing, not zero) when the engine's
    ``Localization`` does not report it."""
    centres = getattr(loc, "expansion", None)
    if centres is None:
        return {"offered": None, "admitted": None, "expansion": None}
    per_centre = [
        {"centre": c.centre, "offered": int(c.offered), "admitted": int(c.admitted)}
        for c in centres
    ]
    return {
        "offered": sum(c["offered"] for c in per_centre),
        "admitted": sum(c["admitted"] for c in per_centre),
        "expansion": per_centre,
    }


def llm_fields(loc: Localization, dataset_id: Any) -> dict[str, Any]:
    """A prediction row's LLM record (when an LLM pass ran) and the dataset ids of the
    items graph expansion admitted (for η against τ: ``spider bench llm``)."""
    record = getattr(loc, "llm", None)
    admitted = [
        dataset_id(h.id) for h in loc.hits
        if any(getattr(r, "kind", "") == "expand" for r in getattr(h, "reasons", ()))
    ]
    return {**({"llm": record.to_dict()} if record is not None else {}),
            "admitted_ids": admitted}


def run_instance(
    inst: Instance,
    methods: Sequence[Method],
    cfg: BenchConfig,
    repo_path: Path,
    progress: Progress | None = None,
    llm: Any = None,
) -> list[dict[str, Any]]:
    """Index one instance's base commit and query it with each method; prediction rows.
    ``progress`` hears the indexing's phases (parsing, embedding); ``llm`` is the run's LLM
    backend (:func:`llm_backend`) for the methods that run an LLM role.

    Long because it is the bench's per-instance loop: index, time, query each method, record a
    row; a split would hand the timings and the row fields between steps."""
    from spider.expand.select.oracle import OracleSelector
    from spider.index import build_index
    from spider.localize import locate

    base = cfg.settings
    per_method = {m.name: m.settings(base) for m in methods}
    dense = _needs_dense(per_method.values())

    t0 = time.perf_counter()
    source = GitSource(repo_path, inst.base_commit)
    index = build_index(source, base, embed=False, progress=progress)  # graph + BM25 indexes
    if dense:
        index.vectors()
    cold_s = time.perf_counter() - t0
    stats = dict(index.stats)
    warm_s = None
    if cfg.warm:
        t1 = time.perf_counter()
        warm = build_index(GitSource(repo_path, inst.base_commit), base, embed=dense)
        warm_s = time.perf_counter() - t1
        del warm
    id_map = dataset_id_map(index.graph)
    truth, gt_source = ground_truth(inst, index.graph, source, cfg.gt)
    known = set(id_map.values())
    index_info = {
        "functions": stats.get("functions"),
        "graph_seconds": stats.get("graph_seconds"),
        "bm25_seconds": stats.get("bm25_seconds"),
        "graph_cached": stats.get("graph_cached"),
        "cold_seconds": round_seconds(cold_s),
        "warm_seconds": round_seconds(warm_s) if warm_s is not None else None,
        "embed_seconds": stats.get("embed_seconds"),
        "embedded": stats.get("embedded"),
        "embed_cached": stats.get("embed_cached"),
        "embed_per_second": stats.get("embed_per_second"),
    }
    rows: list[dict[str, Any]] = []
    issue = inst.issue()
    for m in methods:
        settings = per_method[m.name]
        selector = None
        if m.uses_oracle:
            selector = OracleSelector(truth, normalise=lambda i: id_map.get(i, normalise_id(i)))
        tq = time.perf_counter()
        try:
            loc = locate(index, issue, settings, selector=selector,
                         llm=llm if settings.active_llm_roles else None)
        except SpiderError as exc:
            # one broken method must not cost the others; the pair is retried on a rerun
            log.error("%s / %s failed: %s", inst.instance_id, m.name, exc)
            continue
        query_s = time.perf_counter() - tq
        raw = [h.id for h in loc.hits]
        ranked = dedupe(id_map.get(h, normalise_id(h)) for h in raw)
        rows.append(
            {
                "instance_id": inst.instance_id,
                "repo": inst.repo,
                "method": m.name,
                "ranked": ranked,
                "ranked_ids": raw,
                "dataset_ids": [id_map.get(h, normalise_id(h)) for h in raw],  # aligned with raw
                "seconds": round_seconds(query_s),
                "gt": truth,
                "gt_source": gt_source,
                "gt_in_graph": sum(1 for t in truth if t in known),
                "metrics": score_instance(ranked, truth) if truth else None,
                **expansion_fields(loc),
                "timings": {k: round_seconds(v) for k, v in loc.timings.items()},
                "index": index_info,
                "settings": loc.settings.to_dict(),
                **llm_fields(loc, lambda i: id_map.get(i, normalise_id(i))),
            }
        )
    return rows


def llm_backend(cfg: BenchConfig) -> Any:
    """The run's LLM backend behind its answer store (``OUT/llm-answers.sqlite``), made
    once per run when a method runs an LLM role; None otherwise."""
    if not any(m.settings(cfg.settings).active_llm_roles for m in cfg.methods):
        return None
    from spider.bench.llm_cache import CachedBackend
    from spider.llm.backends import make_backend

    return CachedBackend(make_backend(cfg.settings), cfg.out / "llm-answers.sqlite")


def run_benchmark(
    instances: Sequence[Instance],
    resolve: RepoResolver,
    cfg: BenchConfig,
) -> dict[str, Any]:
    """Run every pending (instance, method) pair, then write and return the summary."""
    code = code_version()  # the code imported now is the code that runs
    done = finished_pairs(cfg.out)
    todo = [
        (inst, [m for m in cfg.methods if (inst.instance_id, m.name) not in done])
        for inst in instances
    ]
    todo = [(i, ms) for i, ms in todo if ms]
    skipped: dict[str, str] = {}
    writer = JsonlWriter(cfg.out / PREDICTIONS)
    errors = JsonlWriter(cfg.out / ERRORS)
    total = sum(len(ms) for _, ms in todo)
    runs = 0
    llm = llm_backend(cfg) if todo else None
    try:
        with terminal_progress(cfg.progress) as progress:
            for inst, methods in todo:
                if progress is not None:
                    progress(RUNS, runs, total, inst.instance_id)
                runs += len(methods)
                path = resolve(inst)
                reason = unrunnable(path, inst)
                if reason:
                    skipped[inst.instance_id] = reason
                    continue
                try:
                    rows = run_instance(inst, methods, cfg, path, progress, llm)
                except (SpiderError, OSError) as exc:  # OSError: the output or a mirror's disk
                    log.error("%s failed: %s", inst.instance_id, exc)
                    errors.write(
                        {
                            "instance_id": inst.instance_id,
                            "error": f"{type(exc).__name__}: {exc}",
                            "traceback": traceback.format_exc(),
                        }
                    )
                    skipped[inst.instance_id] = f"error: {type(exc).__name__}: {exc}"
                    continue
                for row in rows:
                    writer.write({**row, "code": code})
            if progress is not None:
                progress(RUNS, runs, total)
    finally:
        writer.close()
        errors.close()
    summary = summarise(read_predictions(cfg.out), instances, cfg, skipped, code=code)
    write_summary(cfg.out, summary)
    return summary


def rescore(
    rows: list[dict[str, Any]],
    instances: Sequence[Instance],
    resolve: RepoResolver,
    settings: EngineSettings,
    mode: GtChoice,
) -> list[dict[str, Any]]:
    """Prediction rows scored against another ground truth (no engine run: rankings kept).

    Each instance's touched files are parsed at its base commit to derive the truth.
    """
    from spider.graph import build_graph
    from spider.patch import literal_globs, patch_paths

    by_id = {i.instance_id: i for i in instances}
    truths: dict[str, tuple[list[str], str]] = {}
    out: list[dict[str, Any]] = []
    for row in rows:
        inst = by_id.get(row["instance_id"])
        if inst is None:
            continue
        if inst.instance_id not in truths:
            source = GitSource(resolve(inst), inst.base_commit)
            paths = patch_paths(inst.patch or "")
            narrow = settings.model_copy(update={"include": literal_globs(paths)})
            graph = build_graph(source, narrow) if paths else None
            truths[inst.instance_id] = (
                ground_truth(inst, graph, source, mode) if graph is not None else ([], mode)
            )
        truth, gt_source = truths[inst.instance_id]
        metrics = score_instance(row["ranked"], truth) if truth else None
        out.append({**row, "gt": truth, "gt_source": gt_source, "metrics": metrics})
    return out


def unrunnable(path: Path, inst: Instance) -> str | None:
    """Why an instance cannot run here, or None."""
    if not path.is_dir():
        return f"repository not found at {path}"
    try:
        GitSource(path, inst.base_commit)
    except SpiderError as exc:
        return f"base commit {inst.base_commit[:12]} not readable: {exc}"
    return None
