"""Ranking after the first stage: the learned models' features (``features``), the pool
ranker (``pool_rank``, its trees in ``pool_ranker.json``), the head model (``rerank``,
``rerank_weights.json`` and ``head_calibration.json``), the cross-encoder (``cross``) and
the one Platt scaling they share (``calibration``). Reads the first stage's record; never
retrieves."""
