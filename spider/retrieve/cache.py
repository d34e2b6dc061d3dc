"""Embedding caches keyed by a hash of (model, backend, embedded text).

A new commit of a repository only embeds the functions whose text changed. The default
store is one SQLite file in WAL mode (several worker processes share it safely); a fleet
shares one PostgreSQL table instead (``SPIDER_EMBEDDING_CACHE_URL``, ``SqlEmbeddingCache``),
written with ``ON CONFLICT DO NOTHING`` so two workers embedding the same text never clash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from spider.sqlite_table import READ_CHUNK, SqliteTable

SQL_TABLE = "spider_embeddings"  # the shared store's table (created when missing)


def text_key(model_id: str, text: str) -> str:
    """The cache key of one embedded text under one model (and backend: see Encoder)."""
    h = hashlib.sha256()
    h.update(model_id.encode())
    h.update(b"\0")
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


class VectorStore(Protocol):
    """What the encoder needs from a cache: batch get and put of float32 vectors."""

    def get_many(self, keys: Iterable[str]) -> dict[str, np.ndarray]: ...

    def put_many(self, items: dict[str, np.ndarray]) -> None: ...

    def close(self) -> None: ...


class EmbeddingCache:
    """Vectors stored by key in ``<dir>/embeddings.sqlite``."""

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / "embeddings.sqlite"
        self._table = SqliteTable(self.path, "vectors", ["dim INTEGER", "vec BLOB"])

    def get_many(self, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """Vectors found for the given keys (missing keys are absent from the result)."""
        rows = self._table.get_many(keys, "vec")
        return {key: np.frombuffer(blob, dtype=np.float32) for key, blob in rows}

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        """Store vectors (float32)."""
        self._table.put_many(
            [
                (k, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes())
                for k, v in items.items()
            ]
        )

    def __len__(self) -> int:
        return len(self._table)

    def close(self) -> None:
        """Close the database."""
        self._table.close()


class SqlEmbeddingCache:
    """The same interface over a SQLAlchemy URL: the store a fleet of workers shares.

    PostgreSQL (``postgresql+psycopg://``) is the target; SQLite URLs work too (tests).
    Writes are ``INSERT ... ON CONFLICT DO NOTHING``: a text embedded by two workers at
    once is stored once, and neither fails.
    """

    def __init__(self, url: str) -> None:
        import sqlalchemy as sa

        self.url = url
        self._sa = sa
        self._engine = sa.create_engine(url, pool_pre_ping=True, future=True)
        meta = sa.MetaData()
        self._table = sa.Table(
            SQL_TABLE,
            meta,
            sa.Column("key", sa.String(64), primary_key=True),
            sa.Column("dim", sa.Integer, nullable=False),
            sa.Column("vec", sa.LargeBinary, nullable=False),
        )
        meta.create_all(self._engine, checkfirst=True)
        self._insert = self._insert_factory()

    def _insert_factory(self) -> Any:
        dialect = self._engine.dialect.name
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        elif dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        else:  # pragma: no cover - other dialects are not supported
            raise ValueError(f"embedding cache: unsupported database {dialect!r}")
        return lambda: insert(self._table).on_conflict_do_nothing(index_elements=["key"])

    def get_many(self, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """Vectors found for the given keys (missing keys are absent from the result)."""
        keys = list(keys)
        found: dict[str, np.ndarray] = {}
        t = self._table
        with self._engine.connect() as conn:
            for i in range(0, len(keys), READ_CHUNK):
                chunk = keys[i : i + READ_CHUNK]
                rows = conn.execute(self._sa.select(t.c.key, t.c.vec).where(t.c.key.in_(chunk)))
                for key, blob in rows:
                    found[key] = np.frombuffer(bytes(blob), dtype=np.float32)
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        """Store vectors (float32); keys already present are left as they are."""
        if not items:
            return
        rows = [
            {"key": k, "dim": int(v.shape[0]), "vec": np.asarray(v, dtype=np.float32).tobytes()}
            for k, v in items.items()
        ]
        with self._engine.begin() as conn:
            for i in range(0, len(rows), READ_CHUNK):
                conn.execute(self._insert(), rows[i : i + READ_CHUNK])

    def __len__(self) -> int:
        with self._engine.connect() as conn:
            q = self._sa.select(self._sa.func.count()).select_from(self._table)
            return int(conn.execute(q).scalar_one())

    def close(self) -> None:
        """Release the connection pool."""
        self._engine.dispose()


def open_cache(directory: str | Path, url: str = "") -> VectorStore:
    """The shared store at ``url`` when given, else the SQLite file under ``directory``."""
    if url:
        return SqlEmbeddingCache(url)
    return EmbeddingCache(directory)


class LazyStore:
    """Opens its store on first use: a warm index that reads its vector matrix never
    connects to the cache at all."""

    def __init__(self, directory: str | Path, url: str = "") -> None:
        self.directory, self.url = directory, url
        self._store: VectorStore | None = None

    def _open(self) -> VectorStore:
        if self._store is None:
            self._store = open_cache(self.directory, self.url)
        return self._store

    def get_many(self, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """See ``VectorStore.get_many``."""
        return self._open().get_many(keys)

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        """See ``VectorStore.put_many``."""
        self._open().put_many(items)

    def close(self) -> None:
        """Close the store if it was opened."""
        if self._store is not None:
            self._store.close()
            self._store = None
