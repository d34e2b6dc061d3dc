"""What a job uses, in one place: :class:`Deps`.

Everything a job touches (settings, Redis, GitHub, git mirrors, the engine, the store, the
index queue) comes in through it, so tests can replace GitHub, git or the engine. The tasks
build the real ones once per worker process (``worker.tasks.deps``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from contract.jobs import IndexJob, IssueJob
from contract.settings import AppSettings
from worker.engine import Engine
from worker.github import GitHubClient, RetryPolicy
from worker.mirror import Mirrors


@dataclass
class Deps:
    """What one job uses; the task builds the real ones once per worker process."""

    settings: AppSettings
    redis: redis.Redis
    github: Callable[[int], GitHubClient]
    mirrors: Mirrors
    engine: Engine
    policy: RetryPolicy
    store: Any = None  # worker.store.Store: records the posted comment (None: not recorded)
    # queues an index job unless one already waits for the repository (None: never queued)
    queue_index: Callable[[IndexJob], None] | None = None
    # queues an issue's LLM pass, run after its first answer (None: never queued)
    queue_llm: Callable[[IssueJob], None] | None = None
