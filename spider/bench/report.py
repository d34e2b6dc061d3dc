"""Markdown tables of a benchmark summary, for the README and issue notes."""

from __future__ import annotations

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


def markdown_report(summary: dict[str, Any], method: str | None = None) -> str:
    """The per-method table, then (for ``method``) its per-repository table, then provenance."""
    parts = [markdown_table(summary["methods"])]
    if method and method in summary.get("per_repo", {}):
        parts.append(markdown_table(summary["per_repo"][method], first=f"{method}: repository"))
    parts.append(
        f"`{summary.get('command', '')}` · {summary.get('date', '')} · {summary.get('machine', '')}"
    )
    return "\n\n".join(parts)
