"""Redis locks: one job per issue at a time, one indexer per repository at a time."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import redis
from redis.exceptions import LockError

from worker.errors import Busy

log = logging.getLogger(__name__)
KEY_PREFIX = "spider:lock:"


def issue_lock_name(repo: str, number: int) -> str:
    """The lock that serialises jobs on one issue (so only one comment is ever created)."""
    return f"issue:{repo}#{number}"


def repo_lock_name(repo: str) -> str:
    """The lock that serialises fetching and indexing one repository."""
    return f"repo:{repo}"


@contextmanager
def held(client: redis.Redis, name: str, *, ttl_s: float, wait_s: float) -> Iterator[None]:
    """Hold ``name`` for the block; raise Busy if it stays taken for ``wait_s``.

    ``ttl_s`` bounds how long a crashed holder can block others: the hard time limit.
    """
    lock = client.lock(KEY_PREFIX + name, timeout=ttl_s, blocking_timeout=wait_s,
                       thread_local=False)
    if not lock.acquire(blocking=wait_s > 0):
        raise Busy(f"{name} is held by another job")
    try:
        yield
    finally:
        try:
            lock.release()
        except LockError:
            log.warning("lock expired before release", extra={"lock": name})
