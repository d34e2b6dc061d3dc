"""The first stage computes what the learned stages read, once; its record is frozen; a
Localization's settings are a typed record whose JSON form is the dict it always was."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from dataclasses import FrozenInstanceError
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import spider.rank.features
from spider.errors import FeatureInputsMissing
from spider.index import Index
from spider.localize import locate, ranked_first_stage
from spider.models import BUNDLED_MODEL, Issue, PartialIndex
from spider.rank.features import head_features, ranker_features
from spider.retrieve.cold import pooled_dense_scores
from spider.retrieve.first_stage import first_stage
from spider.retrieve.fusion import ranks_from_scores
from spider.retrieve.query import best_cosine, query_vectors
from tests.spider.shop import shop_index

ISSUE = Issue(
    "Cart total is negative",
    "Calling `Cart.add_item` with -3 apples makes the total negative; see shop/cart.py.\n"
    'Traceback (most recent call last):\n  File "shop/cart.py", line 14, in total\n',
)
# modules whose functions embed, score or fuse: features must not call into them
RETRIEVERS = ("query", "cold", "fusion", "dense", "bm25", "adapter", "onnx_encoder", "cache")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    return shop_index(tmp_path_factory, k=3)


class CountingEncoder:
    """The index's encoder, recording every batch of queries it embeds."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.queries: list[list[str]] = []

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        self.queries.append(list(texts))
        return self.inner.encode_queries(texts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def counting(index: Index, monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingEncoder]:
    enc = CountingEncoder(index.encoder())
    monkeypatch.setattr(index, "encoder", lambda: enc)
    yield enc


def _settings(index: Index, **update: Any) -> Any:
    return index.settings.model_copy(update={"selector": "none", **update})


@pytest.mark.parametrize("ranker", ["pool", "head"])
def test_the_title_is_embedded_once_per_query(
    index: Index, counting: CountingEncoder, ranker: str
) -> None:
    locate(index, ISSUE, _settings(index, ranker=ranker))
    title = [q for q in counting.queries if q == [ISSUE.title]]
    assert len(title) == 1 and len(counting.queries) == 2  # the issue's windows, the title


def test_no_learned_stage_no_title_query(index: Index, counting: CountingEncoder) -> None:
    fs = ranked_first_stage(index, ISSUE, _settings(index, rerank=False))
    assert counting.queries == [[ISSUE.text]] and fs.inputs is None
    with pytest.raises(FeatureInputsMissing):
        head_features(index, fs, [0])


def test_features_read_the_first_stage_and_never_retrieve(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    for settings in (_settings(index), _settings(index, fusion_file=0.0),
                     _settings(index, cold_pool=3, cold_always=True)):
        fs = first_stage(index, ISSUE, settings)
        expected = (head_features(index, fs, list(fs.order)),
                    ranker_features(index, fs, list(fs.order)))
        with monkeypatch.context() as m:
            for name in ("encoder", "lexical", "file_lexical", "vectors", "vectors_of"):
                m.setattr(index, name, _forbidden(name))
            again = (head_features(index, fs, list(fs.order)),
                     ranker_features(index, fs, list(fs.order)))
        assert all(np.array_equal(a, b) for a, b in zip(expected, again, strict=True))


def _forbidden(name: str) -> Any:
    def call(*_: object, **__: object) -> None:
        raise AssertionError(f"features called index.{name}()")

    return call


def test_features_import_no_retriever() -> None:
    tree = ast.parse(Path(spider.rank.features.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m.rpartition(".")[2] in RETRIEVERS}


def test_the_title_ranks_are_the_title_alone(index: Index) -> None:
    warm = first_stage(index, ISSUE, index.settings)
    q = query_vectors(index.encoder(), [ISSUE.title], warm.query_adapter)
    assert warm.inputs is not None
    title = warm.inputs.title_ranks
    assert np.array_equal(title["dense"], ranks_from_scores(best_cosine(index.vectors(), q)))
    assert np.array_equal(title["bm25"], ranks_from_scores(index.lexical().scores(ISSUE.title)))
    assert warm.inputs.frames == 1
    cold = first_stage(index, ISSUE, index.settings.model_copy(
        update={"cold_pool": 3, "cold_always": True}))
    assert cold.inputs is not None and cold.pool is not None and len(cold.pool) == 3
    pooled = ranks_from_scores(pooled_dense_scores(index, q, cold.pool))
    assert np.array_equal(cold.inputs.title_ranks["dense"], pooled)
    untitled = first_stage(index, Issue("", ISSUE.body), index.settings)
    assert untitled.inputs is not None and not untitled.inputs.title_ranks
    bm25 = first_stage(index, ISSUE, index.settings.model_copy(update={"first_stage": "bm25"}))
    assert bm25.inputs is not None and set(bm25.inputs.title_ranks) == {"bm25"}
    assert bm25.inputs.file_scores is None  # only the hybrid stage reads files


def test_the_first_stage_is_frozen_and_reranking_makes_a_new_one(index: Index) -> None:
    plain = first_stage(index, ISSUE, index.settings)
    with pytest.raises(FrozenInstanceError):
        plain.fused_order = plain.fused_order[::-1]  # type: ignore[misc]
    for name in ("order", "head_logits", "ranked_by", "ranked_depth", "reranked"):
        with pytest.raises(AttributeError):
            setattr(plain, name, None)
    with pytest.raises(ValueError, match="read-only"):
        plain.order[0] = 1
    with pytest.raises(ValueError, match="read-only"):
        plain.ranks["bm25"][0] = 1
    with pytest.raises(TypeError):
        plain.ranks["dense"] = plain.rank  # type: ignore[index]
    ranked = ranked_first_stage(index, ISSUE, _settings(index, ranker="head"))
    assert ranked is not plain and ranked.reranked and ranked.ranked_by == "head"
    assert ranked.ranked_depth == 3 and ranked.head_logits is not None
    assert np.array_equal(ranked.fused_order, plain.order)
    assert sorted(ranked.order[:3].tolist()) == sorted(plain.order[:3].tolist())
    assert not plain.reranked and plain.head_logits is None and plain.ranked_depth == 0


def _old_settings(settings: Any, **first: Any) -> dict[str, Any]:
    """The dict locate wrote before RunSettings, key for key."""
    return {
        "k": settings.k,
        "first_stage": settings.first_stage,
        "signals": settings.signals and settings.first_stage == "hybrid",
        "query_texts": first["query_texts"],
        "query_adapter": first.get("query_adapter", ""),
        "rerank": first.get("rerank", False),
        "ranked_depth": first.get("ranked_depth", 0),
        "selector": first["selector"],
        "edges": list(settings.expansion_edges(first["selector"])),
        "centres": settings.centres,
        "depth": settings.depth,
        "pool": settings.pool,
        "model": settings.model or "all-MiniLM-L6-v2 (bundled)",
        "encoder": settings.encoder,
        **first.get("partial", {}),
    }


def test_run_settings_to_dict_is_the_old_dict(index: Index) -> None:
    n = len(index.function_ids)
    head = _settings(index, ranker="head")
    loc = locate(index, ISSUE, head)
    want = _old_settings(head, query_texts=1, rerank="head", ranked_depth=3, selector="none")
    assert list(loc.settings.to_dict().items()) == list(want.items())
    assert json.loads(json.dumps(loc.to_dict()))["settings"] == want
    with pytest.raises(FrozenInstanceError):
        loc.settings.k = 5  # type: ignore[misc]
    bm25 = index.settings.model_copy(update={"first_stage": "bm25", "rerank": False})
    loc = locate(index, ISSUE, bm25)
    want = _old_settings(bm25, query_texts=0, selector="offline")
    assert list(loc.settings.to_dict().items()) == list(want.items())
    cold = _settings(index, cold_pool=3, cold_always=True, ranker="head")
    loc = locate(index, ISSUE, cold)
    partial = {"partial_index": True, "embedded_functions": 3, "functions": n}
    want = _old_settings(cold, query_texts=1, rerank="head", ranked_depth=3, selector="none",
                         partial=partial)
    assert list(loc.settings.to_dict().items()) == list(want.items())
    assert loc.settings.partial == PartialIndex(embedded_functions=3, functions=n)
    assert loc.settings.model == BUNDLED_MODEL
