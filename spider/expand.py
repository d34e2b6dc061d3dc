"""SpIDER stages 1-3: neighbours of the centres, selector calls, fixed-budget exchange.

Stage 1 gathers, for each centre (the top C first-stage hits), the function nodes within
``depth`` hops along ``contains`` edges and ``invokes_depth`` hops along ``invokes`` edges
that also lie in the first-stage pool ``S_N``; invokes neighbours are capped to the best
ranked ``invokes_neighbour_cap`` (as in the paper). Stage 2 asks the selector. Stage 3
inserts admitted items right below their centre and evicts the lowest-ranked unprotected
items, so exactly K results remain.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from spider.graph.model import CodeGraph
from spider.models import Issue
from spider.retrieve.tokenize import split_identifier
from spider.select.base import Candidate, SelectionRequest, Selector
from spider.settings import EngineSettings


@dataclass(frozen=True)
class Neighbour:
    """A function reached from a centre: by which edge type and in how many hops."""

    id: str
    edge: str
    hops: int


def _bfs(graph: CodeGraph, start: str, edge_type: str, depth: int) -> dict[str, int]:
    """Hop distance of every node within ``depth`` steps along ``edge_type`` (either direction)."""
    dist = {start: 0}
    queue = deque([start])
    g = graph.g
    while queue:
        node = queue.popleft()
        d = dist[node]
        if d >= depth:
            continue
        nexts = [v for _, v, k in g.out_edges(node, keys=True) if k == edge_type]
        nexts += [u for u, _, k in g.in_edges(node, keys=True) if k == edge_type]
        for nxt in nexts:
            if nxt not in dist:
                dist[nxt] = d + 1
                queue.append(nxt)
    return dist


def neighbours(
    graph: CodeGraph, centre: str, pool_rank: Mapping[str, int], settings: EngineSettings
) -> list[Neighbour]:
    """Stage 1: function neighbours of ``centre`` inside the pool, best first-stage rank first."""
    found: dict[str, Neighbour] = {}
    if "invokes" in settings.edges:
        dist = _bfs(graph, centre, "invokes", settings.invokes_depth)
        inv = [n for n in dist if n != centre and n in pool_rank]
        inv.sort(key=lambda n: pool_rank[n])
        for n in inv[: settings.invokes_neighbour_cap]:
            found[n] = Neighbour(n, "invokes", dist[n])
    if "contains" in settings.edges:
        dist = _bfs(graph, centre, "contains", settings.depth)
        for n, d in dist.items():
            if n == centre or n not in pool_rank:
                continue
            prev = found.get(n)
            if prev is None or d < prev.hops:
                found[n] = Neighbour(n, "contains", d)
    return sorted(found.values(), key=lambda nb: pool_rank[nb.id])


_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _parent_class(graph: CodeGraph, node_id: str) -> str | None:
    for u, _, k in graph.g.in_edges(node_id, keys=True):
        if k == "contains" and graph.g.nodes[u].get("kind") == "class":
            return u
    return None


def candidate_features(
    graph: CodeGraph,
    centre: str,
    centre_rank: int,
    nb: Neighbour,
    rank: int,
    issue_words: set[str],
    issue_parts: set[str],
) -> dict[str, float]:
    """Features of one neighbour, computable without any model call."""
    a = graph.g.nodes[nb.id]
    c = graph.g.nodes[centre]
    short = a.get("name", "").split(".")[-1].split("#")[0]
    parts = {p for p in split_identifier(short) if len(p) > 2}
    overlap = len(parts & issue_parts) / len(parts) if parts else 0.0
    same_class = _parent_class(graph, nb.id)
    return {
        "log_rank": math.log(max(rank, 1)),
        "log_centre_rank": math.log(max(centre_rank, 1)),
        "hops": float(nb.hops),
        "edge_invokes": 1.0 if nb.edge == "invokes" else 0.0,
        "same_file": 1.0 if a.get("path") == c.get("path") else 0.0,
        "same_class": 1.0
        if same_class is not None and same_class == _parent_class(graph, centre)
        else 0.0,
        "mentioned": 1.0 if short in issue_words and len(short) > 2 else 0.0,
        "same_name": 1.0 if short == c.get("name", "").split(".")[-1].split("#")[0] else 0.0,
        "name_overlap": overlap,
    }


def issue_vocabulary(issue: Issue) -> tuple[set[str], set[str]]:
    """Identifiers in the issue text, and their lower-cased parts."""
    words = set(_NAME_RE.findall(issue.text))
    parts = {p for w in words for p in split_identifier(w) if len(p) > 2}
    return words, parts


def build_requests(
    graph: CodeGraph,
    issue: Issue,
    ranked: Sequence[str],
    scores: Mapping[str, float],
    settings: EngineSettings,
    item_features: Mapping[str, Mapping[str, float]] | None = None,
) -> list[SelectionRequest]:
    """Stage 1 for every centre: one selection request each.

    ``item_features`` holds first-stage features per pool item (per-ranker ranks, issue
    signal); they are copied onto each candidate, with the centre's signal added.
    """
    item_features = item_features or {}
    pool = list(ranked[: settings.pool])
    pool_rank = {n: i + 1 for i, n in enumerate(pool)}
    top_k = set(pool[: settings.k])
    words, parts = issue_vocabulary(issue)
    requests: list[SelectionRequest] = []
    for ci, centre in enumerate(pool[: min(settings.centres, settings.k)]):
        cands: list[Candidate] = []
        for nb in neighbours(graph, centre, pool_rank, settings):
            rank = pool_rank[nb.id]
            feats = candidate_features(graph, centre, ci + 1, nb, rank, words, parts)
            feats["in_top_k"] = 1.0 if nb.id in top_k else 0.0
            feats.update(item_features.get(nb.id, {}))
            feats["centre_signal"] = item_features.get(centre, {}).get("signal", 0.0)
            cands.append(
                Candidate(
                    id=nb.id,
                    text=graph.g.nodes[nb.id].get("text", ""),
                    edge=nb.edge,
                    hops=nb.hops,
                    rank=rank,
                    score=float(scores.get(nb.id, 0.0)),
                    features=feats,
                )
            )
        requests.append(
            SelectionRequest(
                issue=issue,
                centre=centre,
                centre_text=graph.g.nodes[centre].get("text", ""),
                centre_rank=ci + 1,
                candidates=tuple(cands),
                budget_rank=settings.k,
            )
        )
    return requests


@dataclass(frozen=True)
class Admission:
    """An item placed by the exchange: which centre admitted it, along which edge."""

    id: str
    centre: str
    edge: str
    hops: int


def exchange(
    top_k: Sequence[str],
    requests: Sequence[SelectionRequest],
    admitted: Sequence[Sequence[str]],
    k: int,
) -> tuple[list[str], dict[str, Admission]]:
    """Stage 3: the fixed-budget exchange.

    Admitted items not yet in the list are inserted right below their centre (after items
    that centre already inserted, in the selector's candidate order); then the lowest-ranked
    unprotected items are evicted so that ``k`` remain. Centres, admitted items already in
    the list, and inserted items are protected. When nothing is left to evict, further
    admissions are dropped.
    """
    result = list(top_k[:k])
    protected = {r.centre for r in requests}
    placed: dict[str, Admission] = {}
    for ids in admitted:  # accepted items already in S_K are protected up front
        protected.update(i for i in ids if i in result)
    for req, ids in zip(requests, admitted, strict=True):
        by_id = {c.id: c for c in req.candidates}
        ordered = sorted(ids, key=lambda i: by_id[i].rank)
        if req.centre not in result:
            continue
        pos = result.index(req.centre) + 1
        for i in ordered:
            if i in result:
                continue
            evictable = [x for x in result if x not in protected and x not in placed]
            if len(result) >= k and not evictable:
                break
            c = by_id[i]
            result.insert(pos, i)
            placed[i] = Admission(i, req.centre, c.edge, c.hops)
            if len(result) > k:
                result.remove(evictable[-1])
            pos = result.index(i) + 1
    return result, placed


def order_by_probability(
    final: Sequence[str],
    placed: Mapping[str, Admission],
    rank_of: Mapping[str, int],
    p_ranked: Callable[[int], float],
    p_admitted: Mapping[str, float],
) -> list[str]:
    """Re-place admitted items by estimated probability instead of right below their centre.

    First-stage items keep their order (their probability falls with rank); an admitted
    item moves down to just above the first first-stage item it is less likely than, and
    never above its centre. Membership is unchanged: the same K items, reordered.
    """
    key: dict[str, float] = {}
    for n in final:
        if n not in placed:
            key[n] = p_ranked(rank_of[n])
    for n in final:
        if n in placed:
            key[n] = min(p_admitted.get(n, 0.0), key.get(placed[n].centre, 1.0))
    position = {n: i for i, n in enumerate(final)}
    return sorted(final, key=lambda n: (-key[n], n in placed, position[n]))


def run_expansion(
    graph: CodeGraph,
    issue: Issue,
    ranked: Sequence[str],
    scores: Mapping[str, float],
    settings: EngineSettings,
    selector: Selector,
    item_features: Mapping[str, Mapping[str, float]] | None = None,
) -> tuple[list[str], dict[str, Admission], list[SelectionRequest]]:
    """Stages 1-3 over a first-stage ranking; returns the final K ids and the admissions."""
    top_k = list(ranked[: settings.k])
    if not settings.edges or settings.centres == 0 or selector.name == "none":
        return top_k, {}, []
    requests = build_requests(graph, issue, ranked, scores, settings, item_features)
    admitted = selector.judge(requests)
    final, placed = exchange(top_k, requests, admitted, settings.k)
    return final, placed, requests
