"""The one-comment protocol: each issue gets at most one comment of ours, edited in place.

Ours is the first comment that starts with the hidden marker and was posted by a bot (this
app, when GitHub says which app). :func:`publish` creates it or edits it; a create whose
answer was lost is retried only after looking for the comment again, and that look waits
until GitHub can no longer be working on the lost create (:data:`GITHUB_REQUEST_LIMIT_S`
after it was sent), so a lost answer never makes a second comment; a body is only ever
replaced whole (never a broken one).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Literal

from githubkit.versions.latest.models import IssueComment

from contract.jobs import IssueJob
from contract.policy import is_bot
from spider.comment.render import MARKER
from worker.errors import GitHubRefused, GitHubUnanswered, GitHubUnavailable
from worker.github import GitHubClient, RetryPolicy

log = logging.getLogger(__name__)

Published = Literal["created", "updated", "unchanged"]
# GitHub ends a request it has not answered in 10 s: a create sent longer ago than this has
# happened or never will, so looking for the comment after that cannot miss a late one
GITHUB_REQUEST_LIMIT_S = 10.0


class CreateUnanswered(GitHubUnavailable):
    """Creating the comment got no answer (5xx, timeout): it may exist all the same."""


def find_ours(comments: Iterable[IssueComment], app_id: int | None) -> IssueComment | None:
    """Our comment on the issue: carries the marker, posted by a bot (this app, when known)."""
    for c in comments:
        if not (c.body or "").startswith(MARKER) or not is_bot(c.user):
            continue
        app = c.performed_via_github_app
        if app and app_id is not None and getattr(app, "id", app_id) != app_id:
            continue
        return c
    return None


def publish(gh: GitHubClient, policy: RetryPolicy, job: IssueJob, body: str,
            app_id: int | None) -> tuple[Published, int]:
    """Create our comment, or edit it in place. A create that got no answer is retried
    (up to the policy's attempts), each time after looking for the comment again.

    Looking again matters when GitHub created a comment but the answer was lost (a 5xx
    or a timeout): retrying the POST blindly would post a second comment. After a create
    that got no answer at all (a client timeout shorter than GitHub's own limit), GitHub
    may still create the comment: the look waits until that create is
    :data:`GITHUB_REQUEST_LIMIT_S` old. Listing and editing retry by themselves and are not retried again here.
    """
    unanswered_at: list[float] = []  # when each create that got no answer was sent

    def attempt() -> tuple[Published, int]:
        if unanswered_at:
            time.sleep(max(0.0, unanswered_at[-1] + GITHUB_REQUEST_LIMIT_S - time.monotonic()))
        ours = find_ours(gh.comments(job.owner, job.name, job.issue_number), app_id)
        if ours is None:
            sent = time.monotonic()
            try:
                created = gh.create_comment(job.owner, job.name, job.issue_number, body)
            except GitHubUnavailable as exc:  # created or not: look again before retrying
                if isinstance(exc, GitHubUnanswered):  # GitHub may still be creating it
                    unanswered_at.append(sent)
                raise CreateUnanswered(str(exc)) from exc
            log.info("comment created", extra={"comment_id": created.id})
            return "created", created.id
        if ours.body == body:
            return "unchanged", ours.id
        gh.update_comment(job.owner, job.name, ours.id, body)  # idempotent: retried inside
        log.info("comment updated", extra={"comment_id": ours.id})
        return "updated", ours.id

    return policy.call("publish comment", attempt, only=CreateUnanswered)


def amend(gh: GitHubClient, owner: str, name: str, comment_id: int,
          change: Callable[[str], str]) -> bool:
    """Edit our comment in place with ``change`` (its body in, the new body out): nothing is
    sent when the comment is gone, is not ours, or would not change. True when edited."""
    try:
        current = gh.comment(owner, name, comment_id)
    except GitHubRefused as exc:  # the comment was deleted: nothing to edit
        log.info("comment gone, not edited", extra={"error": str(exc)})
        return False
    body = current.body or ""
    if not body.startswith(MARKER):
        return False
    new = change(body)
    if new == body:
        return False
    gh.update_comment(owner, name, comment_id, new)
    return True
