"""``spider train``: learn the engine's models from real fixes of other projects.

``corpus`` turns issues with known fixes into per-instance candidate pools with features
and labels (cached, resumable); ``ranker`` fits the pool ranker (``spider.pool_rank``) on
them by leave-one-repository-out cross-validation. Nothing from the benchmark's
repositories is ever fitted on (:data:`spider.learn.corpus.BENCHMARK_REPOS`).
"""
