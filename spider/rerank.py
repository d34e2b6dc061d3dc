"""Order the head of the first-stage ranking by an estimated probability of being edited.

Fusion decides *which* functions make the top K well, but its order inside the top K is
noisy: a long function that matches the issue's words strongly often sits below short
helpers that the dense ranker likes. A small logistic model over features every query
already has (first-stage ranks and scores, function length and name shape, issue signals,
the best rank in the same file and among graph neighbours) re-sorts the top ``k`` items.
Membership of the top ``k`` never changes, so Recall@K and Acc@K are untouched; only the
order (MRR, what a reader sees first) moves.

The coefficients live in ``rerank_weights.json`` beside this file on the raw feature
scale; ``spider bench fit-rerank`` regenerates them from the dev set with
leave-one-repository-out cross-validation (see the README).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from spider.errors import WeightsFormatError
from spider.retrieve.fusion import ranks_from_scores

if TYPE_CHECKING:
    from spider.index import Index
    from spider.locate import FirstStage
    from spider.models import Issue

WEIGHTS_FILE = Path(__file__).with_name("rerank_weights.json")
RANK_CAP = 1000  # ranks beyond this carry no more information; keeps features repo-size free
FEATURES = (
    "log_rank",  # fused first-stage rank
    "log_dense_rank",
    "log_bm25_rank",
    "log_file_rank",  # rank of the function's file by file-level BM25
    "log_title_dense_rank",  # dense rank for the issue title alone
    "log_title_bm25_rank",  # BM25 rank for the issue title alone
    "bm25_share",  # BM25 score / best BM25 score of the query: how strong the word match is
    "dense_gap",  # cosine similarity minus the best one of the query
    "log_lines",  # length of the function
    "private",  # `_name` (not dunder)
    "init",  # `__init__`
    "signal",  # issue-signal strength (stack frame, mention, ...)
    "log_file_best",  # best fused rank of any function in the same file
    "log_neighbour_best",  # best fused rank among its contains/invokes neighbours
)


@dataclass(frozen=True)
class RerankWeights:
    """Logistic coefficients per feature on the raw scale; ``bias`` is the intercept."""

    coef: Mapping[str, float]
    bias: float = 0.0
    meta: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path = WEIGHTS_FILE) -> RerankWeights:
        """Read a weights file written by ``spider bench fit-rerank``."""
        try:
            data = json.loads(Path(path).read_text())
            coef = {str(k): float(v) for k, v in data["coef"].items()}
            bias = float(data.get("bias", 0.0))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise WeightsFormatError(f"cannot read rerank weights {path}: {exc}") from exc
        unknown = set(coef) - set(FEATURES)
        if unknown:
            raise WeightsFormatError(
                f"rerank weights {path} name unknown features {sorted(unknown)}; "
                "regenerate them with `spider bench fit-rerank`"
            )
        meta = {k: v for k, v in data.items() if k not in ("coef", "bias")}
        return cls(coef=coef, bias=bias, meta=meta)

    def logits(self, features: np.ndarray) -> np.ndarray:
        """Log-odds of being edited for each row of ``features`` (columns as ``FEATURES``)."""
        w = np.array([self.coef.get(name, 0.0) for name in FEATURES])
        return features @ w + self.bias


@lru_cache(maxsize=1)
def default_weights() -> RerankWeights:
    """The shipped weights."""
    return RerankWeights.load()


def _log_rank(r: float) -> float:
    return math.log(min(max(r, 1.0), RANK_CAP))


def _title_ranks(index: Index, fs: FirstStage, title: str) -> dict[str, np.ndarray]:
    """Dense and BM25 ranks of every function for the title alone (the issue's summary)."""
    out: dict[str, np.ndarray] = {}
    title = title.strip()
    if not title or not index.function_ids:
        return out
    if "dense" in fs.ranks:
        out["dense"] = ranks_from_scores(index.vectors() @ index.encoder().encode_query(title))
    if "bm25" in fs.ranks:
        out["bm25"] = ranks_from_scores(index.lexical().scores(title))
    return out


def item_features(
    index: Index, fs: FirstStage, items: Sequence[int], issue: Issue | None = None
) -> np.ndarray:
    """Feature rows (``FEATURES`` order) for the function indices ``items`` of ``fs``."""
    ids = index.function_ids
    title = _title_ranks(index, fs, issue.title) if issue is not None else {}
    n = len(ids)
    rank = fs.rank
    file_of = index.file_of()
    file_best = np.full(int(file_of.max()) + 1 if n else 0, n, dtype=np.int64)
    np.minimum.at(file_best, file_of, rank)
    pos = index.name_table().index_of  # function id -> position, built once per index
    g = index.graph
    raw_b = fs.raw.get("bm25")
    raw_d = fs.raw.get("dense")
    top_b = float(raw_b.max()) if raw_b is not None and len(raw_b) else 0.0
    top_d = float(raw_d.max()) if raw_d is not None and len(raw_d) else 0.0
    rows = []
    for i in items:
        node = ids[i]
        attrs = g.g.nodes[node]
        short = attrs.get("name", "").split("#")[0].split(".")[-1]
        near = g.neighbours(node, "contains") | g.neighbours(node, "invokes")
        near_ranks = [rank[pos[m]] for m in near if m in pos]
        lines = int(attrs.get("end_line", 0)) - int(attrs.get("start_line", 0)) + 1

        def ranked(name: str, i: int = i, ranks: Mapping[str, np.ndarray] = fs.ranks) -> float:
            r = ranks.get(name)
            return _log_rank(float(r[i])) if r is not None else _log_rank(RANK_CAP)

        rows.append(
            [
                _log_rank(float(rank[i])),
                ranked("dense"),
                ranked("bm25"),
                ranked("file"),
                ranked("dense", ranks=title),
                ranked("bm25", ranks=title),
                float(raw_b[i]) / top_b if raw_b is not None and top_b > 0 else 0.0,
                float(raw_d[i]) - top_d if raw_d is not None else 0.0,
                math.log(max(lines, 1)),
                float(short.startswith("_") and not short.startswith("__")),
                float(short == "__init__"),
                float(fs.signal[i]) if fs.signal is not None else 0.0,
                _log_rank(float(file_best[file_of[i]])),
                _log_rank(float(min(near_ranks, default=RANK_CAP))),
            ]
        )
    return np.array(rows, dtype=np.float64).reshape(len(rows), len(FEATURES))


def rerank_head(
    index: Index,
    fs: FirstStage,
    k: int,
    weights: RerankWeights | None = None,
    issue: Issue | None = None,
) -> np.ndarray:
    """``fs.order`` with its first ``k`` items re-sorted by estimated probability of an edit."""
    weights = weights or default_weights()
    head = fs.order[:k]
    if len(head) < 2:
        return fs.order
    logits = weights.logits(item_features(index, fs, [int(i) for i in head], issue))
    new_head = head[np.argsort(-logits, kind="stable")]
    return np.concatenate([new_head, fs.order[k:]])
