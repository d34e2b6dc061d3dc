"""Exceptions raised by the worker, split into what a retry may fix and what it cannot.

The tree::

    WorkerError                     base of everything the worker raises on purpose
    ├── Delayed                     not a failure: run the job again later (delay_minutes)
    ├── JobTransientError           retry the task later, with backoff
    │   ├── GitHubUnavailable       GitHub answered 5xx, timed out or was unreachable
    │   │   └── GitHubUnanswered    no answer at all: the request may still be carried out
    │   ├── RateLimited             GitHub asked us to wait (``retry_after`` seconds)
    │   ├── FetchFailed             git fetch failed in a way that may pass (network)
    │   ├── TokenRejected           GitHub answered 401: the installation token was revoked
    │   └── NotYourTurn             others hold what the job needs: wait, no failure counted
    │       ├── Busy                another job holds the issue's or repository's lock
    │       └── Throttled           the installation or repository runs its maximum of jobs
    └── JobPermanentError           retrying will not help: log, and end the job
        ├── GitHubRefused           GitHub answered 4xx (gone, forbidden, invalid)
        ├── RepositoryTooLarge      the repository exceeds SPIDER_MAX_REPO_KB
        └── UnsafeRepository        its name or URL is not one we fetch from

The engine's own ``spider.errors.EngineTransientError``/``EnginePermanentError`` (among
them ``RenderError``: the comment could not be rendered in full) are treated the same way, and so is Redis being unreachable for a moment (a restart, a failover):
:func:`is_transient` answers for all of them.
"""

from __future__ import annotations

import redis

from spider import errors as engine_errors


class WorkerError(Exception):
    """Base class for errors raised deliberately by the worker."""


class Delayed(WorkerError):
    """Not a failure: the job asks to run again in ``countdown`` seconds with these extra
    keyword arguments (``delay_minutes`` in ``.github/spider.yml``). No slot is held
    meanwhile: the task is published again with a countdown."""

    def __init__(self, countdown: float, kwargs: dict[str, object]) -> None:
        super().__init__(f"run again in {countdown:.0f} s")
        self.countdown = countdown
        self.kwargs = kwargs


class JobTransientError(WorkerError):
    """A failure that may go away when the task is retried."""

    retry_after: float | None = None


class GitHubUnavailable(JobTransientError):
    """GitHub answered 5xx, timed out, or could not be reached."""


class GitHubUnanswered(GitHubUnavailable):
    """No answer at all (a timeout, a dropped connection): GitHub may still be carrying the
    request out."""


class RateLimited(JobTransientError):
    """GitHub's rate limit: retry after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class NotYourTurn(JobTransientError):
    """The job must wait for other jobs; waiting is not a failure (no retry is used up)."""


class Busy(NotYourTurn):
    """Another job holds a lock this job needs."""


class Throttled(NotYourTurn):
    """The installation or the repository already runs as many jobs as it may."""


class TokenRejected(JobTransientError):
    """GitHub answered 401: the cached installation token was revoked or has expired."""


class FetchFailed(JobTransientError):
    """``git fetch`` failed (network, remote hiccup)."""

    refused_by_fsck = False  # set when git's fsck refused an object: that is permanent


class JobPermanentError(WorkerError):
    """A failure that retrying cannot fix."""


class GitHubRefused(JobPermanentError):
    """GitHub answered a 4xx other than a rate limit."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class RepositoryTooLarge(JobPermanentError):
    """The repository is larger than SPIDER_MAX_REPO_KB (the job says so in its comment)."""

    def __init__(self, message: str, size_kb: int, limit_kb: int) -> None:
        super().__init__(message)
        self.size_kb = size_kb
        self.limit_kb = limit_kb


class UnsafeRepository(JobPermanentError):
    """The repository name or fetch URL is not one the worker accepts."""


def is_transient(exc: BaseException) -> bool:
    """Whether a retry may succeed: the worker's or the engine's transient errors, or Redis
    (locks, slots, the token cache) unreachable or too slow for a moment."""
    return isinstance(exc, JobTransientError | engine_errors.EngineTransientError
                      | redis.ConnectionError | redis.TimeoutError)
