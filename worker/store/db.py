"""The store: an SQLAlchemy engine over SPIDER_DATABASE_URL (SQLite by default), the
schema brought to the latest Alembic revision on first use, and the few reads and writes
the fix loop makes.

Errors: a database that cannot be reached (or drops the connection) raises
:class:`StoreUnavailable`, a transient error the scoring task retries with backoff; the
localization job never waits on it (it logs and goes on). Its message names the driver's
cause in one line (connection refused, authentication failed), never the password. A store
opened ``read_only`` (the report) never creates anything: a SQLite file or folder that does
not exist raises :class:`NoDatabase`; one opened with ``create_folder=False`` (``spider-bot db
upgrade``) creates the file only in a folder that exists. A URL of a database other than
SQLite and PostgreSQL (or whose driver is not installed) raises
:class:`UnsupportedDatabase`, naming the supported ones. Writes are idempotent: a fix is
recorded once per ``(repo, issue, pull request)`` whatever the redeliveries.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, inspect, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from worker.errors import JobPermanentError, JobTransientError
from worker.store.models import PostedComment, ScoredFix, utcnow

log = logging.getLogger(__name__)

ALEMBIC_INI = Path(__file__).with_name("alembic.ini")
CONNECT_TIMEOUT_S = 5  # a database that does not answer must not hold a job for long
PG_MIGRATION_LOCK = 0x5B1DE4  # advisory lock key: two workers never migrate at once
SQLITE_BUSY_MS = 10_000  # two worker processes writing one SQLite file wait, not fail
_MIGRATING = threading.Lock()  # alembic's context is module-global: one migration per process


MAX_CAUSE_CHARS = 300  # the driver's message, on one line


class StoreUnavailable(JobTransientError):
    """The database could not be reached, or dropped the connection: retry later."""


class NoDatabase(JobPermanentError):
    """A read-only store's URL names no database (a SQLite file or its folder is missing)."""


class UnsupportedDatabase(JobPermanentError):
    """The URL names a database (or a driver) the store does not run on."""


# backend name -> the URL form it takes; the store's migrations and tests cover these only
SUPPORTED_DATABASES = {
    "sqlite": "sqlite:///PATH",
    "postgresql": "postgresql+psycopg://USER:PASSWORD@HOST:PORT/NAME",
}


def supported_list() -> str:
    """The supported databases as one phrase, for error messages."""
    return " or ".join(f"{name} ({form})" for name, form in SUPPORTED_DATABASES.items())


def check_supported(url: str) -> None:
    """Raise UnsupportedDatabase unless ``url`` names a supported database with an
    installed driver (ArgumentError when it is no URL at all)."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend not in SUPPORTED_DATABASES:
        raise UnsupportedDatabase(f"unsupported database {backend!r}: spider-bot runs on "
                                  f"{supported_list()}")
    try:
        parsed.get_dialect().import_dbapi()
    except ImportError as exc:
        raise UnsupportedDatabase(
            f"the driver {parsed.get_driver_name()!r} of {backend} is not installed: use "
            f"{SUPPORTED_DATABASES[backend]}") from exc


def cause(exc: BaseException) -> str:
    """The driver's own words for a database error, on one line: ``connection to server at
    "127.0.0.1", port 5433 failed: Connection refused``, ``password authentication failed
    for user "x"``, ``unable to open database file``."""
    orig = getattr(exc, "orig", None) or exc
    words = " ".join(str(orig).split()) or type(orig).__name__
    return words[:MAX_CAUSE_CHARS]


@dataclass(frozen=True)
class CommentRecord:
    """What our comment on an issue listed, where and when."""

    repo: str
    issue_number: int
    comment_id: int
    commit_sha: str
    k: int
    listed_ids: list[str]
    issue_title: str = ""
    issue_body: str = ""
    posted_at: datetime | None = None


def alembic_config(url: str) -> Config:
    """The Alembic configuration of the store, pointed at ``url``."""
    cfg = Config(str(ALEMBIC_INI))
    cfg.set_main_option("script_location", str(ALEMBIC_INI.parent / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///PATH`` URL (None: in memory, or not SQLite)."""
    if not url.startswith("sqlite"):
        return None
    path = url.split("///", 1)[-1].split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


def make_engine(url: str, *, read_only: bool = False, create_folder: bool = True) -> Engine:
    """An engine with short connect timeouts (and SQLite made safe for two processes).
    ``read_only``: never create a file or folder; a missing one raises NoDatabase.
    ``create_folder=False``: a SQLite file may be created, its folder must exist.
    UnsupportedDatabase for a database or driver the store does not run on."""
    check_supported(url)
    if url.startswith("sqlite"):
        path = sqlite_path(url)
        if read_only and path is not None:
            return _read_only_sqlite(path)
        if path is not None and not create_folder and not path.parent.is_dir():
            raise NoDatabase(_no_folder(path))
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_MS / 1000})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
            cur.close()

        return engine
    connect_args = {"connect_timeout": CONNECT_TIMEOUT_S} if url.startswith("postgresql") else {}
    return create_engine(url, pool_pre_ping=True, connect_args=connect_args)


def _no_folder(path: Path) -> str:
    return (f"no database at {path}: the folder {path.parent} does not exist (a mistyped URL? "
            "three slashes and a relative path, four and an absolute one)")


def _read_only_sqlite(path: Path) -> Engine:
    """A SQLite file opened read-only (``mode=ro``: SQLite itself refuses to create it)."""
    if not path.parent.is_dir():
        raise NoDatabase(_no_folder(path))
    if not path.is_file():
        raise NoDatabase(f"no database at {path}: no such file (the workers create it when "
                         "they record their first comment; `spider-bot db upgrade` creates "
                         "an empty one)")
    engine = create_engine(f"sqlite:///file:{path.resolve()}?mode=ro&uri=true",
                           connect_args={"timeout": SQLITE_BUSY_MS / 1000})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
        cur.close()

    return engine


def upgrade(engine: Engine, url: str) -> None:
    """``alembic upgrade head`` on ``engine`` (PostgreSQL: under an advisory lock)."""
    cfg = alembic_config(url)
    with _MIGRATING, engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": PG_MIGRATION_LOCK})
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


class Store:
    """The fix loop's records. Thread-safe; the schema is upgraded on first use."""

    def __init__(self, url: str, *, auto_upgrade: bool = True, read_only: bool = False,
                 create_folder: bool = True) -> None:
        self.url = url
        self._engine = make_engine(url, read_only=read_only, create_folder=create_folder)
        self._sessions = sessionmaker(self._engine, expire_on_commit=False)
        self._auto_upgrade = auto_upgrade
        self._ready = False
        self._lock = threading.Lock()

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (tests and the report read through it)."""
        return self._engine

    def close(self) -> None:
        """Release the connections."""
        self._engine.dispose()

    def revision(self) -> str | None:
        """The schema's Alembic revision (None: never upgraded)."""
        from alembic.runtime.migration import MigrationContext

        try:
            with self._engine.connect() as conn:
                return MigrationContext.configure(conn).get_current_revision()
        except (OperationalError, DBAPIError) as exc:
            raise StoreUnavailable(f"database unavailable: {cause(exc)}") from exc

    def has_schema(self) -> bool:
        """Whether the store's tables exist (a database no worker or upgrade has written to
        has none); StoreUnavailable when it cannot be reached."""
        try:
            with self._engine.connect() as conn:
                names = set(inspect(conn).get_table_names())
        except (OperationalError, DBAPIError) as exc:
            raise StoreUnavailable(f"database unavailable: {cause(exc)}") from exc
        return {PostedComment.__tablename__, ScoredFix.__tablename__} <= names

    def _ensure_schema(self) -> None:
        if self._ready or not self._auto_upgrade:
            return
        with self._lock:
            if not self._ready:
                upgrade(self._engine, self.url)
                self._ready = True

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session in a transaction; connection failures become StoreUnavailable."""
        try:
            self._ensure_schema()
            with self._sessions.begin() as s:
                yield s
        except IntegrityError:
            raise
        except (OperationalError, DBAPIError) as exc:
            if isinstance(exc, DBAPIError) and not isinstance(exc, OperationalError) \
                    and not exc.connection_invalidated:
                raise
            raise StoreUnavailable(f"database unavailable: {cause(exc)}") from exc

    # --- comments ---

    def record_comment(self, rec: CommentRecord) -> None:
        """Insert or replace the record of our comment on an issue (the latest list wins)."""
        with self.session() as s:
            row = s.scalars(select(PostedComment).where(
                PostedComment.repo == rec.repo,
                PostedComment.issue_number == rec.issue_number)).first()
            if row is None:
                row = PostedComment(repo=rec.repo, issue_number=rec.issue_number)
                s.add(row)
            row.comment_id = rec.comment_id
            row.commit_sha = rec.commit_sha
            row.k = rec.k
            row.listed_ids = list(rec.listed_ids)
            row.issue_title = rec.issue_title
            row.issue_body = rec.issue_body
            row.posted_at = rec.posted_at or utcnow()

    def comment(self, repo: str, issue_number: int) -> CommentRecord | None:
        """The record of our comment on an issue, if one was made."""
        with self.session() as s:
            row = s.scalars(select(PostedComment).where(
                PostedComment.repo == repo, PostedComment.issue_number == issue_number)).first()
            if row is None:
                return None
            return CommentRecord(row.repo, row.issue_number, row.comment_id, row.commit_sha,
                                 row.k, list(row.listed_ids), row.issue_title, row.issue_body,
                                 row.posted_at)

    # --- fixes ---

    def record_fix(self, fix: ScoredFix) -> bool:
        """Record a scored fix; False when ``(repo, issue, pull request)`` already was."""
        try:
            with self.session() as s:
                s.add(fix)
        except IntegrityError:
            return False
        return True

    def fix(self, repo: str, issue_number: int, pull_number: int) -> ScoredFix | None:
        """The recorded fix, if any."""
        with self.session() as s:
            return s.scalars(select(ScoredFix).where(
                ScoredFix.repo == repo, ScoredFix.issue_number == issue_number,
                ScoredFix.pull_number == pull_number)).first()

    def fixes(self, repo: str | None = None, since: datetime | None = None) -> list[ScoredFix]:
        """Every scored fix (of one repository, since a time), oldest first."""
        with self.session() as s:
            q = select(ScoredFix).order_by(ScoredFix.scored_at, ScoredFix.id)
            if repo:
                q = q.where(ScoredFix.repo == repo)
            if since:
                q = q.where(ScoredFix.scored_at >= since)
            return list(s.scalars(q))

    def comments(self, repo: str | None = None,
                 since: datetime | None = None) -> list[CommentRecord]:
        """Every recorded comment (of one repository, since a time)."""
        with self.session() as s:
            q = select(PostedComment).order_by(PostedComment.posted_at, PostedComment.id)
            if repo:
                q = q.where(PostedComment.repo == repo)
            if since:
                q = q.where(PostedComment.posted_at >= since)
            return [CommentRecord(r.repo, r.issue_number, r.comment_id, r.commit_sha, r.k,
                                  list(r.listed_ids), r.issue_title, r.issue_body, r.posted_at)
                    for r in s.scalars(q)]
