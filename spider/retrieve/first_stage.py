"""The first stage: rank every function of an index for an issue.

Dense retrieval, BM25 and file-level BM25 fused by weighted reciprocal rank, plus the
issue's own evidence (stack frames, paths, identifiers). The result keeps each ranker's
ranks and raw scores so later stages (head re-ranking, the selector's features, the hit
reasons) read them from one place instead of recomputing them; when a learned model will
re-rank, it also holds what that model's features read (:class:`FeatureInputs`: the
title's own ranks among them), so one query walks the retrievers once.

The record is frozen: a re-ranking is a :class:`Reordering` attached by
:meth:`FirstStage.reordered`, which returns a new record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np

from spider.models import PartialIndex
from spider.retrieve.bm25 import LexicalIndex
from spider.retrieve.cold import pooled_dense_scores
from spider.retrieve.dense import Encoder
from spider.retrieve.fusion import FusionWeights, fuse, ranks_from_scores
from spider.retrieve.history import FunctionHistory
from spider.retrieve.query import best_cosine, issue_queries, query_vectors
from spider.retrieve.signals import IssueSignals, NameTable, extract_signals, signal_scores

if TYPE_CHECKING:
    from spider.models import Issue
    from spider.settings import EngineSettings


RankedBy = Literal["pool", "head"]


class Rankable(Protocol):
    """What the first stage reads from an index (``spider.index.Index`` provides it)."""

    @property
    def function_ids(self) -> list[str]: ...

    def vectors(self) -> np.ndarray: ...

    def has_vectors(self) -> bool: ...

    def vectors_of(self, rows: np.ndarray) -> np.ndarray: ...

    def encoder(self) -> Encoder: ...

    def lexical(self) -> LexicalIndex: ...

    def file_lexical(self) -> LexicalIndex: ...

    def file_of(self) -> np.ndarray: ...

    def name_table(self) -> NameTable: ...

    def history(self) -> FunctionHistory: ...


@dataclass(frozen=True, eq=False)
class ColdPath:
    """The cold path's record: dense scored only ``pool`` of ``functions`` functions."""

    pool: np.ndarray  # the function indices dense scored, best cheap rank first
    functions: int  # functions in the index

    @property
    def partial(self) -> PartialIndex:
        """What a Localization reports about a ranking made from this partial index."""
        return PartialIndex(embedded_functions=len(self.pool), functions=self.functions)


@dataclass(frozen=True, eq=False)
class FeatureInputs:
    """What the learned stages' features read beyond the fused ranking, computed once by
    the first stage so that ``spider.rank.features`` never embeds or scores the issue again."""

    title_ranks: Mapping[str, np.ndarray]  # dense / bm25: 1-based rank for the title alone
    file_scores: np.ndarray | None  # file-level BM25 score per file (hybrid), fused or not
    frames: int  # stack frames in the issue
    # BM25 of the issue against earlier commits' messages, per "function" and per "file"
    # (spider.retrieve.history); {} when the index has no history, None when not computed
    history_scores: Mapping[str, np.ndarray] | None = None


@dataclass(frozen=True, eq=False)
class Reordering:
    """A learned model's new order of the first stage's head."""

    order: np.ndarray  # function indices, best first: the head re-sorted, the rest as ranked
    logits: np.ndarray  # that model's scores of the head, in ``order``'s order
    by: RankedBy  # which model: "pool" (spider.rank.pool_rank) or "head" (spider.rank.rerank)
    depth: int  # how many of the first stage's items it re-scored
    cross: str = ""  # digest of the cross-encoder that re-scored its top (spider.rank.cross)
    cross_depth: int = 0  # how many of its top items the cross-encoder read
    ranker: str = ""  # digest of the pool ranker's file when not the shipped one


@dataclass(frozen=True, eq=False)
class FirstStage:
    """The first-stage ranking of every function (immutable: re-ranking makes a new one,
    :meth:`reordered`)."""

    kind: str  # dense / bm25 / hybrid
    fused_order: np.ndarray  # function indices, best first, as the first stage ranked them
    rank: np.ndarray  # 1-based fused rank of every function, before any re-ranking
    scores: np.ndarray  # score per function (higher is better)
    ranks: Mapping[str, np.ndarray]  # per ranker: 1-based rank of every function
    evidence: Mapping[int, str]  # function index -> strongest issue signal, in words
    issue: Issue  # the issue as ranked (cut at max_issue_chars): later stages read this
    # one, so every feature sees the text the rankers saw
    signal: np.ndarray | None = None  # issue-signal strength per function (0 = none)
    raw: Mapping[str, np.ndarray] = field(default_factory=dict)  # per ranker: raw score
    cold: ColdPath | None = None  # set when dense scored only a pool (cold path)
    query_texts: int = 0  # texts the issue was embedded as for dense retrieval (windows)
    query_adapter: str = ""  # the query adapter those texts went through (setting), "" = none
    inputs: FeatureInputs | None = None  # for the learned stages; None: not computed
    reordering: Reordering | None = None  # a learned model's order of the head, if any

    def __post_init__(self) -> None:
        for arr in (self.fused_order, self.rank, self.scores, self.signal):
            _read_only(arr)
        for table in (self.ranks, self.raw):
            for arr in table.values():
                _read_only(arr)
        object.__setattr__(self, "ranks", MappingProxyType(dict(self.ranks)))
        object.__setattr__(self, "raw", MappingProxyType(dict(self.raw)))
        object.__setattr__(self, "evidence", MappingProxyType(dict(self.evidence)))

    def reordered(self, reordering: Reordering) -> FirstStage:
        """This ranking with its head re-sorted by a learned model (a new record)."""
        return replace(self, reordering=reordering)

    @property
    def order(self) -> np.ndarray:
        """Function indices, best first: the learned model's order when one re-sorted the
        head, else the fused order."""
        return self.fused_order if self.reordering is None else self.reordering.order

    @property
    def head_logits(self) -> np.ndarray | None:
        """The re-ranking model's scores, in :attr:`order`'s order (None: not re-ranked)."""
        return None if self.reordering is None else self.reordering.logits

    @property
    def reranked(self) -> bool:
        """Whether :attr:`order`'s head was re-sorted by a learned model."""
        return self.reordering is not None

    @property
    def ranked_by(self) -> RankedBy | None:
        """Which model re-sorted the head: "pool" or "head" (None: none did)."""
        return None if self.reordering is None else self.reordering.by

    @property
    def ranked_depth(self) -> int:
        """How many of the first stage's items the re-ranking model re-scored (0: none)."""
        return 0 if self.reordering is None else self.reordering.depth

    @property
    def pool(self) -> np.ndarray | None:
        """The function indices dense scored on the cold path (None: all of them)."""
        return None if self.cold is None else self.cold.pool

    @property
    def partial(self) -> PartialIndex | None:
        """The partial index this ranking was made from (cold path), else None."""
        return None if self.cold is None else self.cold.partial

    def shown_rank(self) -> np.ndarray:
        """1-based position of every function in ``order``: the rank a reader sees."""
        shown = np.empty(len(self.order), dtype=np.int64)
        shown[self.order] = np.arange(1, len(self.order) + 1)
        return shown


def _read_only(arr: np.ndarray | None) -> None:
    """Mark an array of the record read-only (it was made for the record alone)."""
    if arr is not None:
        arr.flags.writeable = False


def _cold(index: Rankable, settings: EngineSettings) -> bool:
    """Whether dense scores only a pool: the cold path is on and vectors are missing (or
    the benchmark's cold method asks for a first visit)."""
    if not 0 < settings.cold_pool < len(index.function_ids):
        return False  # off, or the pool would be the whole index
    return settings.cold_always or not index.has_vectors()


def first_stage(
    index: Rankable,
    issue: Issue,
    settings: EngineSettings,
    *,
    dense: bool = True,
    learned: bool = True,
    history: bool = True,
) -> FirstStage:
    """Rank every function of the index for the issue with the configured first stage:
    each ranker in turn (dense, BM25, file BM25, history, issue signals: one ``_*_ranking``
    step each), then :func:`~spider.retrieve.fusion.fuse` (hybrid) or the one ranker's scores.

    ``dense=False`` leaves the dense ranking out (what the cold path pools from).
    ``learned``: also compute what the learned stages' features read (:class:`FeatureInputs`:
    the title's own ranks, file BM25 when it was not fused, and with ``history`` the issue's
    BM25 against earlier commits' messages); ``spider.localize.locate`` asks for them only
    when a learned model re-ranks, and for history only when that model reads it."""
    issue = issue.clipped(settings.max_issue_chars)
    text = issue.text
    lists = _Lists()
    queries, cold = np.zeros((0, 0), dtype=np.float32), None
    if not dense:
        settings = settings.model_copy(update={"first_stage": "hybrid"})
    elif settings.first_stage in ("dense", "hybrid"):
        queries, cold = _dense_ranking(index, issue, settings, lists)
    query_adapter = settings.query_adapter if len(queries) else ""
    if settings.first_stage in ("bm25", "hybrid"):
        lists.add("bm25", index.lexical().scores(text))
    hybrid = settings.first_stage == "hybrid"
    any_function = len(index.function_ids) > 0
    file_scores = said = None
    if hybrid and settings.fusion_file > 0 and any_function:
        file_scores = _file_ranking(index, text, lists)
    if hybrid and settings.fusion_history > 0 and any_function:
        said = _history_ranking(index, text, lists)
    use_signals = settings.signals and hybrid and any_function
    found = extract_signals(text) if use_signals or learned else None
    inputs: FeatureInputs | None = None
    if learned and found is not None:
        if file_scores is None and hybrid:
            file_scores = index.file_lexical().scores(text)  # not fused, but a feature
        title = _title_ranks(index, issue.title, lists.ranks, query_adapter, cold)
        scored = _history_scores(index, text, said) if history else None
        inputs = FeatureInputs(title, file_scores, len(found.frames), scored)
    sig_arr, evidence = _signal_ranking(index, found if use_signals else None, lists)
    if hybrid:
        fused = fuse(lists.ranks, FusionWeights.from_settings(settings), sig_arr)
    else:
        fused = lists.raw[settings.first_stage].astype(np.float64)
    order = np.argsort(-fused, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(1, len(order) + 1)
    return FirstStage(
        kind=settings.first_stage, fused_order=order, rank=rank, scores=fused,
        ranks=lists.ranks, evidence=evidence, issue=issue, signal=sig_arr, raw=lists.raw,
        cold=cold, query_texts=len(queries), query_adapter=query_adapter, inputs=inputs,
    )  # fmt: skip


@dataclass
class _Lists:
    """What the rankers of one query produced so far: per ranker, the 1-based rank of
    every function and (for the rankers that score functions themselves) the raw score."""

    ranks: dict[str, np.ndarray] = field(default_factory=dict)
    raw: dict[str, np.ndarray] = field(default_factory=dict)

    def add(self, name: str, scores: np.ndarray) -> None:
        """Record ranker ``name``'s scores of every function and the ranks they give."""
        self.raw[name] = scores
        self.ranks[name] = ranks_from_scores(scores)


def _dense_ranking(
    index: Rankable, issue: Issue, settings: EngineSettings, lists: _Lists
) -> tuple[np.ndarray, ColdPath | None]:
    """Dense retrieval: the issue's query vectors against every function's, or on the cold
    path against a pool the cheap rankers chose. Returns the query vectors and the cold
    path's record (None when every function was scored)."""
    if _cold(index, settings):
        cheap = first_stage(index, issue, settings, dense=False, learned=False).order[
            : settings.cold_pool
        ]
        queries = issue_queries(index.encoder(), issue, settings)
        lists.add("dense", pooled_dense_scores(index, queries, cheap))
        return queries, ColdPath(pool=cheap, functions=len(index.function_ids))
    vecs = index.vectors()
    queries = issue_queries(index.encoder(), issue, settings)
    lists.add("dense", best_cosine(vecs, queries))
    return queries, None


def _file_ranking(index: Rankable, text: str, lists: _Lists) -> np.ndarray:
    """File-level BM25: each function ranked as its file is. Returns the files' scores."""
    file_scores = index.file_lexical().scores(text)
    lists.ranks["file"] = ranks_from_scores(file_scores)[index.file_of()]
    return file_scores


def _history_ranking(index: Rankable, text: str, lists: _Lists) -> np.ndarray:
    """History at inference: functions ranked by the BM25 of the issue against what
    earlier commits that edited them said. Returns those scores (the features reuse them)."""
    said = index.history().scores(text)
    # a function no earlier message matches: rank 0, it adds nothing to the fusion
    lists.ranks["history"] = np.where(said > 0, ranks_from_scores(said), 0)
    return said


def _signal_ranking(
    index: Rankable, found: IssueSignals | None, lists: _Lists
) -> tuple[np.ndarray | None, dict[int, str]]:
    """The issue's own evidence (stack frames, paths, names): its strength per function and
    the strongest signal of each function named, in words (None and none: not used)."""
    if found is None:
        return None, {}
    sig, evidence = signal_scores(index.name_table(), found, len(index.function_ids))
    sig_arr = np.asarray(sig, dtype=np.float64)
    if (sig_arr > 0).any():
        lists.ranks["signals"] = np.where(sig_arr > 0, ranks_from_scores(sig_arr), 0)
    return sig_arr, evidence


def _history_scores(
    index: Rankable, text: str, said: np.ndarray | None
) -> Mapping[str, np.ndarray]:
    """The issue's BM25 against the earlier commit messages of every function and every
    file (``said``: the functions' scores when the fusion already computed them); empty
    when the index has no history."""
    hist = index.history()
    if not hist.commits:
        return MappingProxyType({})
    out = {
        "function": said if said is not None else hist.scores(text, "function"),
        "file": hist.scores(text, "file"),
    }
    for arr in out.values():
        _read_only(arr)
    return MappingProxyType(out)


def _title_ranks(
    index: Rankable,
    title: str,
    ranks: Mapping[str, np.ndarray],
    query_adapter: str,
    cold: ColdPath | None,
) -> Mapping[str, np.ndarray]:
    """Dense and BM25 ranks of every function for the title alone (the issue's summary),
    for each of the two the first stage ranked by: the title is one more short query
    through the same adapter, over the same vectors (the cold path's pool only)."""
    out: dict[str, np.ndarray] = {}
    title = title.strip()
    if not title or not index.function_ids:
        return MappingProxyType(out)
    if "dense" in ranks:
        q = query_vectors(index.encoder(), [title], query_adapter)
        if cold is not None:  # cold path: the pool's vectors only
            out["dense"] = ranks_from_scores(pooled_dense_scores(index, q, cold.pool))
        else:
            out["dense"] = ranks_from_scores(best_cosine(index.vectors(), q))
    if "bm25" in ranks:
        out["bm25"] = ranks_from_scores(index.lexical().scores(title))
    for arr in out.values():
        _read_only(arr)
    return MappingProxyType(out)
