"""``spider bench``: measure localization on SWE-bench-style data and on a repository's history.

Modules: ``metrics`` (Recall/Acc/MRR@K), ``ids`` (the dataset's id convention),
``dataset`` (JSONL rows), ``groundtruth`` (patch -> functions), ``methods`` (method ->
engine settings), ``runner`` (instances x methods -> predictions and summary),
``history`` (fix commits -> a dataset), ``cli`` (the ``spider bench`` commands).
"""

from spider.bench.metrics import DEFAULT_KS, aggregate, score_instance

__all__ = ["DEFAULT_KS", "aggregate", "score_instance"]
