"""The head re-ranker: same top K, re-sorted by the logistic head model; weights files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from spider.errors import WeightsFormatError
from spider.index import Index
from spider.localize import locate
from spider.models import Hit, Issue, Reason
from spider.rank.features import HEAD_FEATURES as FEATURES
from spider.rank.features import head_features as item_features
from spider.rank.rerank import RerankWeights, default_weights, rerank_head
from spider.retrieve.first_stage import first_stage
from tests.spider.shop import shop_index

ISSUE = Issue("Cart total is negative", "Adding -3 apples via add_item makes the total negative.")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    return shop_index(tmp_path_factory, k=4, ranker="head")


def _ids(index: Index, order: np.ndarray) -> list[str]:
    return [index.function_ids[int(i)] for i in order]


def test_features_describe_each_item(index: Index) -> None:
    fs = first_stage(index, ISSUE, index.settings.model_copy(update={"rerank": False}))
    ids = index.function_ids
    x = item_features(index, fs, [int(i) for i in fs.order])
    assert x.shape == (len(ids), len(FEATURES))
    col = {name: x[:, j] for j, name in enumerate(FEATURES)}
    assert col["log_rank"][0] == 0.0  # the first item has rank 1
    by_id = dict(zip(_ids(index, fs.order), range(len(ids)), strict=True))
    assert col["init"][by_id["shop/cart.py:Cart.__init__"]] == 1.0
    assert col["private"][by_id["shop/cart.py:Cart._check"]] == 1.0
    assert col["private"][by_id["shop/cart.py:Cart.__init__"]] == 0.0
    total = by_id["shop/cart.py:Cart.total"]
    assert col["log_lines"][total] == pytest.approx(np.log(7))
    assert col["bm25_share"].max() == pytest.approx(1.0) and col["dense_gap"].max() == 0.0
    # every function of cart.py shares the file's best rank; total calls price_of
    cart = [by_id[i] for i in by_id if i.startswith("shop/cart.py")]
    assert len({col["log_file_best"][j] for j in cart}) == 1
    price_rank = _ids(index, fs.order).index("shop/cart.py:price_of") + 1
    assert col["log_neighbour_best"][total] <= np.log(price_rank) + 1e-9


def test_rerank_keeps_the_top_k_and_sorts_it_by_the_model(index: Index) -> None:
    fs = first_stage(index, ISSUE, index.settings.model_copy(update={"rerank": False}))
    longest_first = RerankWeights(coef={"log_lines": 10.0})
    new = rerank_head(index, fs, 4, longest_first)
    assert sorted(new[:4].tolist()) == sorted(fs.order[:4].tolist())
    assert new[4:].tolist() == fs.order[4:].tolist()
    lines = [
        index.graph.g.nodes[n]["end_line"] - index.graph.g.nodes[n]["start_line"]
        for n in _ids(index, new[:4])
    ]
    assert lines == sorted(lines, reverse=True)
    # the head model never changes which K functions are reported
    off = locate(index, ISSUE, index.settings.model_copy(update={"rerank": False}))
    on = locate(index, ISSUE, index.settings)
    assert {h.id for h in off.hits} == {h.id for h in on.hits} and len(on.hits) == 4
    # a hit's reason shows the rank the reader sees; where the head model moved it, the
    # fused rank it came from is in the detail
    def ranker(hit: Hit) -> Reason:
        return next(r for r in hit.reasons if r.technical)

    fused = {h.id: ranker(h).rank for h in off.hits}
    assert sorted(fused.values()) == [1, 2, 3, 4]
    assert [ranker(h).rank for h in on.hits] == [1, 2, 3, 4]
    for shown, h in enumerate(on.hits, start=1):
        moved = f"re-ranked from {fused[h.id]}"
        assert (moved in (ranker(h).detail or "")) == (fused[h.id] != shown)


def test_shipped_weights_load_and_name_known_features() -> None:
    w = default_weights()
    assert set(w.coef) <= set(FEATURES) and w.coef
    assert "command" in w.meta and "spider bench fit-rerank" in str(w.meta["command"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "cannot read weights"),
        ("[1, 2]", "not a JSON object"),
        (json.dumps({"bias": 0.0}), "schema None, this engine reads schema 1"),
        (json.dumps({"schema": 1, "kind": "offline-selector", "coef": {}}), "not 'rerank'"),
        (json.dumps({"schema": 1, "kind": "rerank", "bias": 0.0}), "section 'coef' is missing"),
        (json.dumps({"schema": 1, "kind": "rerank", "coef": {"colour": 1.0}}), "unknown features"),
        (json.dumps({"schema": 1, "kind": "rerank", "coef": {"log_rank": "x"}}), "finite number"),
        (json.dumps({"schema": 1, "kind": "rerank", "coef": {}, "bias": float("nan")}),
         "finite number"),
    ],
)
def test_bad_weights_file_is_a_clear_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "w.json"
    path.write_text(content)
    with pytest.raises(WeightsFormatError, match=message) as err:
        RerankWeights.load(path)
    assert "spider train head" in str(err.value) or "not 'rerank'" in str(err.value)
    with pytest.raises(WeightsFormatError, match="cannot read"):
        RerankWeights.load(tmp_path / "missing.json")


def test_shipped_calibration_gives_a_confidence_and_is_tied_to_the_weights(index: Index) -> None:
    from spider.rank.rerank import HeadCalibration, default_calibration

    cal = default_calibration()
    assert cal is not None and cal == HeadCalibration.load()
    loc = locate(index, ISSUE, index.settings)
    assert loc.confidence is not None and 0.0 < loc.confidence < 1.0
    assert loc.to_dict()["confidence"] == round(loc.confidence, 4)
    off = locate(index, ISSUE, index.settings.model_copy(update={"rerank": False}))
    assert off.confidence is None  # no head model ran: no estimate claimed
