"""What is indexed, and what is waiting to be, per repository: Redis keys the bot (which
asks for index jobs) and the worker (which runs them and reads what is indexed) share.

- ``spider:index:pending:{repo}``: the task id of the one index job queued and not yet
  fetching (``SET NX``: at most one waiting per repository). The job clears it when it
  fetches, so a push after that fetch queues a fresh job; a push before it needs none,
  because the waiting job fetches the branch head when it runs (the newest head wins).
- ``spider:index:wanted:{repo}``: the newest head a push announced (logs and tests).
- ``spider:index:indexed:{repo}``: the head indexed in full (``sha``, ``fetched_at`` in
  Redis's clock, ``functions``); written only by a job whose fetch is newer than the one
  recorded, so a slow job on an older head never overwrites a newer one's record.
- ``spider:index:reruns:{repo}``: issue jobs answered from a partial index, re-run once
  the full index is recorded (their comment is then edited in place).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import redis

PREFIX = "spider:index:"
RERUNS_TTL_S = 24 * 3600  # an index that takes longer than a day is not waited for

# KEYS: pending, wanted. ARGV: task id, sha ('' = unknown), pending ttl s.
_REQUEST = """
if ARGV[2] ~= '' then redis.call('SET', KEYS[2], ARGV[2]) end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', tonumber(ARGV[3])) then return 1 end
return 0
"""
# KEYS: pending. ARGV: task id. Delete it only while it is ours.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
# KEYS: indexed. ARGV: sha, fetched_at (microseconds), functions. Newest fetch wins.
_RECORD = """
local t = tonumber(redis.call('HGET', KEYS[1], 'fetched_at') or '0')
if t > tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'sha', ARGV[1], 'fetched_at', ARGV[2], 'functions', ARGV[3])
return 1
"""


def pending_key(repo: str) -> str:
    return f"{PREFIX}pending:{repo}"


def wanted_key(repo: str) -> str:
    return f"{PREFIX}wanted:{repo}"


def indexed_key(repo: str) -> str:
    return f"{PREFIX}indexed:{repo}"


def reruns_key(repo: str) -> str:
    return f"{PREFIX}reruns:{repo}"


@dataclass(frozen=True)
class IndexedHead:
    """The head of a repository that was indexed in full, and when it was fetched."""

    sha: str
    fetched_at: int  # Redis's clock, microseconds
    functions: int


def request(client: redis.Redis, repo: str, task_id: str, sha: str, ttl_s: int) -> bool:
    """Record ``sha`` as the newest head asked for; True when the caller must queue an index
    job (none is waiting), False when one is already waiting (it will fetch the newest)."""
    return bool(client.eval(_REQUEST, 2, pending_key(repo), wanted_key(repo), task_id, sha,
                            int(ttl_s)))


def release(client: redis.Redis, repo: str, task_id: str) -> None:
    """Forget a request whose job could not be queued (or that starts fetching now)."""
    client.eval(_RELEASE, 1, pending_key(repo), task_id)


def pending(client: redis.Redis, repo: str) -> str | None:
    """The task id of the index job waiting for this repository, if any."""
    value = client.get(pending_key(repo))
    return value.decode() if isinstance(value, bytes) else value


def wanted(client: redis.Redis, repo: str) -> str | None:
    """The newest head a push announced, if any."""
    value = client.get(wanted_key(repo))
    return value.decode() if isinstance(value, bytes) else value


def now_us(client: redis.Redis) -> int:
    """Redis's clock in microseconds: one clock for every worker of the fleet."""
    seconds, micros = client.time()
    return int(seconds) * 1_000_000 + int(micros)


def record_indexed(client: redis.Redis, repo: str, sha: str, fetched_at: int,
                   functions: int) -> bool:
    """Record ``sha`` as indexed unless a newer fetch was recorded first; True if recorded."""
    return bool(client.eval(_RECORD, 1, indexed_key(repo), sha, int(fetched_at), int(functions)))


def indexed(client: redis.Redis, repo: str) -> IndexedHead | None:
    """The head indexed in full, or None when the repository was never indexed."""
    raw = client.hgetall(indexed_key(repo))
    if not raw:
        return None
    d = {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
         for k, v in raw.items()}
    return IndexedHead(sha=d.get("sha", ""), fetched_at=int(d.get("fetched_at", 0)),
                       functions=int(d.get("functions", 0)))


def add_rerun(client: redis.Redis, repo: str, issue_number: int, kwargs: dict[str, Any]) -> None:
    """Re-run this issue job once the repository's full index is recorded."""
    key = reruns_key(repo)
    pipe = client.pipeline()
    pipe.hset(key, str(issue_number), json.dumps(kwargs, sort_keys=True))
    pipe.expire(key, RERUNS_TTL_S)
    pipe.execute()


def take_reruns(client: redis.Redis, repo: str) -> list[dict[str, Any]]:
    """The issue jobs waiting for this repository's index, removed (at most once each)."""
    key = reruns_key(repo)
    pipe = client.pipeline(transaction=True)
    pipe.hgetall(key)
    pipe.delete(key)
    raw, _ = pipe.execute()
    return [json.loads(v) for _, v in sorted(raw.items())]
