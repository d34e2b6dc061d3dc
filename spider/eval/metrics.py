"""Recall@K, Acc@K and MRR@K per instance, macro-averaged over instances (as in SpIDER).

Ids are compared after :func:`spider.ids.normalise_id` (``#n`` duplicate suffixes
stripped), and a ranked list keeps only the first occurrence of each normalised id, so a
property setter ranked after its getter does not count twice. Mapping nested functions to
the dataset's convention needs the graph and happens before scoring (``spider.ids``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from statistics import fmean

import numpy as np

from spider.ids import normalise_id

RECALL_KS: tuple[int, ...] = (1, 3, 5, 10, 20)  # the paper's recall cut-offs
ACC_KS: tuple[int, ...] = (5, 10, 20)  # "every edited function found" cut-offs
MRR_K: int = 20  # MRR is reported at the budget K
DEFAULT_KS: tuple[int, ...] = RECALL_KS


def dedupe(ranked: Iterable[str]) -> list[str]:
    """Normalised ids in rank order, first occurrence kept."""
    return list(dict.fromkeys(normalise_id(r) for r in ranked))


def recall_at_k(ranked: Sequence[str], truth: set[str], k: int) -> float:
    """|truth ∩ top-k| / |truth| (``ranked`` and ``truth`` already normalised)."""
    if not truth:
        raise ValueError("recall is undefined without ground truth")
    return len(truth.intersection(ranked[:k])) / len(truth)


def acc_at_k(ranked: Sequence[str], truth: set[str], k: int) -> float:
    """1.0 when every ground-truth id is in the top k, else 0.0."""
    if not truth:
        raise ValueError("accuracy is undefined without ground truth")
    return 1.0 if truth.issubset(ranked[:k]) else 0.0


def reciprocal_rank(hits: Sequence[bool] | np.ndarray, k: int = MRR_K) -> float:
    """1 / rank of the first hit among the first ``k`` of a ranked list of hit flags
    (labels in rank order); 0.0 when none is there. The one MRR of the engine: the
    benchmark's (:func:`mrr_at_k`) and every fit's."""
    first = np.flatnonzero(np.asarray(hits[:k], dtype=bool))
    return 1.0 / (int(first[0]) + 1) if len(first) else 0.0


def mrr_at_k(ranked: Sequence[str], truth: set[str], k: int) -> float:
    """1 / rank of the first ground-truth id in the top k; 0.0 when none is there."""
    return reciprocal_rank([rid in truth for rid in ranked[:k]], k)


def metric_names(
    recall_ks: Sequence[int] = RECALL_KS, acc_ks: Sequence[int] = ACC_KS, mrr_k: int = MRR_K
) -> list[str]:
    """Column names in print order: ``R@1 ... A@5 ... MRR@20``."""
    return [f"R@{k}" for k in recall_ks] + [f"A@{k}" for k in acc_ks] + [f"MRR@{mrr_k}"]


def score_instance(
    ranked: Iterable[str],
    truth: Iterable[str],
    *,
    recall_ks: Sequence[int] = RECALL_KS,
    acc_ks: Sequence[int] = ACC_KS,
    mrr_k: int = MRR_K,
) -> dict[str, float]:
    """Every metric for one instance; ids are normalised and the ranking deduplicated here."""
    r = dedupe(ranked)
    t = {normalise_id(x) for x in truth}
    out: dict[str, float] = {}
    for k in recall_ks:
        out[f"R@{k}"] = recall_at_k(r, t, k)
    for k in acc_ks:
        out[f"A@{k}"] = acc_at_k(r, t, k)
    out[f"MRR@{mrr_k}"] = mrr_at_k(r, t, mrr_k)
    return out


def aggregate(per_instance: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Macro average of each metric over instances (``n`` = number of instances)."""
    rows = list(per_instance)
    if not rows:
        return {"n": 0}
    keys = [k for k in rows[0] if k != "n"]
    out: dict[str, float] = {"n": len(rows)}
    for k in keys:
        out[k] = fmean(float(r[k]) for r in rows)
    return out
