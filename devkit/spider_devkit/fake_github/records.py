"""What the fake GitHub stores and records: repositories, issues, comments, pull requests,
injected failures, webhook deliveries and the requests it received."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"  # GitHub's ISO 8601 timestamps, in UTC


def now() -> str:
    """The current time as GitHub writes it."""
    return datetime.now(UTC).strftime(TIMESTAMP)


@dataclass
class FakeRepo:
    """A repository the fake serves, backed by a local git repository."""

    full_name: str
    path: Path
    default_branch: str
    id: int
    size_kb: int | None = None  # what GitHub reports; None: the packed size of the origin


@dataclass
class FakeIssue:
    """An issue (or, with ``pull_request``, a pull request) in a fake repository."""

    repo: str
    number: int
    title: str
    body: str | None
    user: str = "octocat"
    user_type: str = "User"
    labels: list[str] = field(default_factory=list)
    state: str = "open"
    locked: bool = False
    pull_request: bool = False
    assignees: list[str] = field(default_factory=list)
    created_at: str = field(default_factory=now)  # GitHub's timestamp (TIMESTAMP)


@dataclass
class FakeComment:
    """A comment on an issue; ``app_id`` is set on comments the app posted."""

    repo: str
    issue: int
    id: int
    body: str
    user: str
    user_type: str = "User"
    association: str = "NONE"
    app_id: int | None = None
    created_at: str = field(default_factory=now)
    updated_at: str = field(default_factory=now)


@dataclass
class FakePull:
    """A pull request: its files (REST ``DiffEntry`` fields: ``filename``, ``status``,
    ``patch``, ``previous_filename``), commit messages and, when set, what GraphQL's
    ``closingIssuesReferences`` lists (None: GraphQL refuses, as for a token without it)."""

    repo: str
    number: int
    title: str
    body: str | None
    base_sha: str
    head_sha: str
    merged: bool = True
    state: str = "closed"
    files: list[dict[str, Any]] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)
    closing_issues: list[int] | None = None
    user: str = "contributor"


@dataclass
class Injection:
    """Answer the next ``times`` requests matching method and path with this response."""

    method: str
    path: re.Pattern[str]
    status: int | None  # None: the real answer (after ``delay_s``)
    headers: dict[str, str]
    body: dict[str, Any]
    times: int
    apply: bool  # run the real handler first (the change happens, the answer is lost)
    delay_s: float = 0.0  # wait this long before answering (past the client's timeout)


@dataclass
class FakeDelivery:
    """One webhook delivery the fake sent to the app, recorded as GitHub records it."""

    id: int
    guid: str
    event: str
    action: str | None
    installation_id: int | None
    repository_id: int | None
    body: bytes
    redelivery: bool
    delivered_at: str
    duration: float = 0.0
    status_code: int = 0  # 0: no HTTP answer (refused, timed out)
    status: str = ""
    answer: dict[str, Any] | None = None  # the app's JSON answer, when it gave one

    @property
    def ok(self) -> bool:
        """Whether the app answered 2xx."""
        return 200 <= self.status_code < 300

    def item_json(self) -> dict[str, Any]:
        """The shape of one item of ``GET /app/hook/deliveries``."""
        return {
            "id": self.id, "guid": self.guid, "delivered_at": self.delivered_at,
            "redelivery": self.redelivery, "duration": self.duration, "status": self.status,
            "status_code": self.status_code, "event": self.event, "action": self.action,
            "installation_id": self.installation_id, "repository_id": self.repository_id,
            "throttled_at": None,
        }


@dataclass(frozen=True)
class Call:
    """One request the fake received (``at``: when it arrived; it is listed once answered)."""

    method: str
    path: str
    status: int
    at: float
