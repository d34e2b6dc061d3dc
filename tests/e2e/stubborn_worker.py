"""The real worker (``celery -A tests.e2e.stubborn_worker worker``) with an engine that
does not stop at the soft time limit, as a C extension that never returns would: it
ignores ``SoftTimeLimitExceeded`` and sleeps on, so only the hard time limit ends the run.

- ``index`` is stubborn unless the first stage is BM25 (the cheaper settings of a run
  after a hard-limit kill): the first run is killed, the cheaper one finishes;
- ``locate`` is stubborn for an issue whose title holds ``[always]``: both runs are killed.
"""

from __future__ import annotations

import time
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from spider.models import Issue, Localization
from spider.settings import EngineSettings
from worker import tasks
from worker.celery_app import app
from worker.engine import SpiderEngine
from worker.mirror import Checkout

STUBBORN_S = 300.0  # far past any hard limit a test sets


def _stubborn() -> None:
    deadline = time.monotonic() + STUBBORN_S
    while time.monotonic() < deadline:
        try:
            time.sleep(0.5)
        except SoftTimeLimitExceeded:
            continue


class StubbornEngine(SpiderEngine):
    """See the module docstring."""

    def index(self, checkout: Checkout, settings: EngineSettings) -> Any:
        if settings.first_stage != "bm25":
            _stubborn()
        return super().index(checkout, settings)

    def index_for_issue(self, checkout: Checkout, settings: EngineSettings, *,
                        embed_max: int) -> tuple[Any, bool]:
        if settings.first_stage != "bm25":
            _stubborn()
        return super().index_for_issue(checkout, settings, embed_max=embed_max)

    def locate(self, index: Any, issue: Issue, settings: EngineSettings) -> Localization:
        if "[always]" in issue.title:
            _stubborn()
        return super().locate(index, issue, settings)


tasks.SpiderEngine = StubbornEngine  # type: ignore[misc]  # deps() builds it by this name
__all__ = ["app"]
