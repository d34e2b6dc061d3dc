"""``spider-bot report``: how the app did on its own merged fixes, per repository.

A table (issues answered, fixes scored, the share whose fix changed a listed function,
the median rank of the first one, mean Recall@K), an HTML file with two plots (hit rate
over time, histogram of the first hit's rank; matplotlib, the ``report`` extra, drawn as
inline SVG so the file stands alone), and an export of the scored fixes in the
``shared/bench`` dataset shape so ``spider bench --dataset`` can score any method on a
repository's own production history.
"""

from __future__ import annotations

import io
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from worker.store import CommentRecord, ScoredFix

HIST_MAX_RANK = 20  # ranks above this share the last bar
WEEK_S = 7 * 24 * 3600


@dataclass(frozen=True)
class RepoRow:
    """One repository's line of the table."""

    repo: str
    answered: int
    scored: int
    with_function: int  # fixes that changed at least one function
    hits: int
    median_rank: float | None
    recall: float | None

    @property
    def hit_share(self) -> float | None:
        """Share of function-changing fixes that changed a listed function."""
        return self.hits / self.with_function if self.with_function else None

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"repo": self.repo, "issues_answered": self.answered, "fixes_scored": self.scored,
                "fixes_changing_functions": self.with_function, "hits": self.hits,
                "hit_share": self.hit_share, "median_first_rank": self.median_rank,
                "recall_at_k": self.recall}


def aware(when: datetime) -> datetime:
    """A stored time as UTC-aware (SQLite gives naive times back)."""
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def rows(comments: Sequence[CommentRecord], fixes: Sequence[ScoredFix]) -> list[RepoRow]:
    """The table, one row per repository (sorted), plus ``all`` when there are several."""
    repos = sorted({c.repo for c in comments} | {f.repo for f in fixes})
    out = [_row(r, [c for c in comments if c.repo == r], [f for f in fixes if f.repo == r])
           for r in repos]
    if len(out) > 1:
        out.append(_row("all", list(comments), list(fixes)))
    return out


def _row(repo: str, comments: Sequence[CommentRecord], fixes: Sequence[ScoredFix]) -> RepoRow:
    changing = [f for f in fixes if f.outcome != "no_function_changed"]
    ranks = [f.first_rank for f in changing if f.first_rank is not None]
    recalls = [f.recall_at_k for f in changing if f.recall_at_k is not None]
    answered = len({(c.repo, c.issue_number) for c in comments}
                   | {(f.repo, f.issue_number) for f in fixes})
    return RepoRow(repo, answered, len(fixes), len(changing), len(ranks),
                   float(statistics.median(ranks)) if ranks else None,
                   sum(recalls) / len(recalls) if recalls else None)


def _fmt(value: float | None, pct: bool = False) -> str:
    if value is None:
        return "–"
    return f"{100 * value:.0f}%" if pct else (f"{value:g}" if value == int(value) else f"{value:.2f}")


TABLE_HEAD = ("repository", "issues answered", "fixes scored", "changed a function",
              "listed one", "median rank of first hit", "Recall@K")


def table_markdown(table: Sequence[RepoRow]) -> str:
    """The table as Markdown (for the terminal and the README)."""
    lines = ["| " + " | ".join(TABLE_HEAD) + " |", "|" + "---|" * len(TABLE_HEAD)]
    lines.extend("| " + " | ".join(_table_cells(r)) + " |" for r in table)
    return "\n".join(lines) + "\n"


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.find("<svg"):]


def plots(fixes: Sequence[ScoredFix]) -> list[tuple[str, str]]:
    """(title, inline SVG) of the hit rate over time and the first-hit rank histogram."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    matplotlib.rcParams["svg.hashsalt"] = "spider-bot"  # the same data draws the same file
    matplotlib.rcParams["svg.fonttype"] = "none"  # labels as text: smaller, searchable
    changing = sorted((f for f in fixes if f.outcome != "no_function_changed"),
                      key=lambda f: aware(f.scored_at))
    out: list[tuple[str, str]] = []
    fig, ax = plt.subplots(figsize=(7, 3.2))
    if changing:
        xs, ys, hits = [], [], 0
        for i, f in enumerate(changing, start=1):
            hits += f.first_rank is not None
            xs.append(aware(f.scored_at))
            ys.append(hits / i)
        ax.plot(xs, ys, marker="o", drawstyle="steps-post")
        fig.autofmt_xdate()
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of fixes with a listed function")
    ax.set_title("Hit rate over time (cumulative)")
    out.append(("Hit rate over time", _svg(fig)))
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 3.2))
    ranks = [min(f.first_rank, HIST_MAX_RANK) for f in changing if f.first_rank is not None]
    misses = sum(1 for f in changing if f.first_rank is None)
    bins = list(range(1, HIST_MAX_RANK + 2))
    ax.hist(ranks, bins=bins, align="left", rwidth=0.8, label="first listed function changed")
    if misses:
        ax.bar([HIST_MAX_RANK + 1.5], [misses], color="grey", label="none listed")
    ax.set_xlabel("rank of the first listed function the fix changed")
    ax.set_ylabel("fixes")
    # ranks and counts are whole numbers: no tick at 0.5 fixes or rank 2.5
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Rank of the first hit")
    ax.legend(loc="upper right")
    out.append(("Rank of the first hit", _svg(fig)))
    plt.close(fig)
    return out


REPORT_TEMPLATE = "report.html.j2"
GITHUB = "https://github.com"  # issue and pull request links (the store keeps owner/name)


def issue_url(repo: str, number: int) -> str:
    """The issue's page on GitHub."""
    return f"{GITHUB}/{repo}/issues/{number}"


def pull_url(repo: str, number: int) -> str:
    """The pull request's page on GitHub."""
    return f"{GITHUB}/{repo}/pull/{number}"


def _table_cells(r: RepoRow) -> tuple[str, ...]:
    return (r.repo, str(r.answered), str(r.scored), str(r.with_function),
            f"{r.hits} ({_fmt(r.hit_share, pct=True)})", _fmt(r.median_rank), _fmt(r.recall))


def render_html(table: Sequence[RepoRow], fixes: Sequence[ScoredFix],
                generated: datetime | None = None, template_dir: Path | None = None) -> str:
    """The report page from ``templates/report.html.j2`` (autoescaped: repository names,
    function names and outcomes are text; only the plots' SVG, drawn here, is markup).
    ``template_dir``: ``SPIDER_TEMPLATE_DIR``, whose ``report.html.j2`` overrides it."""
    import jinja2
    from markupsafe import Markup

    from spider.comment.render import template_loader

    try:
        figures = [{"title": t, "svg": Markup(svg)} for t, svg in plots(fixes)]
    except ImportError:
        figures = []
    env = jinja2.Environment(loader=template_loader(template_dir), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    fix_rows = [{
        "repo": f.repo, "issue": f.issue_number, "issue_url": issue_url(f.repo, f.issue_number),
        "pull": f.pull_number, "pull_url": pull_url(f.repo, f.pull_number), "outcome": f.outcome,
        "first_rank": f.first_rank if f.first_rank is not None else "–",
        "recall": _fmt(f.recall_at_k), "k": f.k, "changed": ", ".join(f.changed_functions[:5]),
        "scored": aware(f.scored_at).strftime("%Y-%m-%d %H:%M"),
    } for f in fixes]
    when = (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    return env.get_template(REPORT_TEMPLATE).render(
        generated=when, head=TABLE_HEAD, table=[_table_cells(r) for r in table],
        figures=figures, fixes=fix_rows)


def write_html(path: Path, table: Sequence[RepoRow], fixes: Sequence[ScoredFix],
               generated: datetime | None = None, template_dir: Path | None = None) -> None:
    """A self-contained HTML report: the table, the plots, the fixes (:func:`render_html`)."""
    path.write_text(render_html(table, fixes, generated, template_dir), encoding="utf-8")


def export_rows(fixes: Sequence[ScoredFix]) -> list[dict[str, Any]]:
    """Scored fixes that changed functions, as ``shared/bench`` dataset rows: the fix's
    patch and base commit, the issue as problem statement, the changed functions in the
    dataset's id convention as ``edit_functions``; what the app listed is kept aside."""
    from spider import normalise_id

    out = []
    for f in fixes:
        if not f.patch or not f.changed_functions:
            continue
        owner, name = f.repo.split("/", 1)
        out.append({
            "instance_id": f"{owner}__{name}-{f.issue_number}-pr{f.pull_number}",
            "repo": f.repo,
            "base_commit": f.base_commit,
            "problem_statement": f.problem_statement,
            "patch": f.patch,
            "edit_functions": sorted({normalise_id(c) for c in f.changed_functions}),
            "created_at": aware(f.scored_at).isoformat(),
            "spider_bot": {"issue": f.issue_number, "pull_request": f.pull_number,
                           "comment_commit": f.comment_commit, "k": f.k,
                           "listed": list(f.listed_ids), "first_rank": f.first_rank,
                           "recall_at_k": f.recall_at_k, "outcome": f.outcome},
        })
    return out


def write_export(path: Path, fixes: Sequence[ScoredFix]) -> int:
    """Write :func:`export_rows` as JSONL; returns how many rows."""
    data = export_rows(fixes)
    with path.open("w", encoding="utf-8") as fh:
        for row in data:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(data)
