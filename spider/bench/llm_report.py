"""What the LLM roles did in a benchmark run, from its predictions: quality per method,
the selector's admissions against what they evicted (η against τ), cost per issue, and the
reader's mixing weight swept over the verdicts the run recorded (no model call).

η is the share of admitted functions the fix edited; τ the share of the functions they
pushed out of the list (present in the run's ``no-llm`` list, absent after) that it did.
A swap pays only when η > τ. Every figure is over the instances all of the run's methods
scored.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spider.bench.store import repo_languages
from spider.eval.metrics import dedupe, score_instance
from spider.ids import normalise_id
from spider.llm.reader import mix_pointwise

BASELINE = "no-llm"  # the run's list without the LLM: what admissions evict from
METRICS = ("R@1", "R@5", "R@20", "MRR@20")
SWEEP = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)  # reader weights tried on recorded verdicts


@dataclass(frozen=True)
class MethodFigures:
    """One method's averages over the instances it scored, and its LLM cost."""

    method: str
    n: int
    metrics: dict[str, float]
    admitted: int
    admitted_right: int
    evicted: int
    evicted_right: int
    seconds_p50: float | None
    seconds_p90: float | None
    prompt_tokens_p50: float | None
    cached_share: float | None  # of prompt tokens, those the server's cache supplied
    failures: int  # issues whose LLM pass stopped early


def _pct(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def _scored(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The scored rows of the instances every method of the run scored, so that each
    method's averages are over the same issues (a resumed or partial run may differ)."""
    scored = [r for r in rows if r.get("metrics") and r.get("gt")]
    per_method: dict[str, set[str]] = defaultdict(set)
    for r in scored:
        per_method[r["method"]].add(r["instance_id"])
    common = set.intersection(*per_method.values()) if per_method else set()
    return [r for r in scored if r["instance_id"] in common]


def figures(rows: Sequence[Mapping[str, Any]]) -> list[MethodFigures]:
    """Per method: averages, admissions (η, τ against :data:`BASELINE`) and cost."""
    scored = _scored(rows)
    base = {r["instance_id"]: r for r in scored if r["method"] == BASELINE}
    by_method: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in scored:
        by_method[r["method"]].append(r)
    out = []
    for method, rs in by_method.items():
        adm = adm_ok = ev = ev_ok = 0
        for r in rs:
            gt = set(r["gt"])
            admitted = set(r.get("admitted_ids") or [])
            adm += len(admitted)
            adm_ok += len(admitted & gt)
            b = base.get(r["instance_id"])
            if b is not None and admitted:
                evicted = set(b["ranked"]) - set(r["ranked"])
                ev += len(evicted)
                ev_ok += len(evicted & gt)
        usage = [r["llm"]["usage"] for r in rs if r.get("llm")]
        seconds = [float(u.get("seconds", 0.0)) for u in usage]
        prompt = [float(u.get("prompt_tokens", 0)) for u in usage]
        cached = sum(float(u.get("cached_tokens", 0)) for u in usage)
        out.append(MethodFigures(
            method=method, n=len(rs),
            metrics={m: statistics.fmean(r["metrics"][m] for r in rs) for m in METRICS},
            admitted=adm, admitted_right=adm_ok, evicted=ev, evicted_right=ev_ok,
            seconds_p50=_pct(seconds, 0.5), seconds_p90=_pct(seconds, 0.9),
            prompt_tokens_p50=_pct(prompt, 0.5),
            cached_share=(cached / sum(prompt)) if prompt and sum(prompt) else None,
            failures=sum(1 for r in rs if r.get("llm") and r["llm"].get("failure")),
        ))
    return sorted(out, key=lambda f: f.method)


def sweep(rows: Sequence[Mapping[str, Any]], method: str = "llm-read",
          weights: Sequence[float] = SWEEP) -> dict[float, dict[str, float]]:
    """The reader's metrics at each weight, re-mixing the recorded verdicts of ``method``
    over the :data:`BASELINE` list of the same instance: its head that holds the read
    functions is re-sorted, the rest keeps its place. An estimate: the run reads the list
    before the tidy pass (which folds and pins named functions), this the list after it,
    so the ``method`` row itself is the figure at the weight it ran with. A reading deeper
    than the recorded list (30 read, 20 recorded) puts the read functions the list does not
    hold after it, in the order they were read (the ranker's), so that they can rise into it."""
    scored = _scored(rows)
    base = {r["instance_id"]: r for r in scored if r["method"] == BASELINE}
    reads = [r for r in scored if r["method"] == method and r.get("llm")]
    out: dict[float, dict[str, float]] = {}
    for w in weights:
        per: list[dict[str, float]] = []
        for r in reads:
            b = base.get(r["instance_id"])
            if b is None:
                continue
            verdicts = r["llm"].get("verdicts") or {}
            # only the head it read is re-sorted, the rest keeps its place (as
            # spider.localize.read_head does): a "no" never sinks a function below one unread
            ranked_ids = b["ranked_ids"]
            depth = sum(1 for i in ranked_ids[: len(verdicts)] if i in verdicts)
            head = list(ranked_ids[:depth])
            if depth == len(ranked_ids):  # the whole recorded list was read, and maybe more
                listed = set(head)
                head += [i for i in verdicts if i not in listed]
            order = mix_pointwise(head, verdicts, w) + list(ranked_ids[depth:])
            # the dataset's id of each listed function (rows before it was recorded: the
            # string-level normalisation, which misses the dataset's nesting rule)
            mapped = dict(zip(b["ranked_ids"], b.get("dataset_ids") or [], strict=False))
            ranked = dedupe(mapped.get(i) or normalise_id(i) for i in order)
            per.append(score_instance(ranked, r["gt"]))
        if per:
            out[w] = {m: statistics.fmean(p[m] for p in per) for m in METRICS}
    return out


def reading_methods(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The methods of a run whose LLM did nothing but read (``llm-read`` at any depth or
    weight), sorted by name: their verdicts are all of the read head. (A selector's also
    judge neighbours outside the list, so those runs are not swept.)"""
    return sorted({r["method"] for r in rows
                   if list((r.get("llm") or {}).get("roles") or ()) == ["read"]})


def _table(found: Sequence[MethodFigures]) -> list[str]:
    lines = [
        "| method | n | R@1 | R@5 | R@20 | MRR@20 | admitted (right) | evicted (right) | η | τ "
        "| s/issue p50 | p90 | prompt tokens p50 | cached | stopped early |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in found:
        eta = m.admitted_right / m.admitted if m.admitted else None
        tau = m.evicted_right / m.evicted if m.evicted else None
        lines.append(
            f"| `{m.method}` | {m.n} | " + " | ".join(_f(m.metrics[k]) for k in METRICS)
            + f" | {m.admitted} ({m.admitted_right}) | {m.evicted} ({m.evicted_right}) "
            f"| {_f(eta)} | {_f(tau)} | {_f(m.seconds_p50, '.1f')} | {_f(m.seconds_p90, '.1f')} "
            f"| {_f(m.prompt_tokens_p50, '.0f')} | {_f(m.cached_share, '.0%')} | {m.failures} |"
        )
    return lines


def _f(v: float | None, fmt: str = ".3f") -> str:
    return "–" if v is None else format(v, fmt)


def markdown(rows: Sequence[Mapping[str, Any]], *, methods: Sequence[str] | None = None,
             per_language: bool = False) -> str:
    """The figures and the sweep as Markdown tables. ``methods``: only these (every figure
    is over the instances all of them scored, so a run whose later issues ran fewer
    methods is read whole for those); ``per_language``: the figures again per language."""
    if methods:
        rows = [r for r in rows if r["method"] in methods]
    lines = _table(figures(rows))
    for method in reading_methods(rows):
        sw = sweep(rows, method)
        if not sw:
            continue
        lines += ["", f"| `{method}`: reader weight | " + " | ".join(METRICS) + " |",
                  "|---:|" + "---:|" * len(METRICS)]
        for w, ms in sw.items():
            lines.append(f"| {w:g} | " + " | ".join(_f(ms[k]) for k in METRICS) + " |")
    if per_language:
        language = repo_languages(_scored(rows))
        groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for r in rows:
            if r["repo"] in language:
                groups[language[r["repo"]]].append(r)
        for name in sorted(groups):
            lines += ["", f"{name}:", "", *_table(figures(groups[name]))]
    return "\n".join(lines)
