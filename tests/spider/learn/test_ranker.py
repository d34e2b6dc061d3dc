"""The pool ranker: lambdarank fit, leave-one-repository-out CV, the model file and its checks."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from spider.errors import InputError, WeightsFormatError
from spider.learn.corpus import CorpusRow
from spider.learn.platt import fit_platt
from spider.learn.ranker import (
    SHIP_METRICS,
    Params,
    cross_validate,
    dev_evidence,
    fit,
    learning_curve,
    loro,
    metrics,
    recipe_of,
    score_pools,
    ship_refusal,
    training_rows,
    versus_recipe,
    with_weak,
    without,
    write_ranker,
)
from spider.rank.calibration import Calibration
from spider.rank.features import HISTORY_FEATURES, RANKER_FEATURES
from spider.rank.pool_rank import PoolRanker, TreeEnsemble, dump_ranker

RANK = RANKER_FEATURES.index("log_rank")
BODY = RANKER_FEATURES.index("body_terms")
SMALL = (Params(leaves=7, trees=30, min_child=5),)


def _row(seed: int, repo: str, n: int = 40) -> CorpusRow:
    """``n`` candidates in first-stage order; the edited one sits at rank 10..19 and is the
    only candidate holding many of the issue's code words."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, len(RANKER_FEATURES)))
    x[:, RANK] = np.log(np.arange(1, n + 1))
    x[:, BODY] = rng.uniform(0, 1, size=n)
    y = np.zeros(n, dtype=np.int64)
    hit = 10 + seed % 10
    y[hit] = 1
    x[hit, BODY] = 3.0
    return CorpusRow(f"i{seed}", repo, x, y, labels=1, unreachable=0, path=Path(f"i{seed}.npz"))


ROWS = [_row(i, f"o/r{i % 4}") for i in range(24)]


def test_metrics_of_an_ordered_pool() -> None:
    y = np.array([0, 1, 0, 1])
    m = metrics(y, labels=3)  # one edited function is outside the pool
    assert m["R@1"] == 0 and m["R@5"] == pytest.approx(2 / 3)
    assert m["MRR@20"] == 0.5 and m["A@20"] == 0.0
    # a setter and its getter are two candidates of one labelled function
    both = metrics(np.array([1, 1, 0]), labels=1)
    assert both["R@5"] == 1.0 and both["A@20"] == 1.0


def test_fit_learns_what_the_first_stage_missed() -> None:
    model = fit(ROWS, SMALL[0])
    for r in ROWS[:4]:
        assert int(np.argmax(model.scores(r.x))) == int(np.flatnonzero(r.y)[0])


def test_loro_cv_reports_both_orders_and_a_calibration() -> None:
    report = cross_validate(ROWS, SMALL)
    params, cal, cv = report.chosen.params, report.chosen.calibration, report.to_json()
    assert params == SMALL[0]
    chosen = cv["chosen"]
    assert set(chosen["by_repo"]) == {"o/r0", "o/r1", "o/r2", "o/r3"}
    assert chosen["first_stage"]["R@5"] == 0.0  # the edited one is at rank 10..19
    assert chosen["ranker"]["R@5"] > 0.9
    # every out-of-fold first item is the edited one: a single class, the curve flat at it
    assert chosen["ranker"]["R@1"] == 1.0
    assert cal == Calibration(0.0, 30.0) and cal.probability(-5.0) == pytest.approx(1.0)


def _blind(seed: int, repo: str) -> CorpusRow:
    """Like ``_row``, but no candidate holds the issue's code words: nothing to learn."""
    row = _row(seed, repo)
    x = row.x.copy()
    x[:, BODY] = np.random.default_rng(seed).uniform(0, 1, size=len(x))
    return replace(row, x=x, instance_id=f"b{seed}")


def test_the_calibration_is_platt_of_the_chosen_points_out_of_fold_first_items() -> None:
    rows = [*ROWS, *(_blind(100 + i, f"o/r{i % 4}") for i in range(12))]
    report = cross_validate(rows, SMALL)
    cv, cal = report.to_json(), report.chosen.calibration
    assert 0.0 < cv["chosen"]["ranker"]["R@1"] < 1.0  # the first item is right sometimes
    top = loro(rows, SMALL[0]).top
    assert cal == fit_platt(np.array([s for s, _ in top]), np.array([y for _, y in top]))
    assert cal.slope > 0  # a higher ranker score: likelier the edited function
    assert 0.0 < cal.probability(float(np.median([s for s, _ in top]))) < 1.0


def test_the_prior_keeps_the_first_stage_order_where_trees_are_silent() -> None:
    # no tree can split (every row alike but the rank): the first stage's order stands
    rows = []
    for s in range(6):
        x = np.zeros((10, len(RANKER_FEATURES)))
        x[:, RANK] = np.log(np.arange(1, 11))
        y = np.zeros(10, dtype=np.int64)
        y[s % 3] = 1
        rows.append(CorpusRow(f"p{s}", f"o/r{s % 2}", x, y, 1, 0, Path("p")))
    model = fit(rows, Params(leaves=3, trees=5, min_child=100, prior=1.0))
    assert model.prior == 1.0
    assert np.argsort(-model.scores(rows[0].x), kind="stable").tolist() == list(range(10))


def test_cv_needs_two_repositories() -> None:
    with pytest.raises(InputError, match="2 repositories"):
        cross_validate([r for r in ROWS if r.repo == "o/r0"], SMALL)


def test_excluded_repositories_never_teach() -> None:
    # a SWE-bench repository, a held-out evaluation's one (not SWE-bench), in any case
    banned = [_row(97, "psf/requests"), _row(98, "BurntSushi/ripgrep"), _row(99, "Tokio-rs/Tokio")]
    rows, left_out = training_rows([*ROWS, *banned])
    assert left_out == 3 and rows == [r for r in ROWS if r.labels > 0]


def test_learning_curve_has_every_share() -> None:
    curve = learning_curve(ROWS, SMALL[0], shares=(0.5, 1.0))
    assert [c["share"] for c in curve] == [0.5, 1.0]


def _write(path: Path, ranker: PoolRanker, over: dict[str, object] | None = None) -> Path:
    dump_ranker(
        path, replace(ranker, depth=40, calibration=Calibration(1.0, -1.0)), {"command": "test"}
    )
    if over:
        data = json.loads(path.read_text())
        data.update(over)
        path.write_text(json.dumps(data))
    return path


def test_trees_score_as_lightgbm_does() -> None:
    import lightgbm

    rng = np.random.default_rng(1)
    x = rng.normal(size=(600, len(RANKER_FEATURES)))
    y = (x[:, 0] + 0.5 * x[:, 3] > 0.8).astype(int)
    booster = lightgbm.train(
        {**SMALL[0].lgbm(), "min_data_in_leaf": 5, "num_leaves": 15},
        lightgbm.Dataset(x, y, group=[30] * 20),
        num_boost_round=40,
    )
    trees = TreeEnsemble.from_lightgbm(booster.dump_model())
    test = rng.normal(size=(200, len(RANKER_FEATURES)))
    np.testing.assert_allclose(trees.predict(test), booster.predict(test), rtol=1e-9, atol=1e-9)
    back = TreeEnsemble.from_dict(json.loads(json.dumps(trees.to_dict())))
    np.testing.assert_array_equal(back.predict(test), trees.predict(test))


def test_model_file_round_trips(tmp_path: Path) -> None:
    model = fit(ROWS, SMALL[0])
    back = PoolRanker.load(_write(tmp_path / "m.json", model))
    assert back.depth == 40 and back.calibration == Calibration(1.0, -1.0)
    assert back.meta["command"] == "test"
    np.testing.assert_allclose(back.scores(ROWS[0].x), model.scores(ROWS[0].x))


def test_seeds_average_boosters_fitted_with_their_own_bagging_draws(tmp_path: Path) -> None:
    import lightgbm

    x = np.vstack([r.x for r in ROWS])
    one = [fit(ROWS, replace(SMALL[0], prior=1.0)).scores(x) for _ in range(2)]
    np.testing.assert_array_equal(one[0], one[1])  # one seed: the same draw every time
    bagged = fit(ROWS, replace(SMALL[0], prior=1.0, seeds=3))
    assert len(bagged.trees.roots) == 3 * SMALL[0].trees and bagged.prior == 1.0
    taught = [r for r in ROWS if r.positives > 0]
    tx = np.vstack([r.x for r in taught])
    singles = []
    for seed in range(3):  # each part refitted alone with its seed
        data = lightgbm.Dataset(
            tx,
            np.concatenate([r.y for r in taught]),
            group=[len(r.y) for r in taught],
            init_score=-tx[:, RANK],
        )
        params = replace(SMALL[0], prior=1.0).lgbm(seed)
        booster = lightgbm.train(params, data, num_boost_round=SMALL[0].trees)
        singles.append(TreeEnsemble.from_lightgbm(booster.dump_model()).predict(x))
    assert not np.allclose(singles[0], singles[1])  # the seeds draw differently
    np.testing.assert_allclose(bagged.trees.predict(x), np.mean(singles, axis=0), atol=1e-9)
    np.testing.assert_allclose(bagged.scores(x), np.mean(singles, axis=0) - x[:, RANK], atol=1e-9)
    back = PoolRanker.load(_write(tmp_path / "bagged.json", bagged))
    np.testing.assert_allclose(back.scores(x), bagged.scores(x))
    with pytest.raises(InputError, match="seeds"):
        fit(ROWS, replace(SMALL[0], seeds=0))


def test_a_recipe_records_its_seeds(tmp_path: Path) -> None:
    model = fit(ROWS, SMALL[0])
    params = {"leaves": 7, "trees": 30, "learning_rate": 0.05, "min_child": 5, "prior": 0.0}
    bagged = _write(tmp_path / "bagged.json", model, {"params": {**params, "seeds": 5}})
    assert recipe_of(bagged) == (Params(7, 30, min_child=5, seeds=5), ())
    older = _write(tmp_path / "older.json", model, {"params": params})  # before seeds
    assert recipe_of(older) == (Params(7, 30, min_child=5), ())


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"schema": 2}, "schema 2"),
        ({"kind": "rerank"}, "not 'pool-ranker'"),
        ({"features": ["dense_cos", "log_rank"]}, "other features"),
        ({"features": ["log_rank"]}, "not the 1 it names"),
        ({"trees": "not trees"}, "no trees"),
        (
            {
                "trees": {
                    "feature": [0],
                    "threshold": [0.5],
                    "left": [3],
                    "right": [0],
                    "value": [0.0],
                    "roots": [0],
                    "depth": 1,
                    "n_features": 42,
                }
            },
            "unreadable trees",
        ),
        ({"depth": 0}, "depth"),
        ({"prior": "high"}, "prior"),
    ],
)
def test_model_file_errors_name_the_fix(
    tmp_path: Path, over: dict[str, object], message: str
) -> None:
    path = _write(tmp_path / "m.json", fit(ROWS, SMALL[0]), over)
    with pytest.raises(WeightsFormatError, match=message) as err:
        PoolRanker.load(path)
    assert "spider train ranker --write-weights" in str(err.value) or "weights, not" in str(
        err.value
    )


def test_weak_rows_teach_but_never_score_nor_leak_their_repository() -> None:
    real = [r for r in ROWS if r.repo in ("o/r0", "o/r1")]

    def misleading(seed: int, repo: str) -> CorpusRow:
        """Weak labels that contradict the real ones: the first stage's first candidate is
        the edited one, and the candidate holding the code words is not."""
        row = _row(seed, repo)
        y = np.zeros_like(row.y)
        y[0] = 1
        return replace(row, instance_id=f"w{seed}", y=y)

    weak_same = [misleading(50 + i, "o/r0") for i in range(30)]
    weak_other = [misleading(90 + i, "o/h") for i in range(2)]
    assert with_weak(real[:2], [real[2]], weak_same + weak_other) == [*real[:2], *weak_other]
    # two folds (o/r0, o/r1): o/r0's weak rows may only teach the fold that holds out o/r1
    alone = loro(real, SMALL[0], weak=()).report
    mixed = loro(real, SMALL[0], weak=weak_same).report
    assert mixed["instances"] == alone["instances"] == len(real)  # weak rows are never scored
    assert mixed["by_repo"]["o/r1"] != alone["by_repo"]["o/r1"]
    assert mixed["by_repo"]["o/r0"] == alone["by_repo"]["o/r0"]


HIST = [RANKER_FEATURES.index(n) for n in HISTORY_FEATURES]


def _history_row(seed: int, repo: str) -> CorpusRow:
    """The edited candidate is the one whose earlier commits' messages match the issue."""
    row = _blind(seed, repo)
    x = row.x.copy()
    x[:, HIST] = 0.0
    x[np.flatnonzero(row.y)[0], HIST[0]] = 1.0
    return replace(row, x=x)


def test_a_family_left_out_is_never_read() -> None:
    rows = [_history_row(i, f"o/r{i % 4}") for i in range(24)]
    with_history = fit(rows, SMALL[0])
    assert with_history.reads(HISTORY_FEATURES)
    blind = without(rows, ["history"])
    assert not any(r.x[:, HIST].any() for r in blind) and rows[0].x[:, HIST].any()
    assert not fit(blind, SMALL[0]).reads(HISTORY_FEATURES)
    assert all(a is b for a, b in zip(without(rows, []), rows, strict=True))
    with pytest.raises(InputError, match="unknown feature family churn; known: history"):
        without(rows, ["churn"])


def test_score_pools_measures_on_pools_it_never_saw() -> None:
    rows = [_history_row(i, f"o/r{i % 4}") for i in range(24)]
    model = fit(rows[:16], SMALL[0])
    bench = [replace(r, repo="psf/requests") for r in rows[16:]]
    report = score_pools(model, bench)  # benchmark repositories may be measured
    assert report["instances"] == 8 and set(report["by_repo"]) == {"psf/requests"}
    assert report["ranker"]["R@1"] > report["first_stage"]["R@1"]
    with pytest.raises(InputError, match="no pool to score"):
        score_pools(model, [replace(r, labels=0) for r in bench])


def test_an_older_model_file_reads_the_features_it_knows(tmp_path: Path) -> None:
    """A file fitted before the history features existed names the first 42: it loads,
    scores full rows, and never asks for history."""
    old = len(RANKER_FEATURES) - len(HISTORY_FEATURES)
    rows = [replace(r, x=r.x[:, :old]) for r in ROWS]
    model = fit(rows, SMALL[0])
    path = _write(tmp_path / "old.json", model, {})
    body = json.loads(path.read_text())
    body["features"] = list(RANKER_FEATURES[:old])
    path.write_text(json.dumps(body))
    loaded = PoolRanker.load(path)
    assert loaded.trees.n_features == old and not loaded.reads(HISTORY_FEATURES)
    full = ROWS[0].x
    assert np.allclose(loaded.scores(full), model.scores(full[:, :old]))


def test_dev_evidence_compares_the_candidate_with_its_predecessor_per_dev_set() -> None:
    rows = [_history_row(i, f"o/r{i % 4}") for i in range(24)]
    good = fit(rows[:16], SMALL[0])
    blind = fit(without(rows[:16], ["history"]), SMALL[0])  # cannot see what marks the edit
    dev = {"lite": rows[16:20], "multi": rows[20:]}
    better = dev_evidence(good, blind, dev)
    assert set(better) == {"lite", "multi"}
    assert better["lite"]["candidate"]["MRR@20"] > better["lite"]["predecessor"]["MRR@20"]
    assert better["lite"]["lower"] == better["multi"]["lower"] == []
    assert ship_refusal(better) is None
    worse = dev_evidence(blind, good, dev)
    assert "MRR@20" in worse["lite"]["lower"]
    assert "lower than the shipped ranker" in str(ship_refusal(worse))
    # one dev set is not enough evidence to ship, even when it is better
    assert "2 development sets" in str(ship_refusal({"lite": better["lite"]}))
    # a family left out of the fit is left out of the candidate's dev rows only
    no_history = dev_evidence(blind, good, dev, ["history"])
    assert no_history["lite"]["candidate"] == worse["lite"]["candidate"]
    assert SHIP_METRICS == ("R@20", "MRR@20")


def test_the_model_file_names_the_dev_evidence_it_was_chosen_on(tmp_path: Path) -> None:
    rows = [_history_row(i, f"o/r{i % 4}") for i in range(24)]
    report = cross_validate(rows[:16], grid=SMALL)
    params, calibration = report.chosen.params, report.chosen.calibration
    cv = report.to_json()
    cv["data"] = {"total": {"instances": 16}}
    model = replace(fit(rows[:16], params), calibration=calibration)
    cv["dev"] = dev_evidence(model, None, {"lite": rows[16:20], "multi": rows[20:]})
    back = PoolRanker.load(write_ranker(tmp_path / "m.json", model, cv, "spider train ranker"))
    assert set(back.meta["dev"]) == {"lite", "multi"}
    assert back.meta["dev"]["multi"]["instances"] == 4
    assert "predecessor" not in back.meta["dev"]["lite"]  # nothing was replaced


def test_a_model_files_recipe_names_the_families_it_never_read(tmp_path: Path) -> None:
    rows = [_history_row(i, f"o/r{i % 4}") for i in range(16)]
    model = fit(rows, SMALL[0])
    params = {"leaves": 7, "trees": 30, "learning_rate": 0.05, "min_child": 5, "prior": 1.0}
    new = _write(tmp_path / "new.json", model, {"params": params})
    assert recipe_of(new) == (Params(7, 30, min_child=5, prior=1.0), ())
    older = [n for n in RANKER_FEATURES if n not in HISTORY_FEATURES]  # before history existed
    old = _write(tmp_path / "old.json", model, {"params": params, "features": older})
    assert recipe_of(old) == (Params(7, 30, min_child=5, prior=1.0), ("history",))
    assert recipe_of(_write(tmp_path / "bare.json", model)) is None  # no params recorded


def test_recipes_are_compared_on_the_same_folds_instance_by_instance() -> None:
    rows = [_history_row(i, f"o/r{i % 4}") for i in range(24)]
    same = versus_recipe(rows, (SMALL[0], ()), (SMALL[0], ()), folds=2)
    assert all(same[k]["delta"] == 0.0 for k in ("R@5", "R@20", "MRR@20"))
    assert same["baseline"]["without"] == [] and same["baseline"]["leaves"] == 7
    # history marks the edited function here: the recipe that reads it wins
    blind = versus_recipe(rows, (SMALL[0], ()), (SMALL[0], ("history",)), folds=2)
    assert blind["MRR@20"]["delta"] > 0 and blind["baseline"]["without"] == ["history"]
    assert blind["MRR@20"]["candidate"] == same["MRR@20"]["candidate"]
    # the candidate's figures from its own CV stand in for fitting it again
    chosen = cross_validate(rows, SMALL[:1], folds=2).chosen
    assert chosen.scored == loro(rows, SMALL[0], folds=2).scored
    reused = versus_recipe(
        rows, (SMALL[0], ()), (SMALL[0], ("history",)), folds=2, candidate_scored=chosen.scored
    )
    assert reused == blind
