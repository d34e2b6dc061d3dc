"""Exceptions raised by the worker, split into what a retry may fix and what it cannot.

The tree::

    WorkerError                     base of everything the worker raises on purpose
    ├── TransientError              retry the task later, with backoff
    │   ├── GitHubUnavailable       GitHub answered 5xx, timed out or was unreachable
    │   ├── RateLimited             GitHub asked us to wait (``retry_after`` seconds)
    │   ├── Busy                    another job holds the issue's or repository's lock
    │   └── FetchFailed             git fetch failed in a way that may pass (network)
    └── PermanentError              retrying will not help: log, and end the job
        ├── GitHubRefused           GitHub answered 4xx (gone, forbidden, invalid)
        ├── RepositoryTooLarge      the repository exceeds SPIDER_MAX_REPO_KB
        ├── UnsafeRepository        its name or URL is not one we fetch from
        └── RenderError             the comment could not be rendered in full

The engine's own ``spider.errors.TransientError``/``PermanentError`` are treated the same
way; :func:`is_transient` answers for both trees.
"""

from __future__ import annotations

from spider import errors as engine_errors


class WorkerError(Exception):
    """Base class for errors raised deliberately by the worker."""


class TransientError(WorkerError):
    """A failure that may go away when the task is retried."""

    retry_after: float | None = None


class GitHubUnavailable(TransientError):
    """GitHub answered 5xx, timed out, or could not be reached."""


class RateLimited(TransientError):
    """GitHub's rate limit: retry after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Busy(TransientError):
    """Another job holds a lock this job needs."""


class FetchFailed(TransientError):
    """``git fetch`` failed (network, remote hiccup)."""


class PermanentError(WorkerError):
    """A failure that retrying cannot fix."""


class GitHubRefused(PermanentError):
    """GitHub answered a 4xx other than a rate limit."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class RepositoryTooLarge(PermanentError):
    """The repository is larger than SPIDER_MAX_REPO_KB."""


class UnsafeRepository(PermanentError):
    """The repository name or fetch URL is not one the worker accepts."""


class RenderError(PermanentError):
    """The comment could not be rendered completely; nothing is posted."""


def is_transient(exc: BaseException) -> bool:
    """Whether a retry may succeed: the worker's or the engine's transient errors."""
    return isinstance(exc, TransientError | engine_errors.TransientError)
