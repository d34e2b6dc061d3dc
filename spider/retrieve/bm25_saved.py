"""A BM25 index that bm25s saved, read and scored with numpy alone.

Importing bm25s imports scipy (a tenth of a second or more before a query can start);
a warm query only reads the index bm25s wrote and sums its precomputed per-document
scores of the query's tokens. This reads that eager index (the arrays memory-mapped) and
sums them in bm25s' own order (token by token, each document's float32 score added in
turn), so the scores are bm25s' to the bit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from spider.errors import IndexFormatError

# bm25s variants whose scores are the stored ones alone; bm25l and bm25+ add a
# non-occurrence term per query token, which only bm25s itself applies
PLAIN_METHODS = frozenset({"lucene", "robertson", "atire"})
ARRAYS = ("data", "indices", "indptr")


class SavedBM25:
    """The parts of ``bm25s.BM25`` that :class:`spider.retrieve.bm25.LexicalIndex` reads:
    ``scores`` (the CSC arrays and ``num_docs``), ``vocab_dict`` and ``get_scores``."""

    def __init__(self, scores: dict[str, Any], vocab: dict[str, int], dtype: str) -> None:
        self.scores = scores
        self.vocab_dict = vocab
        self.dtype = np.dtype(dtype)

    @classmethod
    def load(cls, folder: Path) -> SavedBM25 | None:
        """The index in ``folder``; None when its method needs bm25s to score.
        IndexFormatError when a file is missing or unreadable."""
        try:
            params = json.loads((folder / "params.index.json").read_text())
            if params.get("method") not in PLAIN_METHODS:
                return None
            vocab = json.loads((folder / "vocab.index.json").read_text())
            scores: dict[str, Any] = {
                name: np.load(folder / f"{name}.csc.index.npy", mmap_mode="r",
                              allow_pickle=False)
                for name in ARRAYS
            }
            scores["num_docs"] = int(params["num_docs"])
            dtype = str(params.get("dtype", "float32"))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise IndexFormatError(
                f"cannot read BM25 index {folder}: {exc}; delete it to rebuild"
            ) from exc
        return cls(scores, {str(k): int(v) for k, v in vocab.items()}, dtype)

    def get_scores(self, tokens: list[str]) -> np.ndarray:
        """Every document's BM25 score for ``tokens`` (unknown ones add nothing)."""
        ids = [self.vocab_dict[t] for t in tokens if t in self.vocab_dict]
        data, indices, indptr = (self.scores[name] for name in ARRAYS)
        scores = np.zeros(self.scores["num_docs"], dtype=self.dtype)
        if not ids:
            return scores
        spans = [(int(indptr[i]), int(indptr[i + 1])) for i in ids]
        np.add.at(
            scores,
            np.concatenate([indices[a:b] for a, b in spans]),
            np.concatenate([data[a:b] for a, b in spans]),
        )
        return scores
