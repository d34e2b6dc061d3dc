"""The fix loop's database: SQLAlchemy models, Alembic migrations, the Store."""

from worker.store.db import CommentRecord, NoDatabase, Store, StoreUnavailable, cause, upgrade
from worker.store.models import OUTCOMES, PostedComment, ScoredFix

__all__ = ["OUTCOMES", "CommentRecord", "NoDatabase", "PostedComment", "ScoredFix", "Store",
           "StoreUnavailable", "cause", "upgrade"]
