"""Recall@K, Acc@K and MRR@K on hand-computed cases."""

from __future__ import annotations

import pytest

from spider.eval.metrics import aggregate, dedupe, metric_names, score_instance


def test_single_instance_by_hand() -> None:
    ranked = ["a.py:x", "a.py:y", "b.py:z", "c.py:w", "d.py:v"]
    truth = ["b.py:z", "d.py:v", "e.py:missing"]
    m = score_instance(ranked, truth, recall_ks=(1, 3, 5), acc_ks=(5,), mrr_k=5)
    assert m["R@1"] == 0.0
    assert m["R@3"] == pytest.approx(1 / 3)  # z at rank 3
    assert m["R@5"] == pytest.approx(2 / 3)  # z and v; "missing" never ranked
    assert m["A@5"] == 0.0
    assert m["MRR@5"] == pytest.approx(1 / 3)


def test_acc_and_mrr_when_everything_found() -> None:
    m = score_instance(["p:a", "p:b"], ["p:b", "p:a"], recall_ks=(1, 2), acc_ks=(1, 2), mrr_k=2)
    assert m == {"R@1": 0.5, "R@2": 1.0, "A@1": 0.0, "A@2": 1.0, "MRR@2": 1.0}


def test_mrr_zero_beyond_k() -> None:
    m = score_instance(["p:a", "p:b", "p:c"], ["p:c"], recall_ks=(2,), acc_ks=(2,), mrr_k=2)
    assert m["MRR@2"] == 0.0 and m["R@2"] == 0.0


def test_duplicate_suffixes_are_one_function() -> None:
    # a setter ("#2") ranked before its getter counts once and at its own rank
    ranked = ["m.py:C.prop#2", "m.py:C.prop", "m.py:f"]
    assert dedupe(ranked) == ["m.py:C.prop", "m.py:f"]
    m = score_instance(ranked, ["m.py:f"], recall_ks=(2,), acc_ks=(2,), mrr_k=2)
    assert m["R@2"] == 1.0 and m["MRR@2"] == 0.5


def test_macro_average() -> None:
    a = score_instance(["p:a"], ["p:a"], recall_ks=(1,), acc_ks=(1,), mrr_k=1)
    b = score_instance(["p:x"], ["p:a", "p:b"], recall_ks=(1,), acc_ks=(1,), mrr_k=1)
    agg = aggregate([a, b])
    assert agg == {"n": 2, "R@1": 0.5, "A@1": 0.5, "MRR@1": 0.5}
    assert aggregate([]) == {"n": 0}


def test_empty_truth_is_an_error() -> None:
    with pytest.raises(ValueError):
        score_instance(["p:a"], [])


def test_default_columns() -> None:
    assert metric_names() == [
        "R@1", "R@3", "R@5", "R@10", "R@20", "A@5", "A@10", "A@20", "MRR@20",
    ]  # fmt: skip
