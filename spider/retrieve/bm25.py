"""Lexical ranking with BM25 (bm25s) over code-aware tokens.

bm25s (and scipy under it) is imported only to build an index; a saved one is read and
scored with numpy (:mod:`spider.retrieve.bm25_saved`), the same scores without the import.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from spider.errors import IndexFormatError
from spider.retrieve.bm25_saved import SavedBM25
from spider.retrieve.signals import code_written_names, plain_common_word
from spider.retrieve.tokenize import code_tokens, is_code_shaped, word_keys

log = logging.getLogger(__name__)
logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs every index build at DEBUG


COMMON_SHARE = 5  # a word in more than 1/5 of the documents is too common to explain a hit


class LexicalIndex:
    """A BM25 index over one text per document."""

    def __init__(self, documents: list[str]) -> None:
        self._build([code_tokens(d) for d in documents])

    @classmethod
    def from_tokens(cls, corpus: list[list[str]]) -> LexicalIndex:
        """An index over documents already tokenized with ``code_tokens``."""
        index = cls.__new__(cls)
        index._build(corpus)
        return index

    def _build(self, corpus: list[list[str]]) -> None:
        import bm25s  # scipy under it: only building an index needs them

        self.size = len(corpus)
        self._bm25: Any = bm25s.BM25()
        if corpus:
            self._bm25.index([doc or ["<empty>"] for doc in corpus], show_progress=False)
        self._vocabulary()

    def _vocabulary(self) -> None:
        self._ids: dict[str, int] = dict(getattr(self._bm25, "vocab_dict", {}) or {})
        self._vocab = set(self._ids)

    def save(self, folder: Path) -> None:
        """Write the index to ``folder`` in bm25s' own format, through a temporary folder
        renamed into place: two writers of one commit never mix files, the first one wins."""
        if self.size == 0:
            return  # nothing to keep: an empty index is built in no time
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=folder.name + ".", suffix=".tmp"))
        try:
            self._bm25.save(str(tmp), show_progress=False)
            tmp.rename(folder)
        except OSError:  # another writer renamed its copy first, or the disk is full
            shutil.rmtree(tmp, ignore_errors=True)

    @classmethod
    def load(cls, folder: Path) -> LexicalIndex:
        """An index written by :meth:`save`."""
        bm: Any = SavedBM25.load(folder)  # IndexFormatError when unreadable
        if bm is not None:
            index = cls.__new__(cls)
            index._bm25, index.size = bm, int(bm.scores["num_docs"])
            index._vocabulary()
            return index
        try:
            import bm25s

            bm = bm25s.BM25.load(str(folder), show_progress=False)
            size = int(bm.scores["num_docs"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise IndexFormatError(
                f"cannot read BM25 index {folder}: {exc}; delete it to rebuild"
            ) from exc
        index = cls.__new__(cls)
        index._bm25, index.size = bm, size
        index._vocabulary()
        return index

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (zeros when nothing matches)."""
        if self.size == 0:
            return np.zeros(0, dtype=np.float32)
        tokens = [t for t in code_tokens(query) if t in self._vocab]
        if not tokens:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._bm25.get_scores(tokens), dtype=np.float32)

    def doc_frequency(self, token: str) -> int:
        """How many documents contain ``token`` (0 when it is not in the vocabulary)."""
        tid = self._ids.get(token)
        if tid is None or not self.size:
            return 0
        indptr = self._bm25.scores["indptr"]
        return int(indptr[tid + 1] - indptr[tid])

    def matched_terms(
        self, query: str, document: str, limit: int = 3, name: str = ""
    ) -> list[str]:
        """The query's words that ``document`` also contains, rarest in the index first.

        Words are returned as the query spells them (``iter_content``), once each. Only
        words a reader takes as evidence count: code-shaped ones (``decode_unicode``,
        ``iterContent``) and plain words that are part of the function's ``name``; a word
        found in many documents says nothing and is left out. A common English word
        (``run`` in "We run gin", ``URL``) counts only where the issue writes it as code.
        """
        doc_tokens = set(code_tokens(document))
        name_tokens = set(code_tokens(name))
        common = max(2, self.size // COMMON_SHARE)
        as_code = code_written_names(query)
        found: dict[str, tuple[int, str]] = {}
        for word, key in word_keys(query):
            if plain_common_word(word) and key not in as_code:
                continue
            if not (is_code_shaped(word) or key in name_tokens):
                continue
            if key in doc_tokens and key not in found:
                df = self.doc_frequency(key)
                if 0 < df <= common:
                    found[key] = (df, word)
        ranked = sorted(found.values(), key=lambda item: (item[0], item[1]))
        return [word for _, word in ranked[:limit]]
