"""Every rendering of a benchmark summary: console tables (rich) and Markdown (README).

Both forms draw the same grid (:func:`grid`): one row per method or repository, its ``n``,
the metric columns, then the expansion accounting (mean candidates admitted and offered
per instance). A value the summary lacks (an older summary, rows written before the
accounting existed) is shown as ``–``, never as zero.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from spider.bench.store import (
    ADMITTED_PER_ISSUE,
    EXPANSION_N,
    LANGUAGE_LABELS,
    OFFERED_PER_ISSUE,
)

MISSING = "–"  # a value the summary does not have
MARKDOWN_COLUMNS = ("R@1", "R@5", "R@10", "R@20", "A@20", "MRR@20")  # the README's columns
EXPANSION_COLUMNS = (ADMITTED_PER_ISSUE, OFFERED_PER_ISSUE)  # printed after the metrics
CONSOLE_WIDTH = 160  # every column of the method table fits
TIMINGS_WIDTH = 200  # one column per method

Rows = Mapping[str, Mapping[str, Any]]  # name -> aggregate (metrics, ``n``, expansion means)


def _metric(value: Any) -> str:
    return MISSING if value is None else f"{float(value):.3f}"


def _mean(value: Any) -> str:
    return MISSING if value is None else f"{float(value):.2f}"


def grid(rows: Rows, metrics: Sequence[str], first: str) -> tuple[list[str], list[list[str]]]:
    """Header and formatted cells of a table of aggregates (what both renderers draw)."""
    header = [first, "n", *metrics, *EXPANSION_COLUMNS]
    body = [
        [
            name,
            str(int(agg.get("n", 0))),
            *[_metric(agg.get(c)) for c in metrics],
            *[_mean(agg.get(c)) for c in EXPANSION_COLUMNS],
        ]
        for name, agg in rows.items()
    ]
    return header, body


# --- console -------------------------------------------------------------------------


def _console_table(title: str, rows: Rows, metrics: Sequence[str], first: str) -> Any:
    from rich.table import Table

    header, body = grid(rows, metrics, first)
    t = Table(title=title)
    for i, col in enumerate(header):
        t.add_column(col, justify="left" if i == 0 else "right")
    for cells in body:
        t.add_row(*cells)
    return t


def render_tables(summary: dict[str, Any], *, file: Any = None) -> None:
    """Print one table of methods and, per method, one table of repositories."""
    from rich.console import Console

    console = Console(file=file or sys.stdout, width=CONSOLE_WIDTH)
    cols = summary["metrics"]
    title = (
        f"{summary['scored']} of {summary['instances']} instances scored, "
        f"K={summary['k']}, {summary['model']}"
    )
    console.print(_console_table(title, summary["methods"], cols, "method"))
    for name, repos in summary["per_repo"].items():
        if repos:
            console.print(_console_table(f"{name} per repository", repos, cols, "repository"))
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

    def num(value: Any) -> str:
        return MISSING if value is None else f"{float(value):.2f}"

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
            num(v.get("cold_seconds")),
            num(v.get("warm_seconds")),
            str(v.get("embedded") or 0),
            num(v.get("embed_per_second")),
            *[num(q.get(m)) for m in methods],
        )
    Console(file=file or sys.stdout, width=TIMINGS_WIDTH).print(t)


# --- Markdown ------------------------------------------------------------------------


def markdown_table(rows: Rows, first: str = "method") -> str:
    """A Markdown table of aggregate rows (name -> metrics including ``n``)."""
    header, body = grid(rows, MARKDOWN_COLUMNS, first)
    lines = [
        "| " + " | ".join(header) + " |",
        "|---|" + "---:|" * (len(header) - 1),
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return "\n".join(lines)


def _weighted(kept: Sequence[Mapping[str, Any]], key: str, weight: str) -> float | None:
    """Mean of ``key`` over groups, each weighted by its ``weight`` count (None: no data)."""
    parts = [(float(m[key]), int(m.get(weight, 0))) for m in kept if m.get(key) is not None]
    total = sum(w for _, w in parts)
    return sum(v * w for v, w in parts) / total if total else None


def subset_rows(
    summary: dict[str, Any], only: Sequence[str] = (), skip: Sequence[str] = ()
) -> dict[str, dict[str, Any]]:
    """Per-method averages over the instances of some repositories only: the
    per-repository means weighted by their instance counts (exactly the instance average;
    the expansion means by the counts of rows that carry them)."""
    rows: dict[str, dict[str, Any]] = {}
    for name, repos in summary.get("per_repo", {}).items():
        kept = [m for r, m in repos.items() if (not only or r in only) and r not in skip]
        n = sum(int(m.get("n", 0)) for m in kept)
        if not n:
            continue
        skip_keys = {"n", EXPANSION_N, *EXPANSION_COLUMNS}
        keys = [k for k in kept[0] if k not in skip_keys]
        rows[name] = {"n": n}
        rows[name].update({k: _weighted(kept, k, "n") for k in keys})
        rows[name].update({k: _weighted(kept, k, EXPANSION_N) for k in EXPANSION_COLUMNS})
    return rows


def markdown_report(
    summary: dict[str, Any],
    method: str | None = None,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    language: str | None = None,
) -> str:
    """The per-method table (over the chosen repositories), then (for ``method``) its
    per-repository table, (for ``language``) that method's per-language table, then
    provenance."""
    subset = bool(only or skip)
    parts = [markdown_table(subset_rows(summary, only, skip) if subset else summary["methods"])]
    if method and method in summary.get("per_repo", {}):
        parts.append(markdown_table(summary["per_repo"][method], first=f"{method}: repository"))
    if language and language in summary.get("per_language", {}):
        by_language = {
            LANGUAGE_LABELS.get(lang, lang): row
            for lang, row in summary["per_language"][language].items()
        }
        parts.append(markdown_table(by_language, first=f"{language}: language"))
    parts.append(
        f"`{summary.get('command', '')}` · {summary.get('date', '')} · {summary.get('machine', '')}"
    )
    return "\n\n".join(parts)
