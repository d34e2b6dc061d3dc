"""``spider train``: one home for everything the engine learns.

Shared parts: :mod:`~spider.learn.estimator` (the one shape of a fit, ``fit(x, y,
groups)`` / ``predict(x)``, and :class:`~spider.learn.estimator.Logistic`),
:mod:`~spider.learn.cv` (repository folds), :mod:`~spider.learn.platt` (the one Platt
calibrator) and :mod:`~spider.learn.model_file` (the one writer: schema, kind and
provenance in every model file).

Fits: :mod:`~spider.learn.corpus` (the training corpus from other projects' fixes; no
fit ever reads a repository of :mod:`~spider.learn.excluded`),
:mod:`~spider.learn.ranker` (the pool ranker), :mod:`~spider.learn.adapter` (the query
adapter), :mod:`~spider.learn.selector` (the offline selector),
:mod:`~spider.learn.head` (the head re-ranker), :mod:`~spider.learn.calibration` (its
calibration) and :mod:`~spider.learn.fusion` (the first stage's fusion weights);
:mod:`~spider.learn.cli` holds the commands. See ``docs/learning.md``.
"""
