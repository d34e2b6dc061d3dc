"""One key -> row table in one SQLite file in WAL mode: the local caches' storage.

Several worker processes share such a file safely (WAL readers never block the writer;
writers wait for the lock up to ``SQLITE_TIMEOUT_S``); threads of one process share one
connection behind a lock.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

SQLITE_TIMEOUT_S = 60  # concurrent writers wait this long for the lock
READ_CHUNK = 900  # stays under SQLite's default limit of host parameters per statement


class SqliteTable:
    """Rows ``(key, *values)`` of table ``name`` in the file ``path``."""

    def __init__(self, path: Path, name: str, columns: Sequence[str]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._name = name
        self._width = 1 + len(columns)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=SQLITE_TIMEOUT_S, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        cols = ", ".join(columns)
        self._db.execute(f"CREATE TABLE IF NOT EXISTS {name} (key TEXT PRIMARY KEY, {cols})")
        self._db.commit()

    def get_many(self, keys: Iterable[str], column: str) -> list[tuple[str, Any]]:
        """``(key, column)`` of every row found among ``keys``."""
        keys = list(keys)
        rows: list[tuple[str, Any]] = []
        with self._lock:
            for i in range(0, len(keys), READ_CHUNK):
                chunk = keys[i : i + READ_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows += self._db.execute(
                    f"SELECT key, {column} FROM {self._name} WHERE key IN ({marks})", chunk
                ).fetchall()
        return rows

    def put_many(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert rows, replacing any under the same key."""
        marks = ", ".join("?" * self._width)
        with self._lock:
            self._db.executemany(f"INSERT OR REPLACE INTO {self._name} VALUES ({marks})", rows)
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute(f"SELECT COUNT(*) FROM {self._name}").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
