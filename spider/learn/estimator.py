"""The one shape of a fit: ``fit(x, y, groups)`` then ``predict(x)``, as scikit-learn has it.

``x`` holds one row of features per item, ``y`` its label (1: the fix edits it) and
``groups`` the group of each row: the query it belongs to for a ranking objective, nothing
for a pointwise one (the repository folds of cross-validation are
:mod:`spider.learn.cv`'s). A fitted estimator turns into the engine's runtime object
(``RerankWeights``, ``OfflineWeights``, ``Calibration``, ``PoolRanker``), which
:mod:`spider.learn.model_file` saves and the engine loads through :mod:`spider.weights`.

:class:`Logistic` is the pointwise fit every logistic model here shares (the selector's
two models, the head model, Platt scaling), with one rule for a single class.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, Self

import numpy as np

from spider.rank.calibration import LOGIT_CLAMP

DEFAULT_MAX_ITER = 1000  # lbfgs iterations: enough for a few dozen features on standard scale


class Estimator(Protocol):
    """What every fit in :mod:`spider.learn` offers."""

    def fit(self, x: np.ndarray, y: np.ndarray, groups: Sequence[object] | None = None) -> Self:
        """Fit on rows ``x`` with labels ``y`` (``groups``: each row's group, if it uses any)."""
        ...

    def predict(self, x: np.ndarray) -> np.ndarray:
        """A score per row of ``x`` (higher: likelier edited)."""
        ...


def single_class(y: np.ndarray) -> int | None:
    """The one label ``y`` holds (0 or 1; no rows count as no positive), or None when it
    holds both."""
    values = set(np.asarray(y).astype(int).tolist())
    if len(values) > 1:
        return None
    return values.pop() if values else 0


@dataclass
class Logistic:
    """L2-regularised logistic regression, its coefficients on the raw feature scale.

    ``standardise`` fits on features scaled to mean 0 and unit deviation (so that ``c``
    means the same for every feature) and maps the coefficients back. A single class
    cannot place a boundary: the fit is then flat at that class (coefficients 0, intercept
    +-:data:`~spider.rank.calibration.LOGIT_CLAMP`), so every row scores as the data said; no
    rows at all count as no positive. ``x`` is used as given (no cast), so a fit gives the
    same numbers as scikit-learn on the same array.
    """

    c: float
    max_iter: int = DEFAULT_MAX_ITER
    standardise: bool = False
    coef: np.ndarray = field(default_factory=lambda: np.zeros(0))
    intercept: float = 0.0

    def fit(self, x: np.ndarray, y: np.ndarray, groups: Sequence[object] | None = None) -> Logistic:
        """Fit on ``x`` / ``y`` (``groups`` unused: a pointwise model)."""
        y = np.asarray(y).astype(int)
        only = single_class(y)
        if only is not None:
            self.coef = np.zeros(np.shape(x)[1] if np.ndim(x) == 2 else 0)
            self.intercept = LOGIT_CLAMP if only == 1 else -LOGIT_CLAMP
            return self
        from sklearn.linear_model import LogisticRegression

        if not self.standardise:
            model = LogisticRegression(C=self.c, max_iter=self.max_iter).fit(x, y)
            self.coef = model.coef_[0].astype(np.float64)
            self.intercept = float(model.intercept_[0])
            return self
        mu, sd = x.mean(0), x.std(0)
        sd[sd == 0] = 1.0
        model = LogisticRegression(C=self.c, max_iter=self.max_iter).fit((x - mu) / sd, y)
        self.coef = model.coef_[0] / sd
        self.intercept = float(model.intercept_[0] - (self.coef * mu).sum())
        return self

    @property
    def flat(self) -> bool:
        """Whether the fit saw a single class (see the class docstring)."""
        return abs(self.intercept) == LOGIT_CLAMP and not self.coef.any()

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The log-odds of each row of ``x``."""
        logits: np.ndarray = np.asarray(x, dtype=np.float64) @ self.coef + self.intercept
        return logits

    def named(self, names: Sequence[str]) -> dict[str, float]:
        """The coefficients by feature name (``names`` in column order)."""
        return {n: float(w) for n, w in zip(names, self.coef, strict=True)}
