"""The one place Redis clients are built from settings: a plain Redis, or Sentinel.

``SPIDER_REDIS_URL`` is either ``redis://[:password@]host:port/db`` or, for a Redis with
failover, the Sentinels in kombu's form ``sentinel://[:password@]host:port;sentinel://host:port``
(the ``/db`` and the password on any of them apply to the master), with
``SPIDER_REDIS_SENTINEL_MASTER`` naming the monitored master. Then:

- the bot's and the worker's own clients (dedupe, locks, slots, tokens, metrics, health) are
  redis-py ``Sentinel(...).master_for(name)``: every new connection asks the Sentinels where
  the master is, so after a failover the next command reaches the new master;
- Celery (broker and results) gets the same URL plus ``master_name`` in its transport
  options (:func:`celery_redis_options`, used by ``contract.broker``).

Import-light: redis only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import redis
from redis.sentinel import Sentinel

from contract.settings import AppSettings

SENTINEL_SCHEME = "sentinel://"
SENTINEL_TIMEOUT_S = 1.0  # a Sentinel answers at once or is down: try the next one


@dataclass(frozen=True)
class SentinelConfig:
    """The Sentinels of a ``sentinel://`` URL, and the database and password of the master."""

    hosts: tuple[tuple[str, int], ...]
    db: int
    password: str | None


def is_sentinel(url: str) -> bool:
    """Whether the URL names Sentinels rather than one Redis."""
    return url.strip().lower().startswith(SENTINEL_SCHEME)


def parse_sentinel_url(url: str) -> SentinelConfig:
    """``sentinel://h1:p1;sentinel://h2:p2/0`` → hosts, db and password (ValueError if bad)."""
    hosts: list[tuple[str, int]] = []
    db, password = 0, None
    for part in filter(None, (p.strip() for p in url.split(";"))):
        if not is_sentinel(part):
            raise ValueError(f"not a sentinel:// URL: {part!r}")
        split = urlsplit(part)
        if not split.hostname:
            raise ValueError(f"a sentinel:// URL without a host: {part!r}")
        hosts.append((split.hostname, split.port or 26379))
        if split.path.strip("/"):
            db = int(split.path.strip("/"))
        if split.password:
            password = unquote(split.password)
    if not hosts:
        raise ValueError("no Sentinel in the URL")
    return SentinelConfig(tuple(hosts), db, password)


def redis_client(settings: AppSettings, *, timeout_s: float) -> redis.Redis:
    """A client of the app's Redis (the master, through Sentinel when configured)."""
    url = settings.redis_url
    if not is_sentinel(url):
        return redis.Redis.from_url(url, socket_timeout=timeout_s,
                                    socket_connect_timeout=timeout_s)
    conf = parse_sentinel_url(url)
    sentinel = Sentinel(
        list(conf.hosts),
        socket_timeout=SENTINEL_TIMEOUT_S,
        socket_connect_timeout=SENTINEL_TIMEOUT_S,
        sentinel_kwargs={"socket_timeout": SENTINEL_TIMEOUT_S,
                         "socket_connect_timeout": SENTINEL_TIMEOUT_S},
    )
    return sentinel.master_for(
        settings.redis_sentinel_master,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        db=conf.db,
        password=conf.password,
    )


def celery_redis_options(settings: AppSettings) -> dict[str, Any]:
    """Transport options Celery's broker and result backend need for this URL (Sentinel:
    the master's name and short timeouts towards the Sentinels; plain Redis: none)."""
    if not is_sentinel(settings.redis_url):
        return {}
    parse_sentinel_url(settings.redis_url)  # refuse a malformed URL here, not in kombu
    return {
        "master_name": settings.redis_sentinel_master,
        "sentinel_kwargs": {"socket_timeout": SENTINEL_TIMEOUT_S,
                            "socket_connect_timeout": SENTINEL_TIMEOUT_S},
    }
