"""The fix loop's database: SQLAlchemy models, Alembic migrations, the Store."""

from worker.store.db import (
    SUPPORTED_DATABASES,
    CommentRecord,
    NoDatabase,
    Store,
    StoreUnavailable,
    UnsupportedDatabase,
    cause,
    sqlite_path,
    upgrade,
)
from worker.store.models import OUTCOMES, PostedComment, ScoredFix

__all__ = ["OUTCOMES", "SUPPORTED_DATABASES", "CommentRecord", "NoDatabase", "PostedComment",
           "ScoredFix", "Store", "StoreUnavailable", "UnsupportedDatabase", "cause",
           "sqlite_path", "upgrade"]
