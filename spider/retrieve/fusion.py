"""Combining rankings: ranks from scores, reciprocal-rank fusion, and the first stage's
fusion formula (:func:`fuse`, the one both ranking and its tuning use)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from spider.errors import InvalidSetting
from spider.retrieve.signals import signal_bonus

if TYPE_CHECKING:
    from spider.settings import EngineSettings

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


@dataclass(frozen=True)
class FusionWeights:
    """The first stage's fusion: the RRF constant and each ranker's weight (the
    ``fusion_*`` settings). A weight of 0 leaves its ranker out of the fusion."""

    k: int
    dense: float
    bm25: float
    file: float
    history: float
    signals: float

    @classmethod
    def from_settings(cls, settings: EngineSettings) -> FusionWeights:
        """The configured weights."""
        return cls(
            k=settings.fusion_k,
            dense=settings.fusion_dense,
            bm25=settings.fusion_bm25,
            file=settings.fusion_file,
            history=settings.fusion_history,
            signals=settings.fusion_signals,
        )

    @classmethod
    def from_mapping(cls, p: Mapping[str, float]) -> FusionWeights:
        """The weights named as the settings name them (``fusion_k``, ``fusion_dense``, …;
        one absent is 0: that ranker left out)."""
        return cls(
            k=int(p["fusion_k"]),
            dense=p.get("fusion_dense", 0.0),
            bm25=p.get("fusion_bm25", 0.0),
            file=p.get("fusion_file", 0.0),
            history=p.get("fusion_history", 0.0),
            signals=p.get("fusion_signals", 0.0),
        )


def fuse(
    ranks: Mapping[str, np.ndarray], weights: FusionWeights, signal: np.ndarray | None = None
) -> np.ndarray:
    """The first stage's fused score of every function: weighted RRF of the rankers in
    ``ranks`` (1-based ranks: ``bm25`` always, ``dense``, ``file`` — each function's file's
    rank — and ``history``, where 0 means no earlier message matched: it adds nothing, not
    a rank at the tail), plus the issue-signal bonus of ``signal`` (strength per function).
    The one formula: the first stage ranks by it and ``spider train fusion`` tunes it."""
    lists, w = [ranks["bm25"]], [weights.bm25]
    if "dense" in ranks:
        lists.append(ranks["dense"])
        w.append(weights.dense)
    if "file" in ranks and weights.file > 0:
        lists.append(ranks["file"])
        w.append(weights.file)
    if "history" in ranks and weights.history > 0:
        said = ranks["history"]
        lists.append(np.where(said > 0, said, np.inf))
        w.append(weights.history)
    fused = reciprocal_rank_fusion(lists, w, weights.k)
    if signal is not None and (signal > 0).any():
        fused = fused + signal_bonus(signal, weights.signals, weights.k)
    return fused
