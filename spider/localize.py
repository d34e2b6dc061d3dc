"""One query end to end: :func:`rank` (the first stage, the learned model, the LLM reader)
→ :func:`expand` (SpIDER expansion, placement, the tidy pass) → explain (each hit's reasons,
``spider.explain.reasons``)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from spider.errors import EmptyIssue, LLMError
from spider.expand.neighbours import Expansion, run_expansion
from spider.expand.select import OfflineSelector, Selector, make_selector
from spider.expand.tidy import named_as_code, tidy_list
from spider.explain.reasons import explain, list_links
from spider.index import Index
from spider.llm.backends import Backend, make_backend
from spider.llm.judge import Judge
from spider.llm.prompts import Function
from spider.llm.reader import read_list
from spider.models import Issue, LLMRun, Localization, RunSettings, display_name
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
from spider.rank.ranked import Ranked
from spider.rank.rerank import HeadCalibration, default_calibration, rerank_with_logits
from spider.retrieve.first_stage import FirstStage, Reordering, first_stage
from spider.retrieve.signals import NameTable
from spider.settings import EngineSettings


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
    "expand",
    "llm_record",
    "locate",
    "rank",
    "ranked_first_stage",
    "read_head",
    "run_settings",
    "start_llm",
]
