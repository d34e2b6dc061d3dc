"""One query end to end: first-stage ranking, SpIDER expansion, hits with reasons."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from spider.errors import EmptyIssue
from spider.expand import run_expansion
from spider.index import Index
from spider.models import Hit, Issue, Localization, Reason
from spider.rerank import rerank_head
from spider.retrieve.fusion import ranks_from_scores, reciprocal_rank_fusion
from spider.retrieve.signals import extract_signals, signal_bonus, signal_scores
from spider.select import OfflineSelector, Selector, make_selector
from spider.settings import EngineSettings


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

    def item_features(self, ids: list[str], pool: int) -> dict[str, dict[str, float]]:
        """Per-item first-stage features of the top ``pool`` items, for the selector."""
        out: dict[str, dict[str, float]] = {}
        for i in self.order[:pool]:
            f: dict[str, float] = {}
            for name, ranks in self.ranks.items():
                if name not in ("signals", "file"):
                    f[f"log_{name}_rank"] = float(np.log(max(int(ranks[i]), 1)))
            f["signal"] = float(self.signal[i]) if self.signal is not None else 0.0
            out[ids[int(i)]] = f
        return out


def first_stage(index: Index, issue: Issue, settings: EngineSettings) -> FirstStage:
    """Rank every function of the index for the issue with the configured first stage."""
    text = issue.text[: settings.max_issue_chars]
    ranks: dict[str, np.ndarray] = {}
    scores: dict[str, np.ndarray] = {}
    if settings.first_stage in ("dense", "hybrid"):
        vecs = index.vectors()
        q = index.encoder().encode_query(text)
        scores["dense"] = vecs @ q if len(vecs) else np.zeros(0, dtype=np.float32)
        ranks["dense"] = ranks_from_scores(scores["dense"])
    if settings.first_stage in ("bm25", "hybrid"):
        scores["bm25"] = index.lexical().scores(text)
        ranks["bm25"] = ranks_from_scores(scores["bm25"])
    if settings.first_stage == "hybrid":
        lists, weights = (
            [ranks["dense"], ranks["bm25"]],
            [settings.fusion_dense, settings.fusion_bm25],
        )
        if settings.fusion_file > 0 and len(ranks["dense"]):
            file_ranks = ranks_from_scores(index.file_lexical().scores(text))
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
    fs = FirstStage(
        kind=settings.first_stage,
        order=order,
        rank=rank,
        scores=fused,
        ranks=ranks,
        evidence=evidence,
        signal=sig_arr,
        raw=scores,
    )
    if settings.reranks:
        fs.order = rerank_head(index, fs, settings.k, issue=issue)
    return fs


def evidence_reason(evidence: str) -> Reason:
    """A reason from a signal description such as ``"frame: a.py:12"`` or ``"file: a.py"``."""
    kind, _, detail = evidence.partition(": ")
    if kind == "frame":
        return Reason(kind="traceback", detail=detail)
    return Reason(kind="mention", detail=f"{kind}: {detail}")


def _first_stage_reason(fs: FirstStage, idx: int, rank: int, score: float) -> Reason:
    detail = None
    if fs.kind == "hybrid":
        detail = f"dense {int(fs.ranks['dense'][idx])}, BM25 {int(fs.ranks['bm25'][idx])}"
    return Reason(kind=fs.kind, rank=rank, score=round(score, 6), detail=detail)  # type: ignore[arg-type]


def locate(
    index: Index,
    issue: Issue,
    settings: EngineSettings | None = None,
    *,
    selector: Selector | None = None,
) -> Localization:
    """The K functions most likely to need an edit for ``issue``, each with its reasons."""
    settings = settings or index.settings
    if not issue.text.strip():
        raise EmptyIssue("the issue has no title or body text to search with")
    selector = selector or make_selector(settings)
    t0 = time.perf_counter()
    fs = first_stage(index, issue, settings)
    t1 = time.perf_counter()
    ids = index.function_ids
    pool_n = max(settings.pool, settings.k)
    ranked = [ids[i] for i in fs.order[:pool_n]]
    pos = {ids[i]: int(i) for i in fs.order[:pool_n]}
    score_of = {ids[i]: float(fs.scores[i]) for i in fs.order[:pool_n]}
    feats = fs.item_features(ids, pool_n)
    final, placed, requests = run_expansion(
        index.graph, issue, ranked, score_of, settings, selector, feats
    )
    rank_of = {n: r + 1 for r, n in enumerate(ranked)}
    if placed and settings.placement == "probability" and isinstance(selector, OfflineSelector):
        final = selector.place(final, placed, requests, rank_of)
    t2 = time.perf_counter()
    hits: list[Hit] = []
    g = index.graph.g
    for node_id in final:
        a = g.nodes[node_id]
        reasons: list[Reason] = []
        adm = placed.get(node_id)
        if adm is not None:
            reasons.append(Reason(kind="expand", centre=adm.centre, edge=adm.edge, hops=adm.hops))
        reasons.append(
            _first_stage_reason(fs, pos[node_id], int(fs.rank[pos[node_id]]), score_of[node_id])
        )
        ev = fs.evidence.get(pos[node_id])
        if ev is not None:
            reasons.append(evidence_reason(ev))
        hits.append(
            Hit(
                id=node_id,
                path=a.get("path", ""),
                name=a.get("name", ""),
                start_line=int(a.get("start_line", 0)),
                end_line=int(a.get("end_line", 0)),
                score=score_of[node_id],
                reasons=reasons,
            )
        )
    return Localization(
        commit=index.commit,
        hits=hits,
        settings={
            "k": settings.k,
            "first_stage": settings.first_stage,
            "rerank": settings.reranks,
            "selector": selector.name,
            "edges": list(settings.edges),
            "centres": settings.centres,
            "depth": settings.depth,
            "pool": settings.pool,
            "model": settings.model or "all-MiniLM-L6-v2 (bundled)",
        },
        timings={
            "first_stage": t1 - t0,
            "expansion": t2 - t1,
            "total": t2 - t0,
            "selector_calls": float(len(requests)),
        },
    )
