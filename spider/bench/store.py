"""The files of a benchmark run and what they hold: predictions, errors, summary.

``DIR/predictions.jsonl`` gets one line per (instance, method), appended and flushed as
soon as it is known, so a killed run loses at most one line and a rerun skips the pairs
already there (:func:`finished_pairs`). ``DIR/errors.jsonl`` keeps tracebacks of failed
instances (retried on a rerun). ``DIR/summary.json`` is recomputed from every prediction
line by :func:`summarise`: macro averages per method and per (method, repository), the
expansion accounting, timings and provenance. Rendering lives in ``spider.bench.report``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any

from spider.errors import SpiderError
from spider.eval.dataset import Instance
from spider.eval.metrics import aggregate, metric_names
from spider.graph.languages import has_cpp_sources, spec_for_path
from spider.source import git

if TYPE_CHECKING:
    from spider.bench.config import BenchConfig

PREDICTIONS = "predictions.jsonl"
SUMMARY = "summary.json"
ERRORS = "errors.jsonl"
TIMING_DIGITS = 3  # seconds are stored to the millisecond
CODE_VERSION_ENV = "SPIDER_BENCH_CODE"  # set when running from an exported snapshot (no .git)
OFFERED_PER_ISSUE = "offered/issue"  # mean candidates offered to the selector per instance
ADMITTED_PER_ISSUE = "adm/issue"  # mean candidates the selector admitted per instance
EXPANSION_N = "n_expansion"  # rows carrying the accounting (older rows have none)


def round_seconds(x: float) -> float:
    """Seconds as stored in the files."""
    return round(x, TIMING_DIGITS)


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
    """(instance_id, method) pairs already in the predictions file: what a rerun skips."""
    return {(r["instance_id"], r["method"]) for r in read_predictions(out)}


def write_predictions(out: Path, rows: Iterable[dict[str, Any]]) -> None:
    """Replace ``out/predictions.jsonl`` with ``rows`` (a rescored run)."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / PREDICTIONS).open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def write_summary(out: Path, summary: dict[str, Any]) -> None:
    """Write ``out/summary.json``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


def read_summary(out: Path) -> dict[str, Any] | None:
    """``out/summary.json``, or None when the run has none."""
    path = out / SUMMARY
    if not path.exists():
        return None
    summary: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return summary


class JsonlWriter:
    """Appends JSON lines and flushes each one (a kill loses at most one line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh: Any = None  # opened on the first line: no empty files

    def write(self, row: dict[str, Any]) -> None:
        """Append one row."""
        if self.fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fh = self.path.open("a", encoding="utf-8")
        self.fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.fh.flush()

    def close(self) -> None:
        """Close the file if a row was written."""
        if self.fh is not None:
            self.fh.close()


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


def expansion_means(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean offered and admitted candidates per instance over the rows that carry them.

    Rows written before the accounting existed (or by an engine that does not report it)
    are missing, not zero: with none carrying it both means are None.
    """
    carrying = [r for r in rows if r.get("offered") is not None and r.get("admitted") is not None]
    if not carrying:
        return {OFFERED_PER_ISSUE: None, ADMITTED_PER_ISSUE: None, EXPANSION_N: 0}
    return {
        OFFERED_PER_ISSUE: fmean(float(r["offered"]) for r in carrying),
        ADMITTED_PER_ISSUE: fmean(float(r["admitted"]) for r in carrying),
        EXPANSION_N: len(carrying),
    }


def _group(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Macro-averaged metrics of some rows, with their expansion accounting."""
    return {**aggregate(r["metrics"] for r in rows), **expansion_means(rows)}


def _timing_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate index and query timings over instances (one index per instance)."""
    per_instance: dict[str, dict[str, Any]] = {}
    for r in rows:  # file order: the first build of an instance is its cold one
        if r.get("index"):
            entry = per_instance.setdefault(r["instance_id"], {**r["index"], "query_seconds": {}})
            entry["query_seconds"][r["method"]] = r["seconds"]

    def mean(key: str) -> float | None:
        vals = [float(v[key]) for v in per_instance.values() if v.get(key) is not None]
        return round_seconds(sum(vals) / len(vals)) if vals else None

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
        "embed_seconds": round_seconds(embed_s),
        "embed_per_second": round_seconds(embedded / embed_s) if embedded and embed_s else None,
        "mean_query_seconds": {m: round_seconds(sum(v) / len(v)) for m, v in query.items()},
        "per_instance": per_instance,
    }


# languages reported together (one grammar family in the reader's eyes)
LANGUAGE_GROUPS = {"javascript": "JS/TS", "typescript": "JS/TS", "tsx": "JS/TS"}
# how a table names a language (the summary's keys stay the grammar names)
LANGUAGE_LABELS = {
    "c": "C",
    "cpp": "C++",
    "csharp": "C#",
    "go": "Go",
    "java": "Java",
    "kotlin": "Kotlin",
    "php": "PHP",
    "python": "Python",
    "ruby": "Ruby",
    "rust": "Rust",
}


def language_of(function_ids: Sequence[str]) -> str:
    """The language of most files these functions live in (``unknown`` when none is a
    supported language); a repository's instances count under that of all their
    ground truths (a C++ project's header-only fix is C++, not C)."""
    paths = [f.split(":", 1)[0] for f in function_ids]
    cpp = has_cpp_sources(paths)
    counts: dict[str, int] = defaultdict(int)
    for p in paths:
        spec = spec_for_path(p, headers_are_cpp=cpp)
        if spec is not None:
            counts[LANGUAGE_GROUPS.get(spec.name, spec.name)] += 1
    return max(sorted(counts), key=counts.__getitem__) if counts else "unknown"


def repo_languages(rows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each repository's language: :func:`language_of` all the ground truths of its rows."""
    truths: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        truths[r["repo"]] += r.get("gt") or []
    return {repo: language_of(ids) for repo, ids in truths.items()}


def _recorded(rows: list[dict[str, Any]], key: str) -> list[str]:
    """The distinct values of one setting record (``encoder_delta``, ``cross_encoder``:
    digests) over the predictions, when any was set."""
    return sorted({str(d) for r in rows if (d := (r.get("settings") or {}).get(key))})


def summarise(
    rows: list[dict[str, Any]],
    instances: Sequence[Instance],
    cfg: BenchConfig,
    skipped: dict[str, str] | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    """Macro-averaged metrics per method and per (method, repository), the latest row of
    each (instance, method) pair counting; expansion means, timings and provenance."""
    wanted = {i.instance_id for i in instances}
    names = [m.name for m in cfg.methods]
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        if r["instance_id"] in wanted and r["method"] in names and r.get("metrics"):
            latest[(r["instance_id"], r["method"])] = r
    kept = list(latest.values())
    deltas, crosses = _recorded(kept, "encoder_delta"), _recorded(kept, "cross_encoder")
    rankers = _recorded(kept, "ranker_file")
    model = cfg.settings.model or "all-MiniLM-L6-v2 (bundled)"
    if deltas:
        model += " + tuned delta " + ", ".join(deltas)
    if crosses:
        model += "; cross-encoder " + ", ".join(crosses)
    overall: dict[str, Any] = {}
    per_repo: dict[str, dict[str, Any]] = {}
    per_language: dict[str, dict[str, Any]] = {}
    language = repo_languages(kept)
    for name in names:
        mine = [r for r in kept if r["method"] == name]
        overall[name] = _group(mine)
        repos: dict[str, list[dict[str, Any]]] = defaultdict(list)
        languages: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in mine:
            repos[r["repo"]].append(r)
            languages[language[r["repo"]]].append(r)
        per_repo[name] = {repo: _group(rs) for repo, rs in sorted(repos.items())}
        per_language[name] = {lang: _group(rs) for lang, rs in sorted(languages.items())}
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine_description(),
        "command": cfg.command,
        "code": code or code_version(),
        "codes_in_predictions": sorted({str(r.get("code")) for r in kept}),
        "k": cfg.settings.k,
        "model": model,
        **({"encoder_deltas": deltas} if deltas else {}),
        **({"cross_encoders": crosses} if crosses else {}),
        **({"ranker_files": rankers} if rankers else {}),
        "instances": len(instances),
        "scored": len({r["instance_id"] for r in kept}),
        "skipped": skipped or {},
        "metrics": metric_names(),
        "methods": overall,
        "per_repo": per_repo,
        "per_language": per_language,
        "timings": _timing_summary(kept),
    }
