"""First-stage pieces: tokenization, fusion, BM25, the embedding cache and the encoder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spider.retrieve.bm25 import LexicalIndex
from spider.retrieve.cache import EmbeddingCache, text_key
from spider.retrieve.dense import Encoder
from spider.retrieve.fusion import ranks_from_scores, reciprocal_rank_fusion
from spider.retrieve.tokenize import code_tokens, split_identifier


def test_split_identifier_handles_snake_camel_and_acronyms() -> None:
    assert split_identifier("getHTTPResponse_code") == ["get", "http", "response", "code"]
    assert split_identifier("__init__") == ["init"]
    assert split_identifier("parse2json") == ["parse", "2", "json"]


def test_code_tokens_keep_compound_and_drop_stopwords() -> None:
    toks = code_tokens("The Session.send_request() fails for getURL")
    assert "send_request" in toks and "send" in toks and "request" in toks
    assert "geturl" in toks and "url" in toks
    assert "the" not in toks and "for" not in toks


def test_ranks_from_scores_is_one_based_and_stable() -> None:
    assert ranks_from_scores(np.array([0.1, 0.9, 0.5, 0.9])).tolist() == [4, 1, 3, 2]


def test_reciprocal_rank_fusion_by_hand() -> None:
    a = np.array([1, 2, 3])
    b = np.array([3, 1, 2])
    fused = reciprocal_rank_fusion([a, b], k=60)
    assert fused[0] == pytest.approx(1 / 61 + 1 / 63)
    assert fused[1] == pytest.approx(1 / 62 + 1 / 61)
    assert int(np.argmax(fused)) == 1
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([])


def test_bm25_prefers_exact_identifier() -> None:
    docs = [
        "def send_request(self): return self.adapter.send()",
        "def parse_header(value): return value.split(';')",
        "def close(self): pass",
    ]
    idx = LexicalIndex(docs)
    s = idx.scores("header parsing breaks in parse_header")
    assert int(np.argmax(s)) == 1
    assert idx.scores("zzzz qqqq").tolist() == [0.0, 0.0, 0.0]


def test_embedding_cache_round_trip(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    v = np.arange(4, dtype=np.float32)
    cache.put_many({"k1": v})
    got = cache.get_many(["k1", "missing"])
    assert list(got) == ["k1"] and got["k1"].tolist() == v.tolist()
    assert len(cache) == 1
    assert text_key("m", "x") != text_key("m2", "x")
    cache.close()


def test_encoder_embeds_only_what_the_cache_lacks(tmp_path: Path) -> None:
    enc = Encoder("", 64, EmbeddingCache(tmp_path))
    vecs = enc.encode(["def add(a, b): return a + b", "class Stack: pass"])
    assert vecs.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    assert enc.embedded == 2
    again = Encoder("", 64, EmbeddingCache(tmp_path))
    vecs2 = again.encode(["class Stack: pass", "def add(a, b): return a + b", "def new(): pass"])
    assert again.embedded == 1 and again.cached == 2
    assert np.allclose(vecs2[1], vecs[0], atol=1e-6)
    q = again.encode_query("adding two numbers")
    assert float(vecs[0] @ q) > float(vecs[1] @ q)


def test_matched_terms_are_code_shaped_or_in_the_name_rarest_first() -> None:
    from spider.retrieve.bm25 import LexicalIndex

    docs = [
        "models.py\nResponse.iter_content\ndef iter_content(self, decode_unicode=False): content",
        "models.py\nResponse.text\ndef text(self): return str(self.content, 'utf-8')",
    ] + [f"x.py\nf{i}\ndef f{i}(): return content_{i}" for i in range(8)]
    lex = LexicalIndex(docs)
    issue = "iter_content(decode_unicode=True) returns bytes; r.text is fine, the content is odd"
    assert lex.matched_terms(issue, docs[0], name="Response.iter_content") == [
        "decode_unicode", "iter_content"]  # 'content' is a plain word, not in the name
    assert lex.matched_terms(issue, docs[1], name="Response.text") == ["text"]
    assert lex.matched_terms(issue, docs[2], name="f0") == []


def _gin_index() -> tuple[object, list[str]]:
    from spider.retrieve.bm25 import LexicalIndex

    docs = [
        "gin.go\nEngine.Run\nfunc (engine *Engine) Run(addr string) error { return serve(addr) }",
        "gin.go\nEngine.RunTLS\nfunc (engine *Engine) RunTLS(addr, cert string) error { tls }",
        "context.go\nContext.Redirect\nfunc (c *Context) Redirect(code int, location string) {}",
    ] + [f"x.go\nf{i}\nfunc f{i}() int {{ return {i} }}" for i in range(8)]
    return LexicalIndex(docs), docs


def test_matched_terms_skip_common_english_words_written_as_prose() -> None:
    lex, docs = _gin_index()
    issue = "We run gin behind a proxy and Redirect sends the wrong location"
    assert lex.matched_terms(issue, docs[0], name="Engine.Run") == []  # "run" is English here
    assert lex.matched_terms(issue, docs[2], name="Context.Redirect") == ["Redirect"]


def test_matched_terms_count_a_common_word_written_as_code() -> None:
    lex, docs = _gin_index()
    for issue in ("`Run` hangs behind a proxy", "engine.Run() hangs", "router.run hangs"):
        terms = lex.matched_terms(issue, docs[0], name="Engine.Run")
        assert {"Run", "run"} & set(terms), issue
