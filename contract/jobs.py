"""The job the bot hands to the worker: one issue, named by ids only.

Import-light (standard library only): the bot enqueues by task name without importing the
worker, and the worker re-reads every piece of state from GitHub.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

TASK_NAME = "spider.localize_issue"
QUEUE = "spider"

# A trigger is what caused the job: an issues action, or the id of a `/spider` comment.
ISSUE_ACTIONS = ("opened", "reopened", "edited")
_TRIGGER = re.compile(r"^(issues\.(opened|reopened|edited)|comment:[0-9]{1,20})$")
# GitHub's rules: owners are alphanumeric with inner hyphens; names add '.', '_' and '-'.
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9_.-]{1,100}$")


def issue_trigger(action: str) -> str:
    """The trigger of an ``issues`` event with this action."""
    return f"issues.{action}"


def comment_trigger(comment_id: int) -> str:
    """The trigger of a ``/spider`` command posted as comment ``comment_id``."""
    return f"comment:{comment_id}"


def comment_id_of(trigger: str) -> int | None:
    """The comment id of a command trigger, else None."""
    return int(trigger.split(":", 1)[1]) if trigger.startswith("comment:") else None


def valid_repo(full_name: str) -> bool:
    """Whether ``owner/name`` is a plain GitHub repository name (no path tricks)."""
    return bool(_REPO.match(full_name)) and full_name.split("/")[1] not in (".", "..")


class _InRepository:
    """What every job says about its repository (``repo`` is ``owner/name``)."""

    repo: str

    @property
    def owner(self) -> str:
        """The repository's owner login."""
        return self.repo.split("/", 1)[0]

    @property
    def name(self) -> str:
        """The repository's name without the owner."""
        return self.repo.split("/", 1)[1]


@dataclass(frozen=True)
class IssueJob(_InRepository):
    """Localize one issue: the arguments of the ``localize_issue`` task."""

    installation_id: int
    repo: str
    issue_number: int
    delivery_id: str
    trigger: str

    def __post_init__(self) -> None:
        if not valid_repo(self.repo):
            raise ValueError(f"not a repository name: {self.repo!r}")
        if not _TRIGGER.match(self.trigger):
            raise ValueError(f"not a trigger: {self.trigger!r}")
        if self.issue_number < 1 or self.installation_id < 1:
            raise ValueError("issue number and installation id must be positive")

    def as_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the task."""
        return asdict(self)


# --- fixes: a merged pull request (or a closed issue) scored against our comment ---
FIX_TASK_NAME = "spider.score_fix"
# A queue of its own: a worker started with ``-Q spider`` never runs a scoring job, so
# scoring can never delay an issue job (docs/install.md); a plain worker consumes both.
FIX_QUEUE = "spider-fixes"


@dataclass(frozen=True)
class FixJob(_InRepository):
    """Score what a fix changed against the functions our comment listed.

    Either ``pull_number`` (a merged pull request: every issue it closes) or
    ``issue_number`` (a closed issue: the merged pull requests that closed it).
    """

    installation_id: int
    repo: str
    delivery_id: str
    pull_number: int | None = None
    issue_number: int | None = None

    def __post_init__(self) -> None:
        if not valid_repo(self.repo):
            raise ValueError(f"not a repository name: {self.repo!r}")
        if (self.pull_number is None) == (self.issue_number is None):
            raise ValueError("a fix job names a pull request or an issue, not both")
        if self.installation_id < 1 or (self.pull_number or self.issue_number or 0) < 1:
            raise ValueError("numbers and installation id must be positive")

    @property
    def trigger(self) -> str:
        """What caused it, for logs: ``pull_request.merged:N`` or ``issues.closed``."""
        if self.pull_number is not None:
            return f"pull_request.merged:{self.pull_number}"
        return "issues.closed"

    def as_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the task."""
        return asdict(self)


# --- indexing: a repository's default branch indexed before its issues arrive ---
INDEX_TASK_NAME = "spider.index_repository"
# Lowest priority: workers consume queues in the order of QUEUES (strict: see
# contract.broker), and issue workers may be started with ``-Q spider`` only.
INDEX_QUEUE = "spider-index"
# An issue's LLM pass (the list re-read and edited after the first answer): after first
# answers, before fixes and indexing; a fleet may give it workers of its own (-Q spider-llm).
LLM_QUEUE = "spider-llm"
QUEUES = (QUEUE, LLM_QUEUE, FIX_QUEUE, INDEX_QUEUE)  # a plain worker polls them in this order
INDEX_REASONS = ("installation", "push", "issue")
_SHA = re.compile(r"^([0-9a-f]{40}|[0-9a-f]{64})?$")


@dataclass(frozen=True)
class IndexJob(_InRepository):
    """Index a repository's default branch: graph and every function's embedding cached.

    ``sha`` is the head a push announced ("" when unknown: an installation, or an issue
    answered from a partial index); the job indexes whatever head it fetches, which is
    never older. ``reason`` is what asked for it.
    """

    installation_id: int
    repo: str
    delivery_id: str
    sha: str = ""
    reason: str = "push"

    def __post_init__(self) -> None:
        if not valid_repo(self.repo):
            raise ValueError(f"not a repository name: {self.repo!r}")
        if not _SHA.match(self.sha):
            raise ValueError(f"not a commit id: {self.sha!r}")
        if self.reason not in INDEX_REASONS:
            raise ValueError(f"not an index reason: {self.reason!r}")
        if self.installation_id < 1:
            raise ValueError("installation id must be positive")

    @property
    def task_id(self) -> str:
        """One delivery may ask for several repositories (an installation): one id each."""
        return f"index:{self.repo}:{self.delivery_id}"

    @property
    def trigger(self) -> str:
        """What caused it, for logs."""
        return f"index.{self.reason}"

    def as_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the task."""
        return asdict(self)


Job = IssueJob | FixJob | IndexJob


def task_of(job: Job) -> tuple[str, str]:
    """The task name and queue a job is published to."""
    if isinstance(job, FixJob):
        return FIX_TASK_NAME, FIX_QUEUE
    if isinstance(job, IndexJob):
        return INDEX_TASK_NAME, INDEX_QUEUE
    return TASK_NAME, QUEUE


def task_id_of(job: Job) -> str:
    """The Celery task id of a job: its delivery id (an index job: one per repository)."""
    return job.task_id if isinstance(job, IndexJob) else job.delivery_id
