"""Webhook event → decision: enqueue a job, acknowledge, or ignore with a reason.

Pure: no network, no Redis. Only the fields the decision needs are parsed (unknown ones
are ignored), so GitHub adding fields never breaks the bot. Rules that depend on the
repository's ``.github/spider.yml`` (skip label, which actions trigger, minimum length)
are applied by the worker, which reads that file; the bot drops what no config can enable.
So is the no-backfill rule (``worker.plan.before_installation``): an issue delivery carries
only the installation's id, not when the app came to the repository. The bot records when
repositories are added to an existing installation (:attr:`EnqueueIndex.added`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from bot.errors import MalformedPayload
from contract.commands import parse_command
from contract.jobs import (
    ISSUE_ACTIONS,
    FixJob,
    IndexJob,
    IssueJob,
    comment_trigger,
    issue_trigger,
    valid_repo,
)
from contract.policy import is_bot, may_rerun

ACKNOWLEDGED_EVENTS = frozenset({"ping"})
# An installation on a large organisation may name hundreds of repositories: index this
# many ahead; the others are indexed on their first issue or push (a partial first answer).
MAX_INDEX_REPOS_PER_DELIVERY = 200
_NO_COMMIT = "0" * 40


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class User(_Loose):
    login: str
    type: str = "User"


class IssuePayload(_Loose):
    number: int
    state: str = "open"
    locked: bool = False
    user: User | None = None
    pull_request: dict[str, Any] | None = None


class CommentPayload(_Loose):
    id: int
    body: str | None = None
    user: User | None = None
    author_association: str = "NONE"


class Installation(_Loose):
    id: int


class Repository(_Loose):
    full_name: str
    default_branch: str | None = None


class RepositoryRef(_Loose):
    full_name: str


class PullRequestPayload(_Loose):
    number: int
    merged: bool = False
    state: str = "open"


class EventPayload(_Loose):
    action: str | None = None
    installation: Installation | None = None
    repository: Repository | None = None
    sender: User | None = None
    issue: IssuePayload | None = None
    comment: CommentPayload | None = None
    pull_request: PullRequestPayload | None = None
    # push
    ref: str | None = None
    after: str | None = None
    deleted: bool = False
    # installation, installation_repositories
    repositories: list[RepositoryRef] | None = None
    repositories_added: list[RepositoryRef] | None = None


@dataclass(frozen=True)
class Enqueue:
    """Run the worker for this job (answered 202)."""

    job: IssueJob | FixJob


@dataclass(frozen=True)
class EnqueueIndex:
    """Index these repositories ahead of their issues (answered 202): at most one job
    waits per repository (``contract.index_state``), on the lowest-priority queue.
    ``added``: repositories just added to an existing installation, whose addition time
    the bot records (``contract.installs``: issues older than it are never backfilled)."""

    jobs: tuple[IndexJob, ...]
    added: tuple[str, ...] = ()


@dataclass(frozen=True)
class Acknowledge:
    """A delivery the app accepts but has nothing to do for (answered 200)."""

    reason: str


@dataclass(frozen=True)
class Ignore:
    """A delivery the app deliberately drops, with the reason (answered 202)."""

    reason: str


Decision = Enqueue | EnqueueIndex | Acknowledge | Ignore


def route(event: str, payload: dict[str, Any], delivery_id: str) -> Decision:
    """Decide what one webhook delivery asks for. Raises MalformedPayload on bad bodies."""
    if event in ACKNOWLEDGED_EVENTS:
        return Acknowledge(f"{event} acknowledged")
    if event not in ("issues", "issue_comment", "pull_request", "push", "installation",
                     "installation_repositories"):
        return Ignore(f"event {event!r} is not handled")
    try:
        p = EventPayload.model_validate(payload)
    except ValidationError as exc:
        raise MalformedPayload(f"{event} payload: {exc.error_count()} invalid field(s)") from exc
    if event == "push":
        return _route_push(p, delivery_id)
    if event in ("installation", "installation_repositories"):
        return _route_installation(event, p, delivery_id)
    if event == "pull_request":
        return _route_pull_request(p, delivery_id)
    if event == "issues" and p.action == "closed" and p.issue is not None:
        return _route_closed_issue(p, delivery_id)
    if p.issue is None or p.repository is None:
        raise MalformedPayload(f"{event} payload lacks issue or repository")
    if event == "issues":
        return _route_issue(p, delivery_id)
    return _route_comment(p, delivery_id)


def _route_issue(p: EventPayload, delivery_id: str) -> Decision:
    issue = p.issue
    assert issue is not None
    if p.action not in ISSUE_ACTIONS:
        return Ignore(f"issues.{p.action} is not handled")
    if skip := _skip_issue(p):
        return Ignore(skip)
    if issue.state != "open":
        return Ignore("the issue is closed")
    if is_bot(p.sender):
        return Ignore("the action was taken by a bot")
    return _enqueue(p, delivery_id, issue_trigger(p.action))


def _route_comment(p: EventPayload, delivery_id: str) -> Decision:
    issue, comment = p.issue, p.comment
    assert issue is not None
    if p.action != "created":
        return Ignore(f"issue_comment.{p.action} is not handled")
    if comment is None:
        raise MalformedPayload("issue_comment payload lacks comment")
    if issue.pull_request is not None:
        return Ignore("comment on a pull request")
    if is_bot(comment.user) or is_bot(p.sender):
        return Ignore("comment by a bot")
    if parse_command(comment.body) is None:
        return Ignore("comment is not a /spider command")
    if skip := _skip_issue(p):
        return Ignore(skip)
    if not may_rerun(comment.author_association, comment.user, issue.user):
        return Ignore("only the issue's author or repository members may run /spider")
    return _enqueue(p, delivery_id, comment_trigger(comment.id))


def _skip_issue(p: EventPayload) -> str | None:
    issue = p.issue
    assert issue is not None
    if issue.pull_request is not None:
        return "pull request"
    if issue.locked:
        return "the issue is locked"
    if is_bot(issue.user):
        return "the issue was opened by a bot"
    return None


def _enqueue(p: EventPayload, delivery_id: str, trigger: str) -> Decision:
    assert p.issue is not None and p.repository is not None
    if p.installation is None:
        raise MalformedPayload("payload lacks installation: is this an app webhook?")
    if not valid_repo(p.repository.full_name):
        raise MalformedPayload("repository.full_name is not owner/name")
    try:
        job = IssueJob(
            installation_id=p.installation.id,
            repo=p.repository.full_name,
            issue_number=p.issue.number,
            delivery_id=delivery_id,
            trigger=trigger,
        )
    except ValueError as exc:
        raise MalformedPayload(str(exc)) from exc
    return Enqueue(job)


def _route_pull_request(p: EventPayload, delivery_id: str) -> Decision:
    """A merged pull request: score it against our comments on the issues it closes
    (which ones, the worker finds out: commit messages and GraphQL need the API)."""
    if p.pull_request is None or p.repository is None:
        raise MalformedPayload("pull_request payload lacks pull_request or repository")
    if p.action != "closed":
        return Ignore(f"pull_request.{p.action} is not handled")
    if not p.pull_request.merged:
        return Ignore("the pull request was closed without being merged")
    return _enqueue_fix(p, delivery_id, pull_number=p.pull_request.number)


def _route_closed_issue(p: EventPayload, delivery_id: str) -> Decision:
    """A closed issue: the worker looks for the merged pull request that closed it."""
    assert p.issue is not None
    if p.issue.pull_request is not None:
        return Ignore("pull request")
    if p.repository is None:
        raise MalformedPayload("issues payload lacks repository")
    return _enqueue_fix(p, delivery_id, issue_number=p.issue.number)


def _enqueue_fix(p: EventPayload, delivery_id: str, **number: int) -> Decision:
    assert p.repository is not None
    if p.installation is None:
        raise MalformedPayload("payload lacks installation: is this an app webhook?")
    try:
        job = FixJob(installation_id=p.installation.id, repo=p.repository.full_name,
                     delivery_id=delivery_id, **number)
    except ValueError as exc:
        raise MalformedPayload(str(exc)) from exc
    return Enqueue(job)


def _route_push(p: EventPayload, delivery_id: str) -> Decision:
    """A push to the default branch: index its new head before the next issue arrives."""
    if p.repository is None or p.ref is None:
        raise MalformedPayload("push payload lacks repository or ref")
    branch = p.repository.default_branch
    if not branch or p.ref != f"refs/heads/{branch}":
        return Ignore("push to a branch other than the default branch")
    if p.deleted or not p.after or p.after == _NO_COMMIT:
        return Ignore("the push deleted the branch")
    return _enqueue_index(p, delivery_id, [p.repository.full_name], "push", sha=p.after)


def _route_installation(event: str, p: EventPayload, delivery_id: str) -> Decision:
    """The app installed on repositories (or given more): index them ahead of their issues."""
    wanted = "created" if event == "installation" else "added"
    if p.action != wanted:
        return Acknowledge(f"{event} acknowledged")
    refs = p.repositories if event == "installation" else p.repositories_added
    names = [r.full_name for r in refs or []]
    if not names:
        return Acknowledge(f"{event} acknowledged (no repositories listed)")
    added = tuple(n for n in dict.fromkeys(names) if valid_repo(n)) \
        if event == "installation_repositories" else ()
    return _enqueue_index(p, delivery_id, names[:MAX_INDEX_REPOS_PER_DELIVERY], "installation",
                          added=added)


def _enqueue_index(p: EventPayload, delivery_id: str, repos: list[str], reason: str,
                   sha: str = "", added: tuple[str, ...] = ()) -> Decision:
    if p.installation is None:
        raise MalformedPayload("payload lacks installation: is this an app webhook?")
    try:
        jobs = tuple(IndexJob(installation_id=p.installation.id, repo=repo,
                              delivery_id=delivery_id, sha=sha, reason=reason)
                     for repo in dict.fromkeys(repos))
    except ValueError as exc:
        raise MalformedPayload(str(exc)) from exc
    return EnqueueIndex(jobs, added)
