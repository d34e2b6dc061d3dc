"""``spider bench``: measure localization on SWE-bench-style data and on a repository's history.

Modules: ``metrics`` (Recall/Acc/MRR@K), ``ids`` (the dataset's id convention),
``dataset`` (JSONL rows), ``groundtruth`` (patch -> functions), ``methods`` (method ->
engine settings), ``run`` (the run loop: instances x methods -> prediction rows),
``store`` (predictions/errors/summary files, resume, the summary itself), ``report``
(console and Markdown tables), ``history`` (fix commits -> a dataset), ``gtcheck``
(ground-truth checks), ``cv`` (leave-one-repository-out folds), ``tune`` / ``fit`` /
``fit_rerank`` (fitting on dev data), ``cli`` (the ``spider bench`` commands).
"""

from spider.metrics import DEFAULT_KS, aggregate, score_instance

__all__ = ["DEFAULT_KS", "aggregate", "score_instance"]
