"""The tuned issue encoder: a learned linear map applied to the issue's query vectors.

Only the query side is tuned. Every function vector (and so every cached embedding) stays
the bundled model's; a query ``q`` becomes ``normalize(W q)`` before its cosine with the
functions is taken. ``W`` is fitted by ``spider train encoder`` on other projects' issues
and the functions their fixes edited (:mod:`spider.learn.adapter`), starting from the
identity. The file is NumPy's ``.npz``: ``schema``, ``kind`` (``query-adapter``), ``meta``
(JSON: the command, the data, the cross-validation figures) and ``matrix`` (d x d float32).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from spider.errors import InvalidSetting, WeightsFormatError
from spider.weights import SCHEMA_VERSION

ADAPTER_KIND = "query-adapter"
ADAPTER_FILE = Path(__file__).resolve().parent.parent / "query_adapter.npz"
REGENERATE = "spider train encoder --corpus DIR --dataset FILE --write-weights"
NO_ADAPTER = ("", "none")
BUNDLED = "bundled"


@dataclass(frozen=True)
class QueryAdapter:
    """A fitted query map: ``normalize(matrix @ q)`` for each query vector ``q``."""

    matrix: np.ndarray
    meta: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""

    @property
    def dim(self) -> int:
        """The vector size it maps (the encoder's)."""
        return int(self.matrix.shape[1])

    def apply(self, queries: np.ndarray) -> np.ndarray:
        """Unit-norm mapped rows of ``queries`` (rows: unit-norm query vectors)."""
        if queries.size == 0:
            return queries
        if queries.shape[1] != self.dim:
            raise InvalidSetting(
                f"query adapter {self.source or '(in memory)'} maps {self.dim}-dimensional "
                f"vectors but the encoder gives {queries.shape[1]}: it was trained for another "
                f"model; unset SPIDER_QUERY_ADAPTER or retrain it with `{REGENERATE}`"
            )
        out: np.ndarray = queries.astype(np.float32) @ self.matrix.T
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norms, 1e-12)).astype(np.float32)

    @classmethod
    def load(cls, path: str | Path) -> QueryAdapter:
        """Read a file written by :func:`dump_adapter` (schema, kind and shape checked)."""
        path = Path(path)
        hint = f"regenerate it with `{REGENERATE}`"
        try:
            with np.load(path, allow_pickle=False) as data:
                body = {k: data[k] for k in data.files}
        except (OSError, ValueError) as exc:
            raise WeightsFormatError(f"cannot read query adapter {path}: {exc}; {hint}") from exc
        schema = int(body["schema"]) if "schema" in body else None
        if schema != SCHEMA_VERSION:
            raise WeightsFormatError(
                f"{path}: schema {schema!r}, this engine reads schema {SCHEMA_VERSION}; {hint}"
            )
        kind = str(body.get("kind", ""))
        if kind != ADAPTER_KIND:
            raise WeightsFormatError(f"{path}: holds {kind!r}, not {ADAPTER_KIND!r} weights")
        matrix = body.get("matrix")
        if matrix is None or matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise WeightsFormatError(f"{path}: 'matrix' must be a square matrix; {hint}")
        if not np.isfinite(matrix).all():
            raise WeightsFormatError(f"{path}: 'matrix' holds non-finite numbers; {hint}")
        try:
            meta = json.loads(str(body.get("meta", "{}")))
        except ValueError as exc:
            raise WeightsFormatError(f"{path}: unreadable 'meta' ({exc}); {hint}") from exc
        return cls(matrix.astype(np.float32), meta if isinstance(meta, dict) else {}, str(path))


def dump_adapter(path: str | Path, matrix: np.ndarray, meta: Mapping[str, Any]) -> None:
    """Write a query adapter that :meth:`QueryAdapter.load` reads back."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(
        tmp,
        schema=SCHEMA_VERSION,
        kind=ADAPTER_KIND,
        meta=json.dumps(dict(meta)),
        matrix=np.asarray(matrix, dtype=np.float32),
    )
    tmp.replace(path)


def adapter_path(spec: str) -> Path | None:
    """Where the setting ``query_adapter`` points: None for no adapter, the shipped file
    for ``bundled``, else the path given."""
    spec = spec.strip()
    if spec.lower() in NO_ADAPTER:
        return None
    path = ADAPTER_FILE if spec.lower() == BUNDLED else Path(spec).expanduser()
    if not path.is_file():
        raise InvalidSetting(
            f"query adapter {spec!r}: no file at {path}; train one with `{REGENERATE}` "
            "or unset SPIDER_QUERY_ADAPTER"
        )
    return path


@lru_cache(maxsize=4)
def _load_cached(path: str, mtime_ns: int) -> QueryAdapter:
    return QueryAdapter.load(path)


def load_adapter(spec: str) -> QueryAdapter | None:
    """The adapter the setting ``query_adapter`` names, loaded once per file version."""
    path = adapter_path(spec)
    if path is None:
        return None
    return _load_cached(str(path), path.stat().st_mtime_ns)
