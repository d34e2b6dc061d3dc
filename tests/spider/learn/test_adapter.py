"""The query adapter: fitting it from corpus rows, its cross-validation, its file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spider.errors import InvalidSetting, WeightsFormatError
from spider.learn.adapter import (
    AdapterParams,
    AdapterRow,
    adapter_rows,
    cross_validate,
    evaluate,
    fit_adapter,
)
from spider.retrieve.adapter import QueryAdapter, adapter_path, dump_adapter, load_adapter

DIM = 8
TEACH = AdapterParams(l2=0.0, epochs=40, lr=0.05, batch=8)


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _rows(n: int, seed: int = 0) -> list[AdapterRow]:
    """Issues whose queries are a fixed permutation of their edited function's vector:
    cosine alone ranks that function at random; the inverse permutation finds it."""
    rng = np.random.default_rng(seed)
    perm = np.roll(np.eye(DIM), 3, axis=0)
    rows = []
    for i in range(n):
        cand = _unit(rng.normal(size=(30, DIM)))
        pos = np.zeros(30, dtype=bool)
        pos[i % 30] = True
        q = _unit((perm @ cand[i % 30])[None, :] + 0.05 * rng.normal(size=(2, DIM)))
        rows.append(AdapterRow(f"o__r{i % 4}-{i}", f"o/r{i % 4}", q, cand, pos))
    return rows


def test_the_fit_learns_what_the_bundled_queries_miss() -> None:
    train, held = _rows(64), _rows(32, seed=1)
    before = evaluate(held, None)
    after = evaluate(held, fit_adapter(train, TEACH))
    assert after["MRR@20"] > before["MRR@20"] + 0.3
    assert after["R@1"] > 0.8 > before["R@1"]


def test_the_identity_is_the_bundled_model() -> None:
    rows = _rows(12)
    assert evaluate(rows, np.eye(DIM, dtype=np.float32)) == evaluate(rows, None)


def test_cv_holds_out_repositories_and_says_whether_it_pays() -> None:
    cv = cross_validate(_rows(48), grid=[AdapterParams(l2=1.0, epochs=1), TEACH], folds=2)
    assert cv["repositories"] == 4 and cv["instances"] == 48
    assert cv["chosen"]["params"]["lr"] == TEACH.lr  # the point that learned
    assert cv["pays"] and cv["chosen"]["adapter"]["R@20"] >= cv["identity"]["R@20"]


def _corpus_file(path: Path, repo: str, *, gold_outside: bool) -> None:
    rng = np.random.default_rng(0)
    pool = _unit(rng.normal(size=(5, DIM)))
    gold = _unit(rng.normal(size=(1, DIM)))
    np.savez_compressed(
        path,
        repo=repo,
        ids=np.array([f"f{i}" for i in range(5)]),
        y=np.array([0, 0, 0, 0, 0] if gold_outside else [0, 1, 0, 0, 0], dtype=np.int8),
        gold_ids=np.array(["outside" if gold_outside else "f1"]),
        pool_vecs=pool.astype(np.float16),
        gold_vecs=(gold if gold_outside else pool[1:2]).astype(np.float16),
    )


def test_rows_keep_edited_functions_the_pool_missed(tmp_path: Path) -> None:
    _corpus_file(tmp_path / "a__b-1.npz", "a/b", gold_outside=True)
    _corpus_file(tmp_path / "a__b-2.npz", "a/b", gold_outside=False)
    _corpus_file(tmp_path / "psf__requests-1.npz", "psf/requests", gold_outside=False)
    _corpus_file(tmp_path / "gin-gonic__gin-1.npz", "gin-gonic/gin", gold_outside=False)
    q = {p.stem: _unit(np.ones((1, DIM))) for p in tmp_path.glob("*.npz")}
    del q["a__b-2"]
    rows, skipped = adapter_rows(sorted(tmp_path.glob("*.npz")), q)
    assert [r.instance_id for r in rows] == ["a__b-1"]
    assert skipped == {"excluded": 2, "no_label": 0, "no_issue_text": 1}
    assert len(rows[0].candidates) == 6 and rows[0].positive.tolist() == [0] * 5 + [1]


def test_the_file_round_trips_and_refuses_what_it_cannot_use(tmp_path: Path) -> None:
    m = np.eye(DIM, dtype=np.float32) + 0.01
    good = tmp_path / "a.npz"
    dump_adapter(good, m, {"command": "spider train encoder"})
    got = QueryAdapter.load(good)
    assert np.array_equal(got.matrix, m) and got.meta["command"] == "spider train encoder"
    assert load_adapter(str(good)) is not None and load_adapter("") is None
    assert load_adapter("none") is None
    q = _unit(np.ones((2, DIM)))
    assert np.allclose(np.linalg.norm(got.apply(q), axis=1), 1.0)
    with pytest.raises(InvalidSetting, match="8-dimensional"):
        got.apply(np.ones((1, 4), dtype=np.float32))
    with pytest.raises(InvalidSetting, match="no file"):
        adapter_path(str(tmp_path / "missing.npz"))
    for name, body in {
        "kind": {"schema": 1, "kind": "pool-ranker", "meta": "{}", "matrix": m},
        "schema": {"schema": 9, "kind": "query-adapter", "meta": "{}", "matrix": m},
        "square": {"schema": 1, "kind": "query-adapter", "meta": "{}", "matrix": m[:4]},
        "finite": {"schema": 1, "kind": "query-adapter", "meta": "{}", "matrix": m * np.nan},
    }.items():
        bad = tmp_path / f"{name}.npz"
        np.savez(bad, **body)
        with pytest.raises(WeightsFormatError):
            QueryAdapter.load(bad)
    (tmp_path / "junk.npz").write_text("not numpy")
    with pytest.raises(WeightsFormatError, match="regenerate it with `spider train encoder"):
        QueryAdapter.load(tmp_path / "junk.npz")
