"""The fix loop's database: SQLAlchemy models, Alembic migrations, the Store."""

from worker.store.db import CommentRecord, Store, StoreUnavailable, upgrade
from worker.store.models import OUTCOMES, PostedComment, ScoredFix

__all__ = ["OUTCOMES", "CommentRecord", "PostedComment", "ScoredFix", "Store",
           "StoreUnavailable", "upgrade"]
