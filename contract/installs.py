"""When the app came to a repository, kept in Redis: the app never backfills old issues.

GitHub says when an installation was created (``GET /app/installations/{id}``, and the
``installation`` object of ``installation`` and ``installation_repositories`` events), but
not when a repository was added to an existing installation: the bot records that time
when the ``installation_repositories.added`` delivery arrives, and the worker reads it.
Issue events carry only the installation's id, so the rule is applied by the worker
(``worker.plan.before_installation``). Standard library and Redis only.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

import redis

REPO_ADDED_PREFIX = "spider:repo-added:"  # + owner/name -> epoch seconds (the latest addition)
INSTALLATION_CREATED_PREFIX = "spider:installation-created:"  # + id -> epoch seconds


def record_repos_added(client: redis.Redis, repos: Iterable[str], when: datetime) -> None:
    """Remember that these repositories were added to the app at ``when`` (a later
    addition, after a removal, replaces an earlier one)."""
    pipe = client.pipeline()
    for repo in repos:
        pipe.set(REPO_ADDED_PREFIX + repo, str(when.timestamp()))
    pipe.execute()


def repo_added_at(client: redis.Redis, repo: str) -> datetime | None:
    """When the repository was added to an existing installation, if the bot saw it."""
    return _when(client.get(REPO_ADDED_PREFIX + repo))


def remember_installation_created(client: redis.Redis, installation_id: int,
                                  when: datetime) -> None:
    """Cache an installation's ``created_at`` (it never changes)."""
    client.set(f"{INSTALLATION_CREATED_PREFIX}{installation_id}", str(when.timestamp()))


def installation_created_at(client: redis.Redis, installation_id: int) -> datetime | None:
    """An installation's cached ``created_at``, if cached."""
    return _when(client.get(f"{INSTALLATION_CREATED_PREFIX}{installation_id}"))


def _when(raw: bytes | str | None) -> datetime | None:
    if raw is None:
        return None
    try:
        return datetime.fromtimestamp(float(raw), UTC)
    except (TypeError, ValueError, OverflowError):
        return None
