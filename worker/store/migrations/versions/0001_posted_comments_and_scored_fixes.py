"""posted comments and scored fixes

Revision ID: 0001
Revises:
Create Date: 2026-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "posted_comments",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(140), nullable=False),
        sa.Column("issue_number", sa.Integer(), nullable=False),
        sa.Column("comment_id", sa.Integer(), nullable=False),
        sa.Column("commit_sha", sa.String(64), nullable=False),
        sa.Column("k", sa.Integer(), nullable=False),
        sa.Column("listed_ids", sa.JSON(), nullable=False),
        sa.Column("issue_title", sa.Text(), nullable=False),
        sa.Column("issue_body", sa.Text(), nullable=False),
        sa.Column("posted_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("repo", "issue_number", name="uq_posted_comment_issue"),
    )
    op.create_index("ix_posted_comments_repo", "posted_comments", ["repo"])
    op.create_table(
        "scored_fixes",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(140), nullable=False),
        sa.Column("issue_number", sa.Integer(), nullable=False),
        sa.Column("pull_number", sa.Integer(), nullable=False),
        sa.Column("comment_commit", sa.String(64), nullable=False),
        sa.Column("base_commit", sa.String(64), nullable=False),
        sa.Column("k", sa.Integer(), nullable=False),
        sa.Column("listed_ids", sa.JSON(), nullable=False),
        sa.Column("changed_functions", sa.JSON(), nullable=False),
        sa.Column("moved", sa.JSON(), nullable=False),
        sa.Column("first_rank", sa.Integer(), nullable=True),
        sa.Column("recall_at_k", sa.Float(), nullable=True),
        sa.Column("outcome", sa.String(32), nullable=False),
        sa.Column("problem_statement", sa.Text(), nullable=False),
        sa.Column("patch", sa.Text(), nullable=False),
        sa.Column("scored_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("repo", "issue_number", "pull_number", name="uq_scored_fix"),
    )
    op.create_index("ix_scored_fixes_repo", "scored_fixes", ["repo"])
    op.create_index("ix_scored_fixes_outcome", "scored_fixes", ["outcome"])
    op.create_index("ix_scored_fixes_scored_at", "scored_fixes", ["scored_at"])


def downgrade() -> None:
    op.drop_table("scored_fixes")
    op.drop_table("posted_comments")
