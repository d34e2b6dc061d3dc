"""Lexical ranking with BM25 (bm25s) over code-aware tokens."""

from __future__ import annotations

import logging

import bm25s
import numpy as np

from spider.retrieve.tokenize import code_tokens

log = logging.getLogger(__name__)
logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every index build at DEBUG


class LexicalIndex:
    """A BM25 index over one text per document."""

    def __init__(self, documents: list[str]) -> None:
        self.size = len(documents)
        self._bm25 = bm25s.BM25()
        corpus = [code_tokens(d) or ["<empty>"] for d in documents]
        if corpus:
            self._bm25.index(corpus, show_progress=False)
        self._vocab = set(getattr(self._bm25, "vocab_dict", {}) or {})

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (zeros when nothing matches)."""
        if self.size == 0:
            return np.zeros(0, dtype=np.float32)
        tokens = [t for t in code_tokens(query) if t in self._vocab]
        if not tokens:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._bm25.get_scores(tokens), dtype=np.float32)
