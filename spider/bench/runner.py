"""Run methods over benchmark instances: predictions, summary and printed tables.

For each instance the base commit is read straight from git (no checkout), indexed once
(graph and embeddings cached on disk), and queried with every pending method. One line per
(instance, method) is appended to ``DIR/predictions.jsonl`` as soon as it is known, so a
rerun skips finished pairs. The summary is recomputed from every line in the file.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import platform
import sys
import time
import traceback
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from spider.bench.dataset import Instance
from spider.bench.groundtruth import GroundTruthMode, patch_ground_truth
from spider.bench.ids import dataset_id_map, normalise_id
from spider.bench.methods import Method
from spider.bench.metrics import aggregate, dedupe, metric_names, score_instance
from spider.errors import InputError, SpiderError
from spider.settings import EngineSettings
from spider.source import GitSource, git

if TYPE_CHECKING:
    from spider.index import Index

log = logging.getLogger(__name__)

PREDICTIONS = "predictions.jsonl"
SUMMARY = "summary.json"
ERRORS = "errors.jsonl"
DENSE_STAGES = ("dense", "hybrid")  # first stages that need embeddings
TIMING_DIGITS = 3
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


CODE_VERSION_ENV = "SPIDER_BENCH_CODE"  # set when running from an exported snapshot (no .git)


def code_version() -> str:
    """The commit of this checkout, ``+dirty`` when it has uncommitted changes."""
    if os.environ.get(CODE_VERSION_ENV):
        return os.environ[CODE_VERSION_ENV]
    here = Path(__file__).resolve().parent
    try:
        head = git(["rev-parse", "--short=12", "HEAD"], here).decode().strip()
        dirty = git(["status", "--porcelain"], here).strip()
    except SpiderError:
        return "unknown"
    return head + ("+dirty" if dirty else "")


def machine_description() -> str:
    """The machine in a few words, for summaries and the README."""
    cpu = platform.processor() or platform.machine()
    try:
        mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        mem = f", {mem_gb:.0f} GiB RAM"
    except (ValueError, OSError, AttributeError):
        mem = ""
    return (
        f"{platform.system()} {cpu}, {os.cpu_count()} CPUs{mem}, Python {platform.python_version()}"
    )


@dataclass
class BenchConfig:
    """What to run: methods, the engine's base settings, where to write."""

    methods: list[Method]
    out: Path
    settings: EngineSettings = field(default_factory=EngineSettings)
    warm: bool = True  # also time a second (warm-cache) index build per instance
    progress: bool = True
    command: str = ""
    gt: GtChoice = "edit_functions"  # where ground truth comes from (see ground_truth)


def read_predictions(out: Path) -> list[dict[str, Any]]:
    """Every line of ``out/predictions.jsonl`` (a torn last line is ignored)."""
    path = out / PREDICTIONS
    if not path.exists():
        return []
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def finished_pairs(out: Path) -> set[tuple[str, str]]:
    """(instance_id, method) pairs already in the predictions file."""
    return {(r["instance_id"], r["method"]) for r in read_predictions(out)}


def ground_truth(
    inst: Instance,
    graph: Any,
    source: GitSource | None = None,
    mode: GtChoice = "edit_functions",
) -> tuple[list[str], str]:
    """The instance's ground-truth ids (dataset convention) and where they came from.

    ``edit_functions``: the row's labels, or the precise patch rule when it has none;
    ``precise`` / ``dataset``: always from the patch, by that rule (``spider.bench.groundtruth``).
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


def _needs_dense(settings: Iterable[EngineSettings]) -> bool:
    return any(s.first_stage in DENSE_STAGES for s in settings)


def _round(x: float) -> float:
    return round(x, TIMING_DIGITS)


class _Writer:
    """Appends JSON lines and flushes each one (a kill loses at most one line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh: Any = None  # opened on the first line: no empty files

    def write(self, row: dict[str, Any]) -> None:
        if self.fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fh = self.path.open("a", encoding="utf-8")
        self.fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.fh.flush()

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()


def run_instance(
    inst: Instance,
    methods: Sequence[Method],
    cfg: BenchConfig,
    repo_path: Path,
) -> list[dict[str, Any]]:
    """Index one instance's base commit and query it with each method; prediction rows."""
    from spider.index import build_index
    from spider.locate import locate
    from spider.select.oracle import OracleSelector

    base = cfg.settings
    per_method = {m.name: m.settings(base) for m in methods}
    dense = _needs_dense(per_method.values())

    t0 = time.perf_counter()
    source = GitSource(repo_path, inst.base_commit)
    index = build_index(source, base, embed=False)  # graph + BM25 indexes
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
        "cold_seconds": _round(cold_s),
        "warm_seconds": _round(warm_s) if warm_s is not None else None,
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
            loc = locate(index, issue, settings, selector=selector)
        except (SpiderError, ValueError, RuntimeError, KeyError) as exc:
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
                "seconds": _round(query_s),
                "gt": truth,
                "gt_source": gt_source,
                "gt_in_graph": sum(1 for t in truth if t in known),
                "metrics": score_instance(ranked, truth) if truth else None,
                "timings": {k: _round(v) for k, v in loc.timings.items()},
                "index": index_info,
                "settings": loc.settings,
            }
        )
    return rows


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
    writer = _Writer(cfg.out / PREDICTIONS)
    errors = _Writer(cfg.out / ERRORS)
    bar = _progress(sum(len(ms) for _, ms in todo), cfg.progress)
    try:
        for inst, methods in todo:
            bar.set_postfix_str(inst.instance_id, refresh=False)
            path = resolve(inst)
            reason = _unrunnable(path, inst)
            if reason:
                skipped[inst.instance_id] = reason
                bar.update(len(methods))
                continue
            try:
                rows = run_instance(inst, methods, cfg, path)
            except (SpiderError, OSError, ValueError, RuntimeError) as exc:
                log.error("%s failed: %s", inst.instance_id, exc)
                errors.write(
                    {
                        "instance_id": inst.instance_id,
                        "error": f"{type(exc).__name__}: {exc}",
                        "traceback": traceback.format_exc(),
                    }
                )
                skipped[inst.instance_id] = f"error: {type(exc).__name__}: {exc}"
                bar.update(len(methods))
                continue
            for row in rows:
                writer.write({**row, "code": code})
            bar.update(len(methods))
    finally:
        bar.close()
        writer.close()
        errors.close()
    summary = summarise(read_predictions(cfg.out), instances, cfg, skipped, code=code)
    cfg.out.mkdir(parents=True, exist_ok=True)
    (cfg.out / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
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
    from spider.bench.groundtruth import literal_globs, patch_paths
    from spider.graph import build_graph

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


def _unrunnable(path: Path, inst: Instance) -> str | None:
    """Why an instance cannot run here, or None."""
    if not path.is_dir():
        return f"repository not found at {path}"
    try:
        GitSource(path, inst.base_commit)
    except SpiderError as exc:
        return f"base commit {inst.base_commit[:12]} not readable: {exc}"
    return None


def _progress(total: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc="bench",
        unit="run",
        disable=not enabled,
        file=sys.stderr,
        dynamic_ncols=True,
    )


def _timing_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate index and query timings over instances (one index per instance)."""
    per_instance: dict[str, dict[str, Any]] = {}
    for r in rows:  # file order: the first build of an instance is its cold one
        if r.get("index"):
            entry = per_instance.setdefault(r["instance_id"], {**r["index"], "query_seconds": {}})
            entry["query_seconds"][r["method"]] = r["seconds"]

    def mean(key: str) -> float | None:
        vals = [float(v[key]) for v in per_instance.values() if v.get(key) is not None]
        return _round(sum(vals) / len(vals)) if vals else None

    embedded = sum(int(v.get("embedded") or 0) for v in per_instance.values())
    embed_s = sum(float(v.get("embed_seconds") or 0) for v in per_instance.values())
    query: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        query[r["method"]].append(float(r["seconds"]))
    return {
        "instances": len(per_instance),
        "mean_functions": mean("functions"),
        "mean_cold_index_seconds": mean("cold_seconds"),
        "mean_warm_index_seconds": mean("warm_seconds"),
        "functions_embedded": embedded,
        "embed_seconds": _round(embed_s),
        "embed_per_second": _round(embedded / embed_s) if embedded and embed_s else None,
        "mean_query_seconds": {m: _round(sum(v) / len(v)) for m, v in query.items()},
        "per_instance": per_instance,
    }


def summarise(
    rows: list[dict[str, Any]],
    instances: Sequence[Instance],
    cfg: BenchConfig,
    skipped: dict[str, str] | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    """Macro-averaged metrics per method and per (method, repository)."""
    wanted = {i.instance_id for i in instances}
    names = [m.name for m in cfg.methods]
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        if r["instance_id"] in wanted and r["method"] in names and r.get("metrics"):
            latest[(r["instance_id"], r["method"])] = r
    kept = list(latest.values())
    overall: dict[str, Any] = {}
    per_repo: dict[str, dict[str, Any]] = {}
    for name in names:
        mine = [r for r in kept if r["method"] == name]
        overall[name] = aggregate(r["metrics"] for r in mine)
        repos: dict[str, list[dict[str, float]]] = defaultdict(list)
        for r in mine:
            repos[r["repo"]].append(r["metrics"])
        per_repo[name] = {repo: aggregate(ms) for repo, ms in sorted(repos.items())}
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine_description(),
        "command": cfg.command,
        "code": code or code_version(),
        "codes_in_predictions": sorted({str(r.get("code")) for r in kept}),
        "k": cfg.settings.k,
        "model": cfg.settings.model or "all-MiniLM-L6-v2 (bundled)",
        "instances": len(instances),
        "scored": len({r["instance_id"] for r in kept}),
        "skipped": skipped or {},
        "metrics": metric_names(),
        "methods": overall,
        "per_repo": per_repo,
        "timings": _timing_summary(kept),
    }


def render_tables(summary: dict[str, Any], *, file: Any = None) -> None:
    """Print one table of methods and, per method, one table of repositories."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=file or sys.stdout, width=140)
    cols = summary["metrics"]
    title = (
        f"{summary['scored']} of {summary['instances']} instances scored, "
        f"K={summary['k']}, {summary['model']}"
    )
    t = Table(title=title)
    t.add_column("method")
    t.add_column("n", justify="right")
    for c in cols:
        t.add_column(c, justify="right")
    for name, agg in summary["methods"].items():
        t.add_row(name, str(agg.get("n", 0)), *[_fmt(agg.get(c)) for c in cols])
    console.print(t)
    for name, repos in summary["per_repo"].items():
        if not repos:
            continue
        rt = Table(title=f"{name} per repository")
        rt.add_column("repository")
        rt.add_column("n", justify="right")
        for c in cols:
            rt.add_column(c, justify="right")
        for repo, agg in repos.items():
            rt.add_row(repo, str(agg.get("n", 0)), *[_fmt(agg.get(c)) for c in cols])
        console.print(rt)
    tm = summary.get("timings", {})
    if tm.get("instances"):
        console.print(
            f"index: mean cold {tm['mean_cold_index_seconds']} s, warm "
            f"{tm['mean_warm_index_seconds']} s, {tm['mean_functions']} functions; "
            f"embedded {tm['functions_embedded']} at {tm['embed_per_second']} fn/s; "
            f"query s per method: {tm['mean_query_seconds']}"
        )
    if summary.get("skipped"):
        console.print(
            f"skipped {len(summary['skipped'])}: "
            + "; ".join(f"{k} ({v})" for k, v in sorted(summary["skipped"].items()))
        )


def render_timings(summary: dict[str, Any], *, file: Any = None) -> None:
    """Print one row per instance: functions, cold/warm index, embedding, query seconds."""
    from rich.console import Console
    from rich.table import Table

    per = summary.get("timings", {}).get("per_instance", {})
    methods = list(summary.get("methods", {}))
    t = Table(title="per-instance timings (seconds)")
    for col in ("instance", "functions", "cold", "warm", "embedded", "fn/s", *methods):
        t.add_column(col, justify="left" if col == "instance" else "right")
    for iid, v in sorted(per.items()):
        q = v.get("query_seconds", {})
        t.add_row(
            iid,
            str(v.get("functions")),
            _num(v.get("cold_seconds")),
            _num(v.get("warm_seconds")),
            str(v.get("embedded") or 0),
            _num(v.get("embed_per_second")),
            *[_num(q.get(m)) for m in methods],
        )
    Console(file=file or sys.stdout, width=200).print(t)


def _num(value: Any) -> str:
    return "-" if value is None else f"{float(value):.2f}"


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{float(value):.3f}"
