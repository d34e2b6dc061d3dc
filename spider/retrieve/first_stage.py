"""The first stage: rank every function of an index for an issue.

Dense retrieval, BM25 and file-level BM25 fused by weighted reciprocal rank, plus the
issue's own evidence (stack frames, paths, identifiers). The result keeps each ranker's
ranks and raw scores so later stages (head re-ranking, the selector's features, the hit
reasons) read them from one place instead of recomputing them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from spider.retrieve.bm25 import LexicalIndex
from spider.retrieve.cold import partial_note, pooled_dense_scores
from spider.retrieve.dense import Encoder
from spider.retrieve.fusion import ranks_from_scores, reciprocal_rank_fusion
from spider.retrieve.query import best_cosine, issue_queries
from spider.retrieve.signals import NameTable, extract_signals, signal_bonus, signal_scores

if TYPE_CHECKING:
    from spider.models import Issue
    from spider.settings import EngineSettings


class Rankable(Protocol):
    """What the first stage reads from an index (``spider.index.Index`` provides it)."""

    @property
    def function_ids(self) -> list[str]: ...

    def vectors(self) -> np.ndarray: ...

    def has_vectors(self) -> bool: ...

    def vectors_of(self, rows: np.ndarray, *, cache: bool = True) -> np.ndarray: ...

    def encoder(self) -> Encoder: ...

    def lexical(self) -> LexicalIndex: ...

    def file_lexical(self) -> LexicalIndex: ...

    def file_of(self) -> np.ndarray: ...

    def name_table(self) -> NameTable: ...


@dataclass
class FirstStage:
    """The first-stage ranking of every function."""

    kind: str  # dense / bm25 / hybrid
    order: np.ndarray  # function indices, best first (the head re-sorted when re-ranking)
    rank: np.ndarray  # 1-based fused rank of every function, before any re-ranking
    scores: np.ndarray  # score per function (higher is better)
    ranks: dict[str, np.ndarray]  # per ranker: 1-based rank of every function
    evidence: dict[int, str]  # function index -> strongest issue signal, in words
    signal: np.ndarray | None = None  # issue-signal strength per function (0 = none)
    raw: dict[str, np.ndarray] = field(default_factory=dict)  # per ranker: raw score
    reranked: bool = False  # whether ``order``'s head was re-sorted by a learned model
    ranked_by: str | None = None  # which: "pool" (spider.pool_rank) or "head" (spider.rerank)
    ranked_depth: int = 0  # how many of the first stage's items that model re-scored
    head_logits: np.ndarray | None = None  # that model's scores, in ``order``'s order
    partial: dict[str, Any] | None = None  # set when dense scored only a pool (cold path)
    pool: np.ndarray | None = None  # the function indices dense scored (cold path)
    issue: Issue | None = None  # the issue as ranked (cut at max_issue_chars): later stages
    # read this one, so every feature sees the text the rankers saw
    file_scores: np.ndarray | None = None  # file-level BM25 score per file (hybrid)
    query_texts: int = 0  # texts the issue was embedded as for dense retrieval (windows)
    query_adapter: str = ""  # the query adapter those texts went through (setting), "" = none

    def shown_rank(self) -> np.ndarray:
        """1-based position of every function in ``order``: the rank a reader sees."""
        shown = np.empty(len(self.order), dtype=np.int64)
        shown[self.order] = np.arange(1, len(self.order) + 1)
        return shown


def _cold(index: Rankable, settings: EngineSettings) -> bool:
    """Whether dense scores only a pool: the cold path is on and vectors are missing (or
    the benchmark's cold method asks for a first visit)."""
    if not 0 < settings.cold_pool < len(index.function_ids):
        return False  # off, or the pool would be the whole index
    return settings.cold_always or not index.has_vectors()


def first_stage(
    index: Rankable, issue: Issue, settings: EngineSettings, *, dense: bool = True
) -> FirstStage:
    """Rank every function of the index for the issue with the configured first stage.

    ``dense=False`` leaves the dense ranking out (what the cold path pools from)."""
    issue = issue.clipped(settings.max_issue_chars)
    text = issue.text
    ranks: dict[str, np.ndarray] = {}
    scores: dict[str, np.ndarray] = {}
    partial: dict[str, Any] | None = None
    pool: np.ndarray | None = None
    queries = np.zeros((0, 0), dtype=np.float32)
    if not dense:
        settings = settings.model_copy(update={"first_stage": "hybrid"})
    elif settings.first_stage in ("dense", "hybrid") and _cold(index, settings):
        cheap = first_stage(index, issue, settings, dense=False).order[: settings.cold_pool]
        queries = issue_queries(index.encoder(), issue, settings)
        scores["dense"] = pooled_dense_scores(index, queries, cheap)
        ranks["dense"] = ranks_from_scores(scores["dense"])
        partial = partial_note(len(cheap), len(index.function_ids))
        pool = cheap
    elif settings.first_stage in ("dense", "hybrid"):
        vecs = index.vectors()
        queries = issue_queries(index.encoder(), issue, settings)
        scores["dense"] = best_cosine(vecs, queries)
        ranks["dense"] = ranks_from_scores(scores["dense"])
    if settings.first_stage in ("bm25", "hybrid"):
        scores["bm25"] = index.lexical().scores(text)
        ranks["bm25"] = ranks_from_scores(scores["bm25"])
    file_scores: np.ndarray | None = None
    if settings.first_stage == "hybrid":
        lists, weights = [ranks["bm25"]], [settings.fusion_bm25]
        if "dense" in ranks:
            lists.append(ranks["dense"])
            weights.append(settings.fusion_dense)
        if settings.fusion_file > 0 and len(index.function_ids):
            file_scores = index.file_lexical().scores(text)
            file_ranks = ranks_from_scores(file_scores)
            ranks["file"] = file_ranks[index.file_of()]
            lists.append(ranks["file"])
            weights.append(settings.fusion_file)
        fused = reciprocal_rank_fusion(lists, weights, settings.fusion_k)
    else:
        fused = scores[settings.first_stage].astype(np.float64)
    evidence: dict[int, str] = {}
    sig_arr: np.ndarray | None = None
    if settings.signals and settings.first_stage == "hybrid" and len(fused):
        sig, evidence = signal_scores(
            index.name_table(), extract_signals(text), len(index.function_ids)
        )
        sig_arr = np.asarray(sig, dtype=np.float64)
        has = sig_arr > 0
        if has.any():
            fused = fused + signal_bonus(sig_arr, settings.fusion_signals, settings.fusion_k)
            ranks["signals"] = np.where(has, ranks_from_scores(sig_arr), 0)
    order = np.argsort(-fused, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(1, len(order) + 1)
    return FirstStage(
        kind=settings.first_stage,
        order=order,
        rank=rank,
        scores=fused,
        ranks=ranks,
        evidence=evidence,
        signal=sig_arr,
        raw=scores,
        partial=partial,
        pool=pool,
        issue=issue,
        file_scores=file_scores,
        query_texts=len(queries),
        query_adapter=settings.query_adapter if len(queries) else "",
    )
