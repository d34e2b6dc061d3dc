"""On-disk embedding cache keyed by a hash of (model, embedded text).

A new commit of a repository only embeds the functions whose text changed. SQLite in WAL
mode lets several worker processes share one cache file safely.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

import numpy as np

SQLITE_TIMEOUT_S = 60  # concurrent writers wait this long for the lock
READ_CHUNK = 900  # stays under SQLite's default limit of host parameters per statement


def text_key(model_id: str, text: str) -> str:
    """The cache key of one embedded text under one model."""
    h = hashlib.sha256()
    h.update(model_id.encode())
    h.update(b"\0")
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


class EmbeddingCache:
    """Vectors stored by key in ``<dir>/embeddings.sqlite``."""

    def __init__(self, directory: str | Path) -> None:
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        self.path = path / "embeddings.sqlite"
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=SQLITE_TIMEOUT_S, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INTEGER, vec BLOB)"
        )
        self._db.commit()

    def get_many(self, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """Vectors found for the given keys (missing keys are absent from the result)."""
        keys = list(keys)
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(keys), READ_CHUNK):
                chunk = keys[i : i + READ_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT key, vec FROM vectors WHERE key IN ({marks})", chunk
                ).fetchall()
                for key, blob in rows:
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        """Store vectors (float32)."""
        rows = [
            (k, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes())
            for k, v in items.items()
        ]
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
