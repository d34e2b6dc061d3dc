"""Leases in Redis: one job per issue at a time, one indexer per repository at a time, and
at most N jobs per installation and per repository (counting slots).

Every lease expires ``ttl_s`` after its holder last renewed it, and a live holder renews it
every third of that from a background thread. So a worker that is killed (SIGKILL, out of
memory, a lost machine) frees what it held within ``ttl_s``, while a job that runs for
an hour keeps its lease for that hour. Slot expiry uses Redis's clock, not the workers'.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import redis
from redis.exceptions import LockError

from worker.errors import Busy, Throttled

log = logging.getLogger(__name__)
KEY_PREFIX = "spider:lock:"
SLOTS_PREFIX = "spider:slots:"
RENEWALS_PER_TTL = 3  # renew at a third of the TTL: two renewals may fail before it lapses


def issue_lock_name(repo: str, number: int) -> str:
    """The lock that serialises jobs on one issue (so only one comment is ever created)."""
    return f"issue:{repo}#{number}"


def repo_lock_name(repo: str) -> str:
    """The lock that serialises fetching and indexing one repository."""
    return f"repo:{repo}"


def installation_slots_name(installation_id: int) -> str:
    """The slots that cap the jobs of one installation running at once."""
    return f"installation:{installation_id}"


def repo_slots_name(repo: str) -> str:
    """The slots that cap the jobs of one repository running at once."""
    return f"repo:{repo}"


@contextmanager
def _renewing(renew: Callable[[], bool], ttl_s: float, what: str) -> Iterator[None]:
    """Call ``renew`` every ``ttl_s / RENEWALS_PER_TTL`` seconds until the block ends."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(ttl_s / RENEWALS_PER_TTL):
            try:
                if not renew():
                    log.warning("lease lost before its holder finished", extra={"lease": what})
                    return
            except redis.RedisError as exc:  # Redis away for a moment: try again next round
                log.warning("lease renewal failed", extra={"lease": what, "error": type(exc).__name__})

    thread = threading.Thread(target=loop, name=f"lease {what}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


@contextmanager
def held(client: redis.Redis, name: str, *, ttl_s: float, wait_s: float) -> Iterator[None]:
    """Hold lock ``name`` for the block; raise Busy if it stays taken for ``wait_s``.

    ``ttl_s`` bounds how long a dead holder blocks others; a live one renews it.
    """
    lock = client.lock(KEY_PREFIX + name, timeout=ttl_s, blocking_timeout=wait_s,
                       thread_local=False)
    if not lock.acquire(blocking=wait_s > 0):
        raise Busy(f"{name} is held by another job")

    def renew() -> bool:
        try:
            return bool(lock.reacquire())
        except LockError:  # not ours any more (expired, or Redis lost it)
            return False

    try:
        with _renewing(renew, ttl_s, name):
            yield
    finally:
        try:
            lock.release()
        except LockError:
            log.warning("lock expired before release", extra={"lock": name})
        except redis.RedisError as exc:  # it expires by itself
            log.warning("lock release failed", extra={"lock": name, "error": type(exc).__name__})


# KEYS[1]: the slots (a sorted set of holder -> expiry). ARGV: holder, limit, ttl_ms.
# Expired holders are dropped first; Redis's own clock decides what has expired.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local ttl = tonumber(ARGV[3])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ttl * 2)
  return 1
end
return 0
"""
# Renew only a holder still present: one that expired and was dropped has lost its slot.
_RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + ttl, ARGV[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ttl * 2)
  return 1
end
return redis.call('ZSCORE', KEYS[1], ARGV[1]) and 1 or 0
"""


@contextmanager
def slot(client: redis.Redis, name: str, *, limit: int, ttl_s: float) -> Iterator[None]:
    """Hold one of ``limit`` slots of ``name`` for the block, or raise Throttled at once."""
    key = SLOTS_PREFIX + name
    holder = uuid.uuid4().hex
    ttl_ms = int(ttl_s * 1000)
    if not client.eval(_ACQUIRE, 1, key, holder, limit, ttl_ms):
        raise Throttled(f"{name} already runs {limit} job(s)")
    try:
        with _renewing(lambda: bool(client.eval(_RENEW, 1, key, holder, ttl_ms)), ttl_s, name):
            yield
    finally:
        try:
            client.zrem(key, holder)
        except redis.RedisError as exc:  # it expires by itself
            log.warning("slot release failed", extra={"slot": name, "error": type(exc).__name__})


def slot_holders(client: redis.Redis, name: str) -> int:
    """How many holders ``name`` has now (expired ones included until the next acquire)."""
    return int(client.zcard(SLOTS_PREFIX + name))
