"""Fitting the offline selector: the exchange simulated on records, CV over repositories."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from spider.errors import InvalidSetting
from spider.eval.dataset import Instance
from spider.eval.snapshot import template_resolver
from spider.expand.select.offline import OfflineWeights
from spider.learn.selector import (
    FitRecord,
    collect,
    cross_validate,
    fit_settings,
    fit_weights,
    oracle,
    simulate,
    write_weights,
)
from spider.settings import AUTO, LLM_EDGES, EngineSettings


def _record(i: int, repo: str, good_neighbour: bool) -> FitRecord:
    pool = [f"r{i}/a.py:f{j}" for j in range(40)]
    truth_id = pool[30] if good_neighbour else pool[1]
    cands = [
        {"id": pool[30], "rank": 31, "edge": "contains", "hops": 2,
         "f": {"log_rank": math.log(31), "same_class": 1.0}},
        {"id": pool[35], "rank": 36, "edge": "invokes", "hops": 1,
         "f": {"log_rank": math.log(36), "same_class": 0.0}},
    ]
    return FitRecord(
        instance_id=f"i{i}", repo=repo, pool=pool,
        to_dataset={p: p for p in pool}, truth=[truth_id],
        requests=[{"centre": pool[0], "centre_rank": 1, "candidates": cands}],
    )


RECORDS = [_record(i, f"o/r{i % 3}", good_neighbour=i % 2 == 0) for i in range(12)]


def test_simulate_without_weights_is_the_first_stage() -> None:
    rec = _record(0, "o/r", good_neighbour=True)
    assert simulate(rec, None, 20)["R@20"] == 0.0
    assert oracle(rec, 20)["R@20"] == 1.0


def test_weights_that_admit_the_same_class_neighbour_find_it() -> None:
    w = OfflineWeights({"bias": 0.0, "same_class": 10.0, "log_rank": -1.0},
                       {"bias": 0.0, "log_rank": -1.0}, 0.0)
    rec = _record(0, "o/r", good_neighbour=True)
    m = simulate(rec, w, 20, placement="centre")
    assert m["R@20"] == 1.0 and m["MRR@20"] == 0.5  # inserted right below the centre
    m = simulate(rec, w, 20, placement="probability")
    assert m["R@20"] == 1.0 and m["MRR@20"] == 0.5


def test_fit_learns_a_positive_same_class_weight_and_cv_reports_each_fold(tmp_path: Path) -> None:
    w = fit_weights(RECORDS, 20)
    assert w.neighbour["same_class"] > 0
    assert w.ranked["log_rank"] < 0
    cv = cross_validate(RECORDS, 20)
    assert cv["folds"] == ["o/r0", "o/r1", "o/r2"]
    assert cv["instances"] == 12
    assert set(cv["by_margin"]) and str(cv["margin"]) in cv["by_margin"]
    out = tmp_path / "w.json"
    write_weights(w, cv, "spider train selector ...", out)
    data = json.loads(out.read_text())
    assert data["neighbour"]["same_class"] > 0 and "R@20 oracle" in data["cv"]
    assert OfflineWeights.load(out).margin == w.margin


def test_the_margin_is_the_smallest_with_eta_above_tau() -> None:
    from spider.learn.selector import Swaps, choose_margin

    grid = {
        -1.0: Swaps(admitted=10, admitted_in_gt=1, evicted=10, evicted_in_gt=2),  # η < τ
        0.0: Swaps(admitted=4, admitted_in_gt=2, evicted=4, evicted_in_gt=1),  # η > τ
        1.0: Swaps(admitted=1, admitted_in_gt=1, evicted=1, evicted_in_gt=0),  # η > τ too
        2.0: Swaps(),
    }
    margin, met, reason = choose_margin(grid)
    assert (margin, met) == (0.0, True) and "η 0.500 > τ 0.250" in reason


def test_a_margin_that_costs_recall_is_passed_over() -> None:
    from spider.learn.selector import Swaps, choose_margin

    grid = {
        0.0: Swaps(admitted=40, admitted_in_gt=4, evicted=40, evicted_in_gt=3),  # η > τ
        1.0: Swaps(admitted=10, admitted_in_gt=2, evicted=10, evicted_in_gt=1),  # η > τ
        2.0: Swaps(),
    }
    recall = {0.0: 0.70, 1.0: 0.72, 2.0: 0.71}
    margin, met, _ = choose_margin(grid, recall, baseline=0.71)
    assert (margin, met) == (1.0, True)  # 0.0 helps by items but lowers recall


def test_no_margin_with_eta_above_tau_admits_nothing_and_says_so() -> None:
    from spider.learn.selector import Swaps, choose_margin

    grid = {
        0.0: Swaps(admitted=5, admitted_in_gt=0, evicted=5, evicted_in_gt=1),
        1.0: Swaps(admitted=2, admitted_in_gt=0, evicted=2, evicted_in_gt=0),  # η = τ = 0
        1.5: Swaps(),
        2.0: Swaps(),
    }
    margin, met, reason = choose_margin(grid)
    assert (margin, met) == (1.5, False)
    assert reason.startswith("no margin satisfies η > τ")


def test_cv_reports_eta_tau_and_admissions_and_the_weights_file_keeps_them(
    tmp_path: Path,
) -> None:
    from spider.learn.selector import MARGINS, describe_cv, fit_chosen

    cv = cross_validate(RECORDS, 20)
    for m in MARGINS:
        row = cv["by_margin"][str(m)]
        assert row["admitted"] == row["evicted"]  # the exchange keeps exactly K
        if row["admitted"]:
            assert row["eta"] == round(row["admitted_in_gt"] / row["admitted"], 4)
        else:
            assert row["eta"] is None
    chosen = cv["by_margin"][str(cv["margin"])]
    if cv["rule_met"]:
        assert chosen["admitted"] > 0 and chosen["eta"] > (chosen["tau"] or 0.0)
    else:
        assert chosen["admitted"] == 0
    text = describe_cv(cv)
    assert cv["reason"] in text and "η" in text and "τ" in text
    w = fit_chosen(RECORDS, cv, 20)
    assert w.margin == cv["margin"]
    out = tmp_path / "w.json"
    write_weights(w, cv, "spider train selector ...", out)
    meta = json.loads(out.read_text())["cv"]
    assert meta["eta"] == chosen["eta"] and meta["admissions"] == chosen["admitted"]
    assert [g["margin"] for g in meta["grid"]] == list(MARGINS)
    assert meta["margin rule met"] == cv["rule_met"]


def test_no_edited_neighbour_fits_a_selector_that_admits_nothing() -> None:
    from spider.rank.features import NEIGHBOUR_FEATURES

    plain = [_record(i, f"o/r{i % 3}", good_neighbour=False) for i in range(6)]
    w = fit_weights(plain, 20)
    assert w.neighbour == {"bias": -30.0, **dict.fromkeys(NEIGHBOUR_FEATURES, 0.0)}
    rec = _record(0, "o/r", good_neighbour=True)  # even where a neighbour is the fix
    assert simulate(rec, w, 20) == simulate(rec, None, 20)


DISCOUNT_FIX = "\n".join(  # the discount applies from 100, not above it
    [
        "diff --git a/shop/pricing.py b/shop/pricing.py",
        "--- a/shop/pricing.py",
        "+++ b/shop/pricing.py",
        "@@ -1,5 +1,5 @@",
        " def apply_discount(amount):",
        '     """Ten percent off above 100."""',
        "-    if amount > 100:",
        "+    if amount >= 100:",
        "         return amount * 0.9",
        "     return amount",
        "",
    ]
)


def test_the_fit_gathers_neighbours_under_the_default_edges(
    shop_mirror: tuple[Path, str], tmp_path: Path
) -> None:
    # edges: auto expands nothing without an Anthropic key; the fit must still gather the
    # contains and invokes neighbours (it once collected none, and every margin admitted 0)
    root, sha = shop_mirror
    inst = Instance(
        instance_id="a-1", repo="acme/shop", base_commit=sha,
        problem_statement="The cart total ignores the discount\nCart.total is wrong above 100.",
        patch=DISCOUNT_FIX,
    )
    settings = EngineSettings(cache_dir=tmp_path / "cache", k=2, centres=2)
    assert settings.edges == AUTO and settings.expansion_edges() == ()
    records = collect([inst], template_resolver(str(root.parent / "{owner}+{name}")),
                      settings, tmp_path / "fit")
    edges = {c["edge"] for r in records for q in r.requests for c in q["candidates"]}
    assert edges and edges <= set(LLM_EDGES)


def test_a_fit_without_edges_is_refused_with_what_to_set() -> None:
    assert fit_settings(EngineSettings(edges="invokes")).edges == ("invokes",)
    with pytest.raises(InvalidSetting, match="SPIDER_EDGES"):
        fit_settings(EngineSettings(edges="none"))
