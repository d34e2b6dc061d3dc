"""The cold path: dense scores for a pool of candidates only, not for the whole index.

On a first visit to a big repository, embedding every function takes minutes; BM25,
file-level BM25 and the issue's signals cost seconds. ``pooled_dense_scores`` embeds only
the best few hundred functions of that cheap ranking and scores the rest below them, so a
first ranking is ready at once and says it came from a partial index
(``spider.models.PartialIndex``). The training-corpus builder uses the same function:
embed only pooled candidates.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from spider.retrieve.dense import Encoder
from spider.retrieve.query import best_cosine

UNEMBEDDED_MARGIN = 1e-3  # functions outside the pool score this far below the pool's worst


class PoolIndex(Protocol):
    """What the cold path reads from an index (``spider.index.Index`` provides it)."""

    @property
    def function_ids(self) -> list[str]: ...

    def encoder(self) -> Encoder: ...

    def vectors_of(self, rows: np.ndarray) -> np.ndarray: ...


def pooled_dense_scores(index: PoolIndex, queries: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """Best cosine of the query vectors (one per row) with each function of ``pool``
    (embedded now if need be); every other function ties just below the pool's lowest
    score, so dense ranks the pool first."""
    n = len(index.function_ids)
    pool = np.asarray(pool, dtype=np.int64)
    if n == 0 or len(pool) == 0:
        return np.zeros(n, dtype=np.float32)
    pooled = best_cosine(index.vectors_of(pool), queries)
    scores = np.full(n, float(pooled.min()) - UNEMBEDDED_MARGIN, dtype=np.float32)
    scores[pool] = pooled
    return scores

