"""Who is who on an issue: bots are never answered, and who may re-run with ``/spider``.

Pure. The bot applies it to webhook payloads before enqueueing; the worker applies it again
to what it re-reads from GitHub (the comment may have changed since the delivery).
"""

from __future__ import annotations

from typing import Protocol

# Who may re-run with /spider besides the author: people with a role in the repo.
TRUSTED_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})


class Account(Protocol):
    """A GitHub account as both webhook payloads and githubkit models describe it."""

    login: str
    type: str


def may_rerun(association: str, commenter: Account | None, author: Account | None) -> bool:
    """Whether a commenter may trigger a re-run: a repository member or the issue's author."""
    if association in TRUSTED_ASSOCIATIONS:
        return True
    return commenter is not None and author is not None and commenter.login == author.login


def is_bot(user: Account | None) -> bool:
    """Whether an account is a bot (GitHub Apps' accounts end in ``[bot]``)."""
    return user is not None and (user.type == "Bot" or user.login.endswith("[bot]"))
