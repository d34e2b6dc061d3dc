"""The pool ranker in the engine: its features on a real index, and a list that follows
the model file."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from spider.errors import InvalidSetting, WeightsFormatError
from spider.index import Index
from spider.learn.corpus import CorpusRow
from spider.learn.ranker import Params, fit
from spider.localize import locate
from spider.models import Issue
from spider.rank.features import RANKER_FEATURES, pool_relative, ranker_features
from spider.rank.pool_rank import Calibration, PoolRanker, dump_ranker, settings_ranker
from spider.retrieve.adapter import dump_adapter
from spider.retrieve.first_stage import first_stage
from spider.settings import EngineSettings
from tests.spider.shop import shop_index

ISSUE = Issue(
    "Cart total is negative",
    "Calling `Cart.add_item` with -3 apples makes the total negative; see shop/cart.py.",
)
LINES = RANKER_FEATURES.index("log_lines")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    return shop_index(tmp_path_factory, k=3)


def test_features_read_the_issue_the_graph_and_the_file(index: Index) -> None:
    fs = first_stage(index, ISSUE, index.settings)
    ids = index.function_ids
    items = list(range(len(ids)))
    x = ranker_features(index, fs, items)
    assert x.shape == (len(ids), len(RANKER_FEATURES)) and np.isfinite(x).all()
    col = {n: j for j, n in enumerate(RANKER_FEATURES)}
    row = {ids[i]: x[r] for r, i in enumerate(items)}
    add = row["shop/cart.py:Cart.add_item"]
    assert add[col["name_mentioned"]] == 1 and add[col["scope_mentioned"]] == 1
    assert add[col["method"]] == 1 and add[col["signal_qualified"]] == 1
    assert add[col["file_mentioned"]] == 1  # "cart" is a word of the issue
    fmt = row["shop/pricing.py:format_price"]
    assert fmt[col["name_mentioned"]] == 0 and fmt[col["method"]] == 0
    assert fmt[col["file_mentioned"]] == 0
    # total() calls price_of and apply_discount; price_of is called by total
    assert row["shop/cart.py:Cart.total"][col["log_callees"]] > 0
    assert row["shop/cart.py:price_of"][col["log_callers"]] > 0
    # a sibling of the mentioned method carries its signal as the class's
    assert row["shop/cart.py:Cart.total"][col["class_signal"]] > 0
    assert len({float(v) for v in x[:, col["log_functions"]]}) == 1  # per issue
    # dense ranks are read within the scored pool: the best of any pool is rank 1
    two = ranker_features(index, fs, [int(i) for i in fs.order[2:4]])
    assert sorted(np.exp(two[:, col["log_dense_rank"]]).round().tolist()) == [1.0, 2.0]


def test_features_read_the_issue_as_the_first_stage_cut_it(index: Index) -> None:
    """Words past max_issue_chars reach no ranker, so no feature may read them either."""
    tail = " then `format_price` fails too"
    long = Issue("Cart total is negative", "x " * 150 + tail)
    settings = index.settings.model_copy(update={"max_issue_chars": 250})
    fs = first_stage(index, long, settings)
    assert (
        fs.issue is not None and len(fs.issue.text) <= 250 and "format_price" not in fs.issue.text
    )
    ids = index.function_ids
    col = RANKER_FEATURES.index("name_mentioned")
    x = ranker_features(index, fs, list(range(len(ids))))
    assert x[ids.index("shop/pricing.py:format_price"), col] == 0
    whole = first_stage(index, long, index.settings)
    x = ranker_features(index, whole, list(range(len(ids))))
    assert x[ids.index("shop/pricing.py:format_price"), col] == 1


def test_issue_clipped_keeps_the_title() -> None:
    issue = Issue("A title", "b" * 100)
    assert issue.clipped(1000) is issue
    cut = issue.clipped(20)
    assert cut.title == "A title" and len(cut.text) == 20 and cut.text.startswith("A title\n\nbbb")


def test_pool_relative_ranks_share_ties() -> None:
    x = np.zeros((4, len(RANKER_FEATURES)))
    j = RANKER_FEATURES.index("log_dense_rank")
    x[:, j] = np.log([50, 3, 3, 900])
    pool_relative(x)
    assert np.exp(x[:, j]).round().tolist() == [3.0, 1.0, 1.0, 4.0]


def _ranker(prefer_long: bool) -> PoolRanker:
    """A model taught that longer (or shorter) functions are the likelier edits: length is
    the only feature that varies, graded relevance teaches the whole order."""
    rows = []
    rng = np.random.default_rng(0)
    for s in range(30):
        lines = rng.permutation(6) + 1  # 1..6 lines, as in the shop
        x = np.zeros((6, len(RANKER_FEATURES)))
        x[:, LINES] = np.log(lines)
        y = (lines - 1 if prefer_long else 6 - lines).astype(np.int64)
        rows.append(CorpusRow(f"i{s}", f"o/r{s % 3}", x, y, 1, 0, Path("x")))
    return fit(rows, Params(leaves=3, trees=60, learning_rate=0.2, min_child=2))


def test_the_list_follows_the_model_file(index: Index, tmp_path: Path) -> None:
    paths = {}
    for name, prefer_long in (("long", True), ("short", False)):
        m = _ranker(prefer_long)
        paths[name] = tmp_path / f"{name}.json"
        dump_ranker(paths[name], replace(m, depth=50, calibration=Calibration(1.0, 0.0)), {})
    got = {
        name: locate(
            index,
            ISSUE,
            index.settings.model_copy(update={"selector": "none", "ranker_file": str(path)}),
        )
        for name, path in paths.items()
    }
    lines = {name: [h.end_line - h.start_line for h in loc.hits] for name, loc in got.items()}
    g = index.graph.g
    every = [g.nodes[n]["end_line"] - g.nodes[n]["start_line"] for n in index.function_ids]
    assert lines["long"][0] == max(every) and lines["short"][0] == min(every)
    assert [h.id for h in got["long"].hits] != [h.id for h in got["short"].hits]
    loc = got["long"]
    assert loc.settings.rerank == "pool" and loc.settings.ranked_depth == len(index.function_ids)
    digest = PoolRanker.load(paths["long"]).digest
    assert len(digest) == 12 and digest != PoolRanker.load(paths["short"]).digest
    assert loc.settings.to_dict()["ranker_file"] == digest
    assert f"learned ranker (from the file the install chose, digest {digest})" in loc.method()
    assert loc.confidence is not None and 0 < loc.confidence < 1
    shipped = locate(index, ISSUE, index.settings.model_copy(update={"selector": "none"}))
    assert "ranker_file" not in shipped.settings.to_dict()
    assert "(trained on other projects' fixed issues)" in shipped.method()


def test_a_rewritten_model_file_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    dump_ranker(path, replace(_ranker(True), depth=50), {})
    settings = EngineSettings(ranker_file=str(path))
    first = settings_ranker(settings)
    assert first is not None and settings_ranker(settings) is first  # read once
    dump_ranker(path, replace(_ranker(False), depth=70), {})
    again = settings_ranker(settings)
    assert again is not None and again.depth == 70 and again.digest != first.digest
    assert settings_ranker(settings.model_copy(update={"ranker": "head"})) is None


def test_a_missing_model_file_is_refused_with_the_command_that_fits_one(
    tmp_path: Path,
) -> None:
    settings = EngineSettings(ranker_file=str(tmp_path / "nope.json"))
    with pytest.raises(InvalidSetting, match="spider train ranker --weights-file"):
        settings_ranker(settings)
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": 1, "kind": "head-model"}')
    with pytest.raises(WeightsFormatError):
        settings_ranker(EngineSettings(ranker_file=str(bad)))


def test_head_ranker_on_request(index: Index) -> None:
    settings = index.settings.model_copy(update={"selector": "none", "ranker": "head"})
    loc = locate(index, ISSUE, settings, ranker=_ranker(True))
    assert loc.settings.rerank == "head" and loc.settings.ranked_depth == 3
    assert "head model" in loc.method()


def test_the_method_says_how_many_windows_dense_read(index: Index) -> None:
    long = Issue("Cart total is negative", "The total goes below zero. " * 40)
    loc = locate(index, long)
    assert loc.settings.query_texts == 3  # the head, then two more 400-character windows
    assert "dense retrieval over 3 windows of the issue" in loc.method()
    assert "windows" not in locate(index, ISSUE).method()  # a short issue is one query


def test_dense_follows_the_query_adapter_file(index: Index, tmp_path: Path) -> None:
    dim = index.vectors().shape[1]
    rotation, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(dim, dim)))
    paths = {"identity": tmp_path / "identity.npz", "rotation": tmp_path / "rotation.npz"}
    dump_adapter(paths["identity"], np.eye(dim), {})
    dump_adapter(paths["rotation"], rotation, {})
    runs = {
        name: first_stage(index, ISSUE, index.settings.model_copy(update={"query_adapter": str(p)}))
        for name, p in paths.items()
    }
    plain = first_stage(index, ISSUE, index.settings)
    assert np.allclose(runs["identity"].raw["dense"], plain.raw["dense"], atol=1e-5)
    assert not np.allclose(runs["rotation"].raw["dense"], plain.raw["dense"], atol=1e-3)
    settings = index.settings.model_copy(
        update={"query_adapter": str(paths["rotation"]), "selector": "none"}
    )
    loc = locate(index, ISSUE, settings)
    assert loc.settings.query_adapter == str(paths["rotation"])
    assert "query side tuned" in loc.method()
    assert "tuned" not in locate(index, ISSUE).method()
