"""Combining rankings: ranks from scores and reciprocal-rank fusion."""

from __future__ import annotations

import numpy as np

from spider.errors import InvalidSetting

RRF_K = 60  # the constant of Cormack et al. (2009); damps the head of each list


def ranks_from_scores(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each item (1 = highest score); ties broken by index for stability."""
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


def reciprocal_rank_fusion(
    rankings: list[np.ndarray], weights: list[float] | None = None, k: int = RRF_K
) -> np.ndarray:
    """Fused score per item: sum of ``w / (k + rank)`` over the given rank arrays."""
    if not rankings:
        raise InvalidSetting("reciprocal_rank_fusion needs at least one ranking")
    weights = weights or [1.0] * len(rankings)
    fused = np.zeros(len(rankings[0]), dtype=np.float64)
    for ranks, w in zip(rankings, weights, strict=True):
        fused += w / (k + ranks.astype(np.float64))
    return fused
