"""The cross-encoder: re-score the pool ranker's top items by reading each with the issue.

The pool ranker orders a few hundred candidates by features of separate views (the issue's
vector and the function's, word matches, graph relations). A cross-encoder reads the issue
and one function as a single input, so each word of the issue attends to each token of the
code; that is too slow for a repository, so it scores only the ranker's top ``depth`` (30)
and the two scores are combined: within those items, the ranker's standardised score
plus ``weight`` x the cross-encoder's (both the depth and the weight come with the file,
the weight chosen on issues of repositories the model never trained on). Items below the
depth keep their place.

The model is the bundled all-MiniLM-L6-v2 with a LoRA delta (the format of
:mod:`spider.retrieve.delta`, kind ``cross-encoder``) and a head: the mean-pooled,
unit-norm vector of ``[CLS] issue [SEP] function [SEP]`` against one learned direction,
``scale * (v . direction) + bias``. It runs through ONNX Runtime (fp32), from the merged
weights written once under the export folder, so no torch import is paid at query time.
``spider train cross`` makes the file (:mod:`spider.learn.cross_tune`).

The setting ``cross_encoder`` chooses it: empty or ``none`` is off, ``bundled`` the file
``spider/cross_encoder.npz`` when the package ships one, anything else the path of a file.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from spider.errors import EncoderDeltaError
from spider.retrieve.delta import EncoderDelta, file_setting, read_delta, tuned_model_dir

if TYPE_CHECKING:
    from spider.index import Index
    from spider.models import Issue
    from spider.settings import EngineSettings

CROSS_KIND = "cross-encoder"
CROSS_FILE = Path(__file__).with_name("cross_encoder.npz")
REGENERATE = "spider train cross --corpus DIR --work DIR --write-weights"
DIRECTION = "head.direction"  # the head's unit vector, an array of the file
MAX_DEPTH = 200


@dataclass(frozen=True)
class CrossEncoderFile:
    """A cross-encoder file, read and checked: its delta, head and how it is applied."""

    delta: EncoderDelta
    direction: np.ndarray  # unit vector, the model's width
    bias: float
    scale: float
    max_tokens: int  # issue and function together
    depth: int  # the ranker's top items it re-scores
    weight: float  # of its standardised score, added to the ranker's

    @property
    def digest(self) -> str:
        """The first hex characters of the file's sha256 (names the merged weights)."""
        return self.delta.digest


def _fail(path: Path, problem: str, command: str = REGENERATE) -> EncoderDeltaError:
    return EncoderDeltaError(f"cross-encoder {path}: {problem}; make a new one with `{command}`")


def read_cross(path: str | Path, base_dir: str | Path | None = None) -> CrossEncoderFile:
    """Read and check a cross-encoder file: the delta's checks (:func:`read_delta`, with
    ``base_dir`` its targets against the base's tensors), the head (a finite unit vector of
    the model's width) and the numbers that apply it."""
    path = Path(path)
    delta = read_delta(path, base_dir, kind=CROSS_KIND, regenerate=REGENERATE)
    meta = delta.meta
    command = delta.command

    def number(key: str, low: float, high: float) -> float:
        value = meta.get(key)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not np.isfinite(value)
            or not low <= value <= high
        ):
            raise _fail(path, f"{key} {value!r} is not a number in [{low:g}, {high:g}]", command)
        return float(value)

    with np.load(io.BytesIO(path.read_bytes()), allow_pickle=False) as data:
        if DIRECTION not in data.files:
            raise _fail(path, f"no {DIRECTION} array", command)
        direction = np.asarray(data[DIRECTION], dtype=np.float32)
    if direction.ndim != 1 or not np.isfinite(direction).all():
        raise _fail(path, f"{DIRECTION} must be a finite vector", command)
    norm = float(np.linalg.norm(direction))
    if abs(norm - 1.0) > 1e-3:
        raise _fail(path, f"{DIRECTION} has norm {norm:.4f}, not 1", command)
    return CrossEncoderFile(
        delta=delta,
        direction=direction,
        bias=number("bias", -1e4, 1e4),
        scale=number("scale", 1e-3, 1e3),
        max_tokens=int(number("max_tokens", 16, 512)),
        depth=int(number("depth", 1, MAX_DEPTH)),
        weight=number("weight", 0.0, 100.0),
    )


def cross_path(spec: str) -> Path | None:
    """Where the setting ``cross_encoder`` points: None for none, the shipped file for
    ``bundled``, else the path given (:func:`spider.retrieve.delta.file_setting`)."""
    return file_setting(
        spec,
        shipped=CROSS_FILE,
        variable="SPIDER_CROSS_ENCODER",
        what="cross-encoder",
        regenerate=REGENERATE,
    )


@lru_cache(maxsize=4)
def _read_cached(path: str, _size: int, _mtime_ns: int) -> CrossEncoderFile:
    from spider.retrieve.dense import bundled_model_path

    return read_cross(path, bundled_model_path())


class CrossScorer:
    """The cross-encoder of a file, through ONNX Runtime on the merged weights."""

    def __init__(self, model: CrossEncoderFile, export_dir: Path) -> None:
        from spider.retrieve.dense import bundled_model_path, silence_progress_bars
        from spider.retrieve.onnx_encoder import load_onnx_model

        self.file = model
        silence_progress_bars()  # a first use exports the merged model through transformers
        merged = tuned_model_dir(model.delta, bundled_model_path(), export_dir)
        self.onnx = load_onnx_model(str(merged), str(export_dir), model.max_tokens, "onnx")

    def scores(self, query: str, documents: list[str], batch_size: int = 16) -> np.ndarray:
        """The cross-encoder's score of each document for ``query``."""
        if not documents:
            return np.zeros(0)
        vectors = self.onnx.encode_pairs([(query, d) for d in documents], batch_size)
        projected: np.ndarray = vectors @ self.file.direction
        return self.file.scale * projected + self.file.bias


@lru_cache(maxsize=2)
def _scorer(path: str, _size: int, _mtime_ns: int, export_dir: str) -> CrossScorer:
    return CrossScorer(_read_cached(path, _size, _mtime_ns), Path(export_dir))


def settings_scorer(settings: EngineSettings) -> CrossScorer | None:
    """The scorer of the cross-encoder ``settings`` name (None: off), loaded once."""
    path = cross_path(settings.cross_encoder)
    if path is None:
        return None
    st = path.stat()
    return _scorer(str(path.resolve()), st.st_size, st.st_mtime_ns, str(settings.export_dir()))


def standardised(scores: np.ndarray) -> np.ndarray:
    """Scores as z-values within one list (a constant list: zeros)."""
    scores = np.asarray(scores, dtype=np.float64)
    sd = float(scores.std()) if len(scores) else 0.0
    return (scores - scores.mean()) / sd if sd > 1e-9 else np.zeros_like(scores)


def combined(ranker: np.ndarray, cross: np.ndarray, weight: float) -> np.ndarray:
    """The score the top items are re-sorted by: the ranker's z-score plus ``weight`` x
    the cross-encoder's, both within the re-scored items."""
    return standardised(ranker) + weight * standardised(cross)


def rerank_top(
    order: np.ndarray, ranker: np.ndarray, cross: np.ndarray, weight: float
) -> tuple[np.ndarray, np.ndarray]:
    """``order``'s first ``len(cross)`` items re-sorted by :func:`combined` (the rest
    keep their place), and the ranker's scores of those items in their new order."""
    n = len(cross)
    by = np.argsort(-combined(ranker[:n], cross, weight), kind="stable")
    return np.concatenate([order[:n][by], order[n:]]), np.asarray(ranker[:n])[by]


def rescore(
    index: Index, issue: Issue, order: np.ndarray, logits: np.ndarray, scorer: CrossScorer
) -> tuple[np.ndarray, np.ndarray, int]:
    """The pool ranker's ``order`` (and its ``logits`` of the re-scored head) with the top
    ``depth`` re-sorted by the cross-encoder read with ``issue``; returns the order, the
    ranker's logits in it, and how many items the cross-encoder read."""
    n = min(scorer.file.depth, len(logits))
    if n < 2:
        return order, logits, 0
    cross = scorer.scores(issue.text, [index.document(int(i)) for i in order[:n]])
    logits = np.asarray(logits)
    new, top = rerank_top(order, logits, cross, scorer.file.weight)
    return new, np.concatenate([top, logits[n:]]), n


__all__ = [
    "CROSS_FILE",
    "CROSS_KIND",
    "CrossEncoderFile",
    "CrossScorer",
    "combined",
    "cross_path",
    "read_cross",
    "rerank_top",
    "rescore",
    "settings_scorer",
    "standardised",
]
