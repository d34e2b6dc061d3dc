"""The one estimator shape: fit(x, y, groups) then predict(x); one rule for a single class."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from spider.errors import InputError
from spider.learn.estimator import Estimator, Logistic, single_class
from spider.learn.ranker import LambdaRank, Params
from spider.rank.calibration import LOGIT_CLAMP
from spider.rank.features import RANKER_FEATURES


def _separable(seed: int = 0, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)) * np.array([1.0, 10.0, 0.1])
    y = (x[:, 0] + 0.2 * x[:, 1] + rng.normal(scale=0.5, size=n) > 0).astype(int)
    return x, y


def test_single_class_names_the_class_and_no_rows_count_as_no_positive() -> None:
    assert single_class(np.array([1, 1])) == 1
    assert single_class(np.array([0, 0, 0])) == 0
    assert single_class(np.array([], dtype=int)) == 0
    assert single_class(np.array([0, 1])) is None


def test_logistic_matches_scikit_learn_on_the_raw_scale() -> None:
    from sklearn.linear_model import LogisticRegression

    x, y = _separable()
    model = Logistic(c=1.0).fit(x, y)
    ref = LogisticRegression(C=1.0, max_iter=1000).fit(x, y)
    np.testing.assert_array_equal(model.coef, ref.coef_[0])
    assert model.intercept == float(ref.intercept_[0])
    np.testing.assert_allclose(model.predict(x), ref.decision_function(x), rtol=1e-12)


def test_standardised_fit_scores_like_a_fit_on_standard_scale() -> None:
    from sklearn.linear_model import LogisticRegression

    x, y = _separable(1)
    model = Logistic(c=0.1, standardise=True).fit(x, y)
    mu, sd = x.mean(0), x.std(0)
    ref = LogisticRegression(C=0.1, max_iter=1000).fit((x - mu) / sd, y)
    np.testing.assert_allclose(model.predict(x), ref.decision_function((x - mu) / sd), atol=1e-9)
    assert model.named(["a", "b", "c"])["a"] > 0


@pytest.mark.parametrize(("label", "intercept"), [(0, -LOGIT_CLAMP), (1, LOGIT_CLAMP)])
def test_a_single_class_gives_a_flat_model_at_that_class(label: int, intercept: float) -> None:
    x, _ = _separable()
    model = Logistic(c=1.0).fit(x, np.full(len(x), label))
    assert model.flat and model.intercept == intercept
    assert model.coef.tolist() == [0.0, 0.0, 0.0]
    assert set(model.predict(x).tolist()) == {intercept}


def test_no_rows_is_a_flat_model_at_no_edit() -> None:
    model = Logistic(c=1.0).fit(np.zeros((0, 2)), np.zeros(0))
    assert model.flat and model.intercept == -LOGIT_CLAMP and len(model.coef) == 2


def test_lambdarank_takes_its_queries_from_groups() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(200, len(RANKER_FEATURES)))
    y = (x[:, 5] > 1.0).astype(int)
    groups = np.repeat(np.arange(10), 20)
    est = LambdaRank(Params(leaves=3, trees=10, min_child=5)).fit(x, y, groups)
    assert est.model.depth == 20  # the largest query
    scores = est.predict(x)
    assert scores.shape == (200,) and np.corrcoef(scores, x[:, 5])[0, 1] > 0.5
    with pytest.raises(InputError, match="query"):
        LambdaRank(Params(leaves=3, trees=10)).fit(x, y)
    with pytest.raises(InputError, match="not been fitted"):
        LambdaRank(Params(leaves=3, trees=10)).predict(x)


ESTIMATORS: list[Estimator] = [  # every class in spider.learn with fit/predict (mypy checks
    Logistic(c=1.0),  # the annotation; this test checks what they do at run time)
    LambdaRank(Params(leaves=3, trees=5, min_child=5)),
]


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_every_estimator_has_the_one_shape(est: Estimator) -> None:
    x, y = _separable()
    groups = np.repeat(np.arange(len(x) // 20), 20)  # queries of 20 rows (pointwise: unused)
    params = list(inspect.signature(type(est).fit).parameters.values())
    assert [p.name for p in params] == ["self", "x", "y", "groups"]
    assert params[3].default is None  # a pointwise fit is called without groups
    assert est.fit(x, y, groups=groups) is est  # fit returns the fitted estimator itself
    scores = est.predict(x)
    assert isinstance(scores, np.ndarray) and scores.shape == (len(x),)
    assert scores.dtype.kind == "f" and np.isfinite(scores).all()
