"""Calibrate the head model: how likely is the first listed function to need the edit?

The head re-ranker (``spider.rank.rerank``) orders the top K by a logistic model fitted for
*order*, not for honest probabilities. This module fits Platt scaling (a logistic curve
over the head logit) on dev data by leave-one-repository-out cross-validation, reports
the reliability curve of the out-of-fold probabilities, and what a confidence bar would
do: the share of issues it silences and how many of those the list had right.

It reuses ``spider train head``'s collected features (the first stage's top items
and their labels per instance), scored with the shipped head weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from spider.learn.cv import CVReport, leave_one_repository_out
from spider.learn.model_file import Provenance, WeightsBody, write_model_file
from spider.learn.platt import fit_platt as platt
from spider.rank.calibration import Calibration
from spider.rank.rerank import CALIBRATION_KIND, RerankWeights, default_weights

BINS = 10  # reliability curve: equal-width probability bins
BARS = (0.05, 0.1, 0.15, 0.2, 0.3)  # confidence bars whose effect is reported


@dataclass(frozen=True)
class HeadRow:
    """One instance's head: logits in list order (best first) and whether each is edited."""

    instance_id: str
    repo: str
    logits: np.ndarray
    labels: np.ndarray


def head_rows(
    rows: Sequence[dict[str, Any]], k: int, weights: RerankWeights | None = None
) -> list[HeadRow]:
    """The re-ranked top ``k`` of each collected instance, under ``weights`` (default: shipped)."""
    weights = weights or default_weights()
    out: list[HeadRow] = []
    for r in rows:
        logits = weights.logits(r["x"][:k])
        order = np.argsort(-logits, kind="stable")
        out.append(
            HeadRow(
                str(r["instance_id"]),
                str(r["repo"]),
                logits[order],
                np.asarray(r["y"][:k])[order].astype(int),
            )
        )
    return out


def fit_platt(heads: Sequence[HeadRow]) -> Calibration:
    """Platt scaling of P(edited | head logit) over every head item of ``heads``
    (:func:`spider.learn.platt.fit_platt`: flat at a single class)."""
    x = np.concatenate([h.logits for h in heads])
    y = np.concatenate([h.labels for h in heads])
    return platt(x, y)


def reliability(p: np.ndarray, y: np.ndarray, bins: int = BINS) -> list[dict[str, float]]:
    """Per probability bin: items, mean predicted probability, observed share edited."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    out = []
    for b in range(bins):
        sel = which == b
        if sel.any():
            out.append(
                {
                    "bin": f"{edges[b]:.1f}-{edges[b + 1]:.1f}",
                    "n": int(sel.sum()),
                    "predicted": round(float(p[sel].mean()), 4),
                    "observed": round(float(y[sel].mean()), 4),
                }
            )
    return out


def _ece(p: np.ndarray, y: np.ndarray) -> float:
    curve = reliability(p, y)
    return float(sum(c["n"] * abs(c["predicted"] - c["observed"]) for c in curve) / max(len(p), 1))


def cross_validate(rows: Sequence[dict[str, Any]], k: int) -> CVReport[Calibration]:
    """Out-of-fold calibration by leave-one-repository-out: curves, errors and bar effects;
    the calibration fitted on every row is the report's ``chosen``."""
    heads = head_rows(rows, k)
    first_p, first_y, any_y, all_p, all_y = [], [], [], [], []
    for _held, train, test in leave_one_repository_out(heads, lambda h: h.repo):
        cal = fit_platt(train)
        for h in test:
            p = cal.probabilities(h.logits)
            first_p.append(float(p[0]))
            first_y.append(int(h.labels[0]))
            any_y.append(int(h.labels.any()))
            all_p.extend(p.tolist())
            all_y.extend(h.labels.tolist())
    p1, y1, ya = np.array(first_p), np.array(first_y), np.array(any_y)
    pa, yall = np.array(all_p), np.array(all_y)
    bars = []
    for bar in BARS:
        quiet = p1 < bar
        bars.append(
            {
                "bar": bar,
                "silenced": int(quiet.sum()),
                "silenced_share": round(float(quiet.mean()), 4),
                "silenced_first_right": int((quiet & (y1 == 1)).sum()),
                "silenced_any_right": int((quiet & (ya == 1)).sum()),
                "kept_first_right_share": round(float(y1[~quiet].mean()), 4)
                if (~quiet).any()
                else None,
            }
        )
    cal = fit_platt(heads)
    figures = {
        "instances": len(heads),
        "repositories": len({h.repo for h in heads}),
        "folds": "leave one repository out",
        "k": k,
        "first_item": {
            "right_share": round(float(y1.mean()), 4),
            "mean_predicted": round(float(p1.mean()), 4),
            "brier": round(float(((p1 - y1) ** 2).mean()), 4),
            "ece": round(_ece(p1, y1), 4),
            "reliability": reliability(p1, y1),
        },
        "all_items": {
            "items": len(pa),
            "brier": round(float(((pa - yall) ** 2).mean()), 4),
            "ece": round(_ece(pa, yall), 4),
            "reliability": reliability(pa, yall),
        },
        "bars": bars,
        "slope": round(cal.slope, 5),
        "intercept": round(cal.intercept, 5),
    }
    return CVReport(cal, len(heads), "leave one repository out", figures)


def describe(cv: dict[str, Any]) -> str:
    """The CV report in a few lines for the terminal."""
    f, a = cv["first_item"], cv["all_items"]
    lines = [
        f"{cv['instances']} instances, {cv['repositories']} repositories, K={cv['k']} "
        f"(out-of-fold, leave one repository out)",
        f"first item right {f['right_share']:.3f}, predicted {f['mean_predicted']:.3f}, "
        f"Brier {f['brier']:.4f}, ECE {f['ece']:.4f}; all items Brier {a['brier']:.4f}, "
        f"ECE {a['ece']:.4f}",
        "reliability of the first item (bin: n, predicted -> observed):",
    ]
    lines += [
        f"  {c['bin']}: {c['n']}, {c['predicted']:.3f} -> {c['observed']:.3f}"
        for c in f["reliability"]
    ]
    lines.append("bars (silenced share; of those: first item right, any of K right):")
    lines += [
        f"  p1 < {b['bar']:.2f}: {b['silenced_share']:.3f} ({b['silenced']}); "
        f"{b['silenced_first_right']}, {b['silenced_any_right']}"
        for b in cv["bars"]
    ]
    lines.append(f"fitted on all: slope {cv['slope']}, intercept {cv['intercept']}")
    return "\n".join(lines)


COMMENT = "Platt scaling of the head logit by `spider train calibration` on dev data; see README."


def write_calibration(cv: dict[str, Any], command: str, path: Path) -> None:
    """Write the calibration the engine ships (tied to the shipped head weights)."""
    body = WeightsBody(
        kind=CALIBRATION_KIND,
        sections={},
        scalars={"slope": cv["slope"], "intercept": cv["intercept"]},
    )
    provenance = Provenance(
        command=command,
        comment=COMMENT,
        cv={key: v for key, v in cv.items() if key not in ("slope", "intercept")},
        extra={"fingerprint": default_weights().fingerprint()},
    )
    write_model_file(path, body, provenance)


__all__ = [
    "HeadRow",
    "cross_validate",
    "describe",
    "fit_platt",
    "head_rows",
    "reliability",
    "write_calibration",
]
