"""The numpy reader of saved BM25 indexes scores exactly as bm25s does, without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import bm25s
import numpy as np

from spider.retrieve.bm25 import LexicalIndex
from spider.retrieve.bm25_saved import SavedBM25
from spider.retrieve.tokenize import code_tokens

DOCS = [
    "def parse_header(line):\n    name, value = line.split(':', 1)\n    return name, value",
    "class Session:\n    def send(self, request):\n        return self.adapter.send(request)",
    "def read_headers(stream):\n    return [parse_header(l) for l in stream]",
    "def iter_content(self, chunk_size=1, decode_unicode=False):\n    yield from chunks",
    "",
] + [f"def helper_{i}(x):\n    return x * {i} + parse_header(x)" for i in range(40)]
QUERIES = [
    "parse_header drops the value after a second colon",
    "Session.send ignores the adapter",
    "iter_content(decode_unicode=True) yields bytes",
    "nothing here matches zzz",
    "header header header parse",
]


def test_saved_scores_are_bm25s_scores_to_the_bit(tmp_path: Path) -> None:
    built = LexicalIndex(DOCS)
    folder = tmp_path / "idx"
    built.save(folder)
    reference = bm25s.BM25.load(str(folder), show_progress=False)
    saved = SavedBM25.load(folder)
    assert saved is not None
    for q in QUERIES:
        tokens = code_tokens(q)
        known = [t for t in tokens if t in reference.vocab_dict]
        expected = reference.get_scores(known) if known else np.zeros(len(DOCS), np.float32)
        assert np.array_equal(saved.get_scores(tokens), expected)
        assert np.array_equal(LexicalIndex.load(folder).scores(q), built.scores(q))


def test_loading_a_saved_index_does_not_import_bm25s(tmp_path: Path) -> None:
    folder = tmp_path / "idx"
    LexicalIndex(DOCS).save(folder)
    code = (
        "import sys; from pathlib import Path; from spider.retrieve.bm25 import LexicalIndex; "
        f"i = LexicalIndex.load(Path({str(folder)!r})); i.scores('parse_header'); "
        "print('bm25s' in sys.modules, 'scipy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
