"""What the rank step of one query hands on to expansion and explanation (``Ranked``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from spider.retrieve.first_stage import FirstStage


@dataclass(frozen=True)
class Ranked:
    """What the rank step hands on: the (re-)ranked first stage, its top ``pool`` as ids
    (after the LLM reader, when it ran) with their positions, scores and shown ranks."""

    fs: FirstStage
    head: np.ndarray  # function indices of the top max(pool, K), best first
    ranked: list[str]  # their ids, in the order expansion reads them
    pos: dict[str, int]  # id -> function index
    score_of: dict[str, float]  # id -> first-stage score
    shown: dict[str, int]  # id -> 1-based rank as ranked
    raised: dict[str, int] = field(default_factory=dict)  # id -> rank the reader gave it
    read: int = 0  # how many items the reader read


__all__ = ["Ranked"]
