"""One query end to end: first stage, head re-ranking, SpIDER expansion, hits with reasons."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from spider.errors import EmptyIssue, LLMError
from spider.expand.neighbours import Expansion, run_expansion
from spider.expand.select import OfflineSelector, Selector, make_selector
from spider.expand.select.exchange import Admission
from spider.expand.tidy import named_as_code, tidy_list
from spider.graph.extract import display_name
from spider.graph.model import CodeGraph
from spider.index import Index
from spider.llm.backends import Backend, make_backend
from spider.llm.judge import Judge
from spider.llm.prompts import Function
from spider.llm.reader import read_list
from spider.models import Hit, Issue, Link, LLMRun, Localization, Reason, RunSettings
from spider.progress import Progress
from spider.rank.calibration import Calibration
from spider.rank.cross import rescore, settings_scorer
from spider.rank.features import HISTORY_FEATURES, pool_features
from spider.rank.pool_rank import (
    PoolRanker,
    custom_digest,
    rank_pool,
    ranker_reads_history,
    settings_ranker,
)
from spider.rank.rerank import HeadCalibration, default_calibration, rerank_with_logits
from spider.retrieve.first_stage import FirstStage, Reordering, first_stage
from spider.retrieve.signals import NameTable
from spider.settings import EngineSettings

CLOSE_WORDING_RANK = 10  # a dense rank this good means the text reads like the issue
MAX_TERMS = 3  # shared words shown per hit: the rarest ones say the most


def ranked_first_stage(
    index: Index, issue: Issue, settings: EngineSettings, *, ranker: PoolRanker | None = None
) -> FirstStage:
    """The first stage, re-ordered by the learned model the settings ask for: the pool
    ranker over the top ``ranker_depth`` (``ranker`` or the one the settings name), or the
    head model over the top K (also when no pool model ships). The first stage computes the
    models' feature inputs only when one of them runs (history only for a pool ranker that
    reads it); re-ordering makes a new record."""
    if settings.reranks and settings.ranker == "pool":
        ranker = ranker or settings_ranker(settings)
    pool = ranker if settings.reranks and settings.ranker == "pool" else None
    reads_history = pool is not None and pool.reads(HISTORY_FEATURES)
    fs = first_stage(index, issue, settings, learned=settings.reranks, history=reads_history)
    if not settings.reranks:
        return fs
    if pool is not None:
        ranker = pool
        depth = min(settings.ranker_depth or ranker.depth, len(fs.order))
        order, logits = rank_pool(index, fs, ranker, depth)
        scorer = settings_scorer(settings)
        digest = custom_digest(ranker)
        if scorer is None:
            return fs.reordered(Reordering(order, logits, "pool", depth, ranker=digest))
        order, logits, read = rescore(index, fs.issue or issue, order, logits, scorer)
        return fs.reordered(
            Reordering(order, logits, "pool", depth, scorer.file.digest, read, ranker=digest)
        )
    order, logits = rerank_with_logits(index, fs, settings.k)
    return fs.reordered(Reordering(order, logits, "head", min(settings.k, len(fs.order))))


def read_history(fs: FirstStage, settings: EngineSettings, ranker: PoolRanker | None) -> bool:
    """Whether this ranking read history at inference (fused it, or the pool ranker that
    ordered it splits on it): only then may a hit quote an earlier commit."""
    return "history" in fs.ranks or (
        fs.ranked_by == "pool" and ranker_reads_history(settings, ranker)
    )


def confidence(fs: FirstStage, ranker: PoolRanker | None) -> float | None:
    """Calibrated chance that the first listed function needs the edit (None: not
    estimated); ``ranker`` is the pool ranker that ordered ``fs``, when one did."""
    if fs.head_logits is None or not len(fs.head_logits):
        return None
    if fs.ranked_by == "pool":
        cal: Calibration | HeadCalibration | None = ranker.calibration if ranker else None
    else:
        cal = default_calibration()
    return None if cal is None else cal.probability(float(fs.head_logits[0]))


def evidence_reason(evidence: str) -> Reason:
    """A reason from a signal description such as ``"frame: a.py:12"`` or ``"file: a.py"``."""
    kind, _, detail = evidence.partition(": ")
    if kind == "frame":
        return Reason(kind="traceback", detail=detail)
    return Reason(kind="mention", detail=f"{kind}: {detail}")


def relation(graph: CodeGraph, adm: Admission) -> str:
    """How an admitted function relates to its centre, in words (``called by``, ...)."""
    g = graph.g
    node, centre = adm.id, adm.centre
    if adm.edge == "invokes":
        if adm.hops == 1 and g.has_edge(centre, node, "invokes"):
            return "called by"
        if adm.hops == 1 and g.has_edge(node, centre, "invokes"):
            return "calls"
        return "reached through calls from"
    if adm.hops == 1:
        return "defined inside" if g.has_edge(centre, node, "contains") else "contains"
    parents = {u for u, _, k in g.in_edges(node, keys=True) if k == "contains"}
    shared = parents & {u for u, _, k in g.in_edges(centre, keys=True) if k == "contains"}
    if any(g.nodes[p].get("kind") == "class" for p in shared):
        return "in the same class as"
    if g.nodes[node].get("path") == g.nodes[centre].get("path"):
        return "in the same file as"
    return "near"


# How a listed function relates to a higher-listed one, by edge type and direction: the
# words read from the lower one ("called by `X`": X, listed above, calls it). Nesting comes
# first: a function defined inside another is nearly always called by it too, and "defined
# inside" says that and where it lives.
_RELATIONS: tuple[tuple[str, bool, str], ...] = (
    # (edge type, the partner is the edge's source, words)
    ("contains", True, "defined inside"),
    ("contains", False, "defines"),
    ("invokes", True, "called by"),
    ("invokes", False, "calls"),
)


def related_reasons(graph: CodeGraph, ids: Sequence[str]) -> dict[str, Reason]:
    """For each listed function that the graph joins to a higher-listed one (a call either
    way, or one defined inside the other), one ``related`` reason naming the highest-listed
    such partner and its place in the list; functions with none are left out.

    Computed from the list alone, whatever found its items: no selector is needed."""
    g = graph.g
    out: dict[str, Reason] = {}
    for pos, node in enumerate(ids):
        for rank, partner in enumerate(ids[:pos], start=1):
            found = next(
                (
                    (edge, words)
                    for edge, partner_is_source, words in _RELATIONS
                    if (
                        g.has_edge(partner, node, edge)
                        if partner_is_source
                        else g.has_edge(node, partner, edge)
                    )
                ),
                None,
            )
            if found is not None:
                edge, words = found
                out[node] = Reason(
                    kind="related", centre=partner, rank=rank, edge=edge, relation=words
                )
                break
    return out


# Graph edges a picture of the list draws between two listed functions, by edge type.
_LINK_EDGES: tuple[tuple[str, str], ...] = (("invokes", "calls"), ("contains", "contains"))


def list_links(graph: CodeGraph, ids: Sequence[str], placed: dict[str, Admission]) -> list[Link]:
    """The edges between listed functions (``ids``, in list order): calls and contains
    from the graph, and "found via" from each admitted item's centre when it is listed."""
    g = graph.g
    listed = set(ids)
    links: list[Link] = []
    for u in ids:
        for edge, kind in _LINK_EDGES:
            links.extend(
                Link(u, v, kind)  # type: ignore[arg-type]
                for _, v, key in g.out_edges(u, keys=True)
                if key == edge and v in listed and v != u
            )
    links.extend(
        Link(adm.centre, node, "found via")
        for node, adm in placed.items()
        if node in listed and adm.centre in listed
    )
    return links


def add_relations(graph: CodeGraph, hits: list[Hit]) -> None:
    """Give every hit the graph joins to a higher-listed hit its ``related`` reason, just
    before its rank; an item that expansion admitted already names its route, and keeps it
    as its one relation."""
    related = related_reasons(graph, [h.id for h in hits])
    for hit in hits:
        reason = related.get(hit.id)
        if reason is None or any(r.kind == "expand" for r in hit.reasons):
            continue
        at = next((i for i, r in enumerate(hit.reasons) if r.technical), len(hit.reasons))
        hit.reasons.insert(at, reason)


def folded_reasons(survivor: str, others: Sequence[str]) -> list[Reason]:
    """The ``folded`` reasons of a listed function that stands for ``others`` (functions
    nested in it, or the one it is nested in), so the list says what it folded."""
    return [
        Reason(
            kind="folded",
            centre=o,
            relation="defines" if o.startswith(survivor + ".") else "defined inside",
        )
        for o in others
    ]


def first_stage_reason(fs: FirstStage, idx: int, shown: int, score: float) -> Reason:
    """The ranker's reason for function ``idx``, with the rank a reader sees (``shown``).

    When the head model moved the function, the fused rank it came from is in the detail.
    """
    parts: list[str] = []
    fused = int(fs.rank[idx])
    if fused != shown:
        parts.append(f"re-ranked from {fused}")
    if fs.kind == "hybrid":
        parts.append(f"dense {int(fs.ranks['dense'][idx])}, BM25 {int(fs.ranks['bm25'][idx])}")
    detail = "; ".join(parts) or None
    return Reason(kind=fs.kind, rank=shown, score=round(score, 6), detail=detail)  # type: ignore[arg-type]


def start_llm(
    settings: EngineSettings, issue: Issue, backend: Backend | None, progress: Progress | None
) -> Judge | None:
    """The issue's LLM pass when a role of the configured LLM is on (None otherwise);
    ``backend`` replaces the one the settings name (the benchmark's cache, tests)."""
    if not settings.active_llm_roles:
        return None
    backend = backend or make_backend(settings)
    return Judge.start(backend, settings, issue.text, progress)  # every prompt cuts it


def read_head(
    index: Index, judge: Judge, ranked: list[str], depth: int
) -> tuple[list[str], dict[str, int], int]:
    """The reader role over the top ``depth`` of ``ranked``: the new list, the ids it
    raised (with the rank each had), and how many it read (0: it did not finish, and the
    list is ``ranked`` unchanged)."""
    g = index.graph.g
    head = ranked[:depth]
    functions = [
        Function(fid, g.nodes[fid].get("path", ""),
                 display_name(g.nodes[fid].get("path", ""), g.nodes[fid].get("name", "")),
                 g.nodes[fid].get("text", ""))
        for fid in head
    ]
    try:
        reading = read_list(judge, functions)
    except LLMError as exc:
        judge.fail(exc)
        return ranked, {}, 0
    return reading.order + ranked[depth:], reading.raised(head), len(head)


def llm_record(judge: Judge, read: int, raised: int) -> LLMRun:
    """The record of the issue's LLM pass for the Localization."""
    return LLMRun(
        backend=judge.backend.kind,
        model=judge.backend.model,
        roles=judge.settings.active_llm_roles,
        format="pointwise" if judge.pointwise else "listwise",
        read=read,
        raised=raised,
        judged=len(judge.verdicts),
        usage=judge.budget.usage.to_dict(),
        failure=judge.failure,
        verdicts=dict(judge.verdicts),
    )


MAX_KEPT_NAMED = 3  # an issue naming more functions as code is showing usage, not the bug
IN_SIGHT = 5  # the comment lists this many in full: below them a function is out of sight


def kept_named(
    fs: FirstStage,
    names: NameTable,
    ids: Sequence[str],
    evidence: dict[str, str],
    final: Sequence[str],
    text: str,
    settings: EngineSettings,
) -> set[str]:
    """The functions the issue names as code that the list brings back into sight
    (``keep_named``): a mention that names exactly one function of the repository
    (``c.ClientIP()``, not a ``parse`` that six plugins define), which the first stage put
    in its top K and the ranker pushed below the first :data:`IN_SIGHT`; at most
    :data:`MAX_KEPT_NAMED` of them, the first stage's best."""
    if not settings.keep_named:
        return set()
    in_sight = set(final[:IN_SIGHT])
    at = {ids[i]: i for i in fs.evidence}
    found = [
        c
        for c in named_as_code(evidence, text)
        if c not in in_sight
        and int(fs.rank[at[c]]) <= settings.k
        and names.names_one(evidence[c].partition(": ")[2])
    ]
    return set(sorted(found, key=lambda c: int(fs.rank[at[c]]))[:MAX_KEPT_NAMED])


@dataclass(frozen=True)
class Ranked:
    """What the rank step hands on: the (re-)ranked first stage, its top ``pool`` as ids
    (after the LLM reader, when it ran) with their positions, scores and shown ranks."""

    fs: FirstStage
    head: np.ndarray  # function indices of the top max(pool, K), best first
    ranked: list[str]  # their ids, in the order expansion reads them
    pos: dict[str, int]  # id -> function index
    score_of: dict[str, float]  # id -> first-stage score
    shown: dict[str, int]  # id -> 1-based rank as ranked
    raised: dict[str, int] = field(default_factory=dict)  # id -> rank the reader gave it
    read: int = 0  # how many items the reader read


def rank(
    index: Index,
    issue: Issue,
    settings: EngineSettings,
    ranker: PoolRanker | None,
    judge: Judge | None,
) -> Ranked:
    """Rank: the first stage, re-ordered by the learned model, its head re-read by the LLM
    when that role is on."""
    fs = ranked_first_stage(index, issue, settings, ranker=ranker)
    ids = index.function_ids
    head = fs.order[: max(settings.pool, settings.k)]
    ranked = [ids[i] for i in head]
    raised: dict[str, int] = {}
    read = 0
    if judge is not None and "read" in settings.active_llm_roles:
        ranked, raised, read = read_head(index, judge, ranked, settings.llm_read_depth)
    return Ranked(
        fs=fs,
        head=head,
        ranked=ranked,
        pos={ids[i]: int(i) for i in head},
        score_of={ids[i]: float(fs.scores[i]) for i in head},
        shown={ids[i]: r for r, i in enumerate(head, start=1)},
        raised=raised,
        read=read,
    )


def expand(
    index: Index, r: Ranked, settings: EngineSettings, selector: Selector
) -> tuple[Expansion, list[str], dict[str, list[str]]]:
    """Expand: SpIDER's stages 1-3 over the ranked list, placement by probability, then the
    one tidy pass. Returns the expansion, the final K ids and what each listed id folded."""
    fs, ids = r.fs, index.function_ids
    issue = fs.issue
    exp = run_expansion(
        index.graph, issue, r.ranked, r.score_of, settings, selector,
        pool_features(fs, ids, len(r.head)),
    )  # fmt: skip
    final = exp.final
    if exp.placed and settings.placement == "probability" and isinstance(selector, OfflineSelector):
        final = selector.place(final, exp.placed, exp.requests, r.shown)
    evidence = {ids[i]: ev for i, ev in fs.evidence.items()}
    folded: dict[str, list[str]] = {}
    named = kept_named(fs, index.name_table(), ids, evidence, final, issue.text, settings)
    final = tidy_list(
        final,
        r.ranked,
        index.graph,
        issue.text,
        evidence,
        k=settings.k,
        demote_paths=settings.demote_paths,
        fold=settings.fold_nested,
        named=named,
        first_rank={ids[i]: int(fs.rank[i]) for i in r.head} if named else None,
        folded=folded,
    )
    return exp, final, folded


def hit_reasons(
    index: Index,
    r: Ranked,
    node_id: str,
    adm: Admission | None,
    *,
    recall_history: bool,
    reader: str | None,
    folded: Sequence[str],
) -> list[Reason]:
    """Why ``node_id`` is listed, most telling first: its admission by expansion, the
    issue's evidence, shared words, close wording, an earlier commit that said the same
    (``recall_history``), the LLM reader (``reader``: its model) raising it, what it folded,
    and the ranker's own reason last."""
    fs, idx = r.fs, r.pos[node_id]
    text = fs.issue.text
    reasons: list[Reason] = []
    if adm is not None:
        reasons.append(
            Reason(kind="expand", centre=adm.centre, edge=adm.edge, hops=adm.hops,
                   relation=relation(index.graph, adm))
        )  # fmt: skip
    ev = fs.evidence.get(idx)
    if ev is not None:
        reasons.append(evidence_reason(ev))
    if "bm25" in fs.ranks:
        name = index.graph.g.nodes[node_id].get("name", "")
        terms = index.lexical().matched_terms(text, index.documents()[idx], MAX_TERMS, name=name)
        if terms:
            reasons.append(Reason(kind="terms", detail=", ".join(terms)))
    if "dense" in fs.ranks and int(fs.ranks["dense"][idx]) <= CLOSE_WORDING_RANK:
        reasons.append(Reason(kind="wording", rank=int(fs.ranks["dense"][idx])))
    if recall_history and (said := index.history().recalled(idx, text)):
        reasons.append(Reason(kind="history", detail=said))
    if node_id in r.raised and reader is not None:
        reasons.append(Reason(kind="read", rank=r.raised[node_id], detail=reader))
    reasons.extend(folded_reasons(node_id, folded))
    reasons.append(first_stage_reason(fs, idx, r.shown[node_id], r.score_of[node_id]))
    return reasons


def explain(
    index: Index,
    r: Ranked,
    exp: Expansion,
    final: Sequence[str],
    folded: Mapping[str, Sequence[str]],
    *,
    recall_history: bool,
    reader: str | None,
) -> list[Hit]:
    """Explain: each listed function as a hit with its reasons (:func:`hit_reasons`), then
    the relations between listed functions."""
    g = index.graph.g
    hits: list[Hit] = []
    for node_id in final:
        a = g.nodes[node_id]
        reasons = hit_reasons(
            index, r, node_id, exp.placed.get(node_id), recall_history=recall_history,
            reader=reader, folded=folded.get(node_id, ()),
        )  # fmt: skip
        hits.append(
            Hit(
                id=node_id,
                path=a.get("path", ""),
                name=display_name(a.get("path", ""), a.get("name", "")),
                start_line=int(a.get("start_line", 0)),
                end_line=int(a.get("end_line", 0)),
                score=r.score_of[node_id],
                reasons=reasons,
            )
        )
    add_relations(index.graph, hits)
    return hits


def run_settings(
    index: Index, settings: EngineSettings, selector: Selector, fs: FirstStage
) -> RunSettings:
    """The record of what ranked this list (``Localization.settings``)."""
    return RunSettings.of(
        settings,
        selector=selector.name,
        query_texts=fs.query_texts,
        query_adapter=fs.query_adapter,
        rerank=fs.ranked_by,
        ranked_depth=fs.ranked_depth,
        partial=fs.partial,
        encoder_delta=_delta_digest(index) if fs.query_texts else "",
        cross_encoder=fs.reordering.cross if fs.reordering else "",
        cross_depth=fs.reordering.cross_depth if fs.reordering else 0,
        ranker_file=fs.reordering.ranker if fs.reordering else "",
    )


def locate(
    index: Index,
    issue: Issue,
    settings: EngineSettings | None = None,
    *,
    selector: Selector | None = None,
    ranker: PoolRanker | None = None,
    llm: Backend | None = None,
    progress: Progress | None = None,
) -> Localization:
    """The K functions most likely to need an edit for ``issue``, each with its reasons:
    :func:`rank`, then :func:`expand`, then :func:`explain`.

    ``ranker`` replaces the pool ranker the settings name (tests, the training's
    evaluation); ``llm`` the LLM backend they name. When an LLM role is on, the model
    re-reads the list and/or judges graph neighbours; a pass that fails or runs out of
    budget leaves the ranker's list standing, and the record says so."""
    settings = settings or index.settings
    if not issue.text.strip():
        raise EmptyIssue("the issue has no title or body text to search with")
    judge = start_llm(settings, issue, llm, progress)
    selector = selector or make_selector(settings, judge)
    settings = settings.resolved(selector.name)  # auto selector/edges/roles made concrete
    if settings.ranker == "pool":
        ranker = ranker or settings_ranker(settings)  # resolved once for every step below
    t0 = time.perf_counter()
    r = rank(index, issue, settings, ranker, judge)
    t1 = time.perf_counter()
    failed_before = selector.failures
    exp, final, folded = expand(index, r, settings, selector)
    t2 = time.perf_counter()
    hits = explain(
        index, r, exp, final, folded, recall_history=read_history(r.fs, settings, ranker),
        reader=judge.backend.model if judge is not None else None,
    )  # fmt: skip
    return Localization(
        commit=index.commit,
        hits=hits,
        settings=run_settings(index, settings, selector, r.fs),
        timings={"first_stage": t1 - t0, "expansion": t2 - t1, "total": t2 - t0},
        expansion=exp.centres,
        selector_calls=len(exp.requests),
        selector_failures=selector.failures - failed_before,
        confidence=confidence(r.fs, ranker),
        llm=llm_record(judge, r.read, len(r.raised)) if judge is not None else None,
        links=list_links(index.graph, final, exp.placed),
    )


def _delta_digest(index: Index) -> str:
    """The digest of the tuned encoder delta ``index`` embeds with ("" = none)."""
    delta = index.encoder().delta
    return delta.digest if delta is not None else ""


__all__ = [
    "Ranked",
    "add_relations",
    "evidence_reason",
    "expand",
    "explain",
    "first_stage_reason",
    "hit_reasons",
    "list_links",
    "llm_record",
    "locate",
    "rank",
    "ranked_first_stage",
    "read_head",
    "related_reasons",
    "run_settings",
    "start_llm",
]
