"""Paired differences of two models on the same held-out instances, bootstrapped over
repositories."""

from __future__ import annotations

import pytest

from spider.errors import InputError
from spider.learn.paired import mean_scored, paired_deltas


def _scored(values: dict[str, tuple[str, float]]) -> dict[str, tuple[str, dict[str, float]]]:
    return {i: (repo, {"R@20": v}) for i, (repo, v) in values.items()}


BASE = _scored({f"i{n}": (f"o/r{n % 5}", (n % 3) / 2) for n in range(40)})


def test_a_model_against_itself_differs_by_nothing() -> None:
    same = paired_deltas(BASE, BASE, ["R@20"])["R@20"]
    assert same["delta"] == same["low"] == same["high"] == 0.0
    assert same["candidate"] == same["baseline"]


def test_a_gain_in_every_repository_has_an_interval_above_zero() -> None:
    better = {i: (repo, {"R@20": m["R@20"] + 0.1}) for i, (repo, m) in BASE.items()}
    d = paired_deltas(better, BASE, ["R@20"])["R@20"]
    assert d["delta"] == pytest.approx(0.1) and d["low"] > 0.0 and d["high"] >= d["delta"]


def test_a_gain_held_by_one_repository_of_five_has_an_interval_reaching_zero() -> None:
    """Resampling whole repositories: a gain held by one of them may vanish from a resample."""
    one = {
        i: (r, {"R@20": m["R@20"] + (0.5 if r == "o/r0" else 0.0)}) for i, (r, m) in BASE.items()
    }
    d = paired_deltas(one, BASE, ["R@20"])["R@20"]
    assert d["delta"] == pytest.approx(0.1)
    assert d["low"] == 0.0 and d["high"] > d["delta"]  # some resamples miss o/r0 entirely


def test_both_models_must_score_the_same_instances() -> None:
    fewer = dict(list(BASE.items())[1:])
    with pytest.raises(InputError, match="same instances"):
        paired_deltas(fewer, BASE, ["R@20"])
    with pytest.raises(InputError, match="at least one"):
        paired_deltas({}, {}, ["R@20"])


def test_repeated_runs_are_averaged_per_instance_before_pairing() -> None:
    higher = {i: (repo, {"R@20": m["R@20"] + 0.2}) for i, (repo, m) in BASE.items()}
    mean = mean_scored([BASE, higher])
    assert all(mean[i][1]["R@20"] == pytest.approx(BASE[i][1]["R@20"] + 0.1) for i in BASE)
    assert all(mean[i][0] == BASE[i][0] for i in BASE)
    assert mean_scored([BASE]) is BASE
    d = paired_deltas(mean, BASE, ["R@20"])["R@20"]
    assert d["delta"] == pytest.approx(0.1)
    with pytest.raises(InputError, match="same instances"):
        mean_scored([BASE, dict(list(BASE.items())[1:])])
    with pytest.raises(InputError, match="no scored run"):
        mean_scored([])
