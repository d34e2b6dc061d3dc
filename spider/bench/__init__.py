"""``spider bench``: measure localization on SWE-bench-style data and on a repository's history.

Modules: ``methods`` (method -> engine settings), ``config`` (what a run is asked to do),
``run`` (the run loop: instances x methods -> prediction rows), ``store``
(predictions/errors/summary files, resume, the summary itself), ``report`` (console and
Markdown tables), ``history`` (fix commits -> a dataset), ``gtcheck`` (ground-truth
checks), ``coverage`` (graph fidelity), ``speed`` (timings), ``cli`` (the ``spider
bench`` commands). The dataset rows, an instance's index and ground truth and the
metrics are engine modules shared with learning (``spider.eval.dataset``,
``spider.eval.snapshot``, ``spider.eval.metrics``); fitting lives in ``spider.learn``.
"""

from spider.eval.metrics import DEFAULT_KS, aggregate, score_instance

__all__ = ["DEFAULT_KS", "aggregate", "score_instance"]
