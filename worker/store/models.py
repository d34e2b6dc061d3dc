"""The database of the fix loop: the comments the app posted and the fixes it scored.

SQLAlchemy 2 declarative models, one module; the schema changes only through the Alembic
migrations beside it (``worker/store/migrations``). Lists (ids in ranked order) are JSON.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Float, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

REPO_CHARS = 140  # owner (39) / name (100)
SHA_CHARS = 64  # SHA-256 repositories too
OUTCOME_CHARS = 32
OUTCOMES = ("hit", "miss", "no_function_changed")


def utcnow() -> datetime:
    """Now, timezone-aware (stored as UTC)."""
    return datetime.now(UTC)


class Base(DeclarativeBase):
    """Declarative base of the store's tables."""

    type_annotation_map = {dict[str, Any]: JSON, list[str]: JSON}  # noqa: RUF012


class PostedComment(Base):
    """The app's one comment on an issue as last posted or edited: what it listed, where."""

    __tablename__ = "posted_comments"
    __table_args__ = (UniqueConstraint("repo", "issue_number", name="uq_posted_comment_issue"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(REPO_CHARS), index=True)
    issue_number: Mapped[int] = mapped_column(Integer)
    comment_id: Mapped[int] = mapped_column(Integer)
    commit_sha: Mapped[str] = mapped_column(String(SHA_CHARS))
    k: Mapped[int] = mapped_column(Integer)
    listed_ids: Mapped[list[str]] = mapped_column(JSON)
    issue_title: Mapped[str] = mapped_column(Text, default="")
    issue_body: Mapped[str] = mapped_column(Text, default="")
    posted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ScoredFix(Base):
    """One merged fix of one answered issue, scored against the comment's list.

    ``(repo, issue_number, pull_number)`` is unique: redeliveries, retries and two workers
    scoring the same fix record it once.
    """

    __tablename__ = "scored_fixes"
    __table_args__ = (
        UniqueConstraint("repo", "issue_number", "pull_number", name="uq_scored_fix"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(REPO_CHARS), index=True)
    issue_number: Mapped[int] = mapped_column(Integer)
    pull_number: Mapped[int] = mapped_column(Integer)
    comment_commit: Mapped[str] = mapped_column(String(SHA_CHARS))
    base_commit: Mapped[str] = mapped_column(String(SHA_CHARS))
    k: Mapped[int] = mapped_column(Integer)
    listed_ids: Mapped[list[str]] = mapped_column(JSON)
    changed_functions: Mapped[list[str]] = mapped_column(JSON)
    # listed id -> the changed base-commit function it was matched to by its code
    moved: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    first_rank: Mapped[int | None] = mapped_column(Integer, nullable=True)
    recall_at_k: Mapped[float | None] = mapped_column(Float, nullable=True)
    outcome: Mapped[str] = mapped_column(String(OUTCOME_CHARS), index=True)
    problem_statement: Mapped[str] = mapped_column(Text, default="")
    patch: Mapped[str] = mapped_column(Text, default="")
    scored_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow,
                                                index=True)
