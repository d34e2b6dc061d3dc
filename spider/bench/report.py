"""Markdown tables of a benchmark summary, for the README and issue notes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MARKDOWN_COLUMNS = ("R@1", "R@5", "R@10", "R@20", "A@20", "MRR@20")  # the README's columns


def markdown_table(rows: dict[str, dict[str, float]], first: str = "method") -> str:
    """A Markdown table of metric rows (name -> metrics including ``n``)."""
    lines = [
        f"| {first} | n | " + " | ".join(MARKDOWN_COLUMNS) + " |",
        "|---|---:|" + "---:|" * len(MARKDOWN_COLUMNS),
    ]
    for name, m in rows.items():
        cells = " | ".join(f"{float(m.get(c, 0.0)):.3f}" for c in MARKDOWN_COLUMNS)
        lines.append(f"| {name} | {int(m.get('n', 0))} | {cells} |")
    return "\n".join(lines)


def subset_rows(
    summary: dict[str, Any], only: Sequence[str] = (), skip: Sequence[str] = ()
) -> dict[str, dict[str, float]]:
    """Per-method macro averages over the instances of some repositories only: the
    per-repository means weighted by their instance counts (exactly the instance average)."""
    rows: dict[str, dict[str, float]] = {}
    for name, repos in summary.get("per_repo", {}).items():
        kept = [m for r, m in repos.items() if (not only or r in only) and r not in skip]
        n = sum(int(m.get("n", 0)) for m in kept)
        if not n:
            continue
        keys = [k for k in kept[0] if k != "n"]
        rows[name] = {"n": n}
        rows[name].update(
            {k: sum(float(m[k]) * int(m["n"]) for m in kept) / n for k in keys}
        )
    return rows


def markdown_report(
    summary: dict[str, Any],
    method: str | None = None,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
) -> str:
    """The per-method table (over the chosen repositories), then (for ``method``) its
    per-repository table, then provenance."""
    subset = bool(only or skip)
    parts = [markdown_table(subset_rows(summary, only, skip) if subset else summary["methods"])]
    if method and method in summary.get("per_repo", {}):
        parts.append(markdown_table(summary["per_repo"][method], first=f"{method}: repository"))
    parts.append(
        f"`{summary.get('command', '')}` · {summary.get('date', '')} · {summary.get('machine', '')}"
    )
    return "\n\n".join(parts)
