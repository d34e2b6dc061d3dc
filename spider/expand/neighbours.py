"""SpIDER stages 1-2: neighbours of the centres, and one selector call per centre.

Stage 1 gathers, for each centre (the top C first-stage hits), the function nodes within
``depth`` hops along ``contains`` edges and ``invokes_depth`` hops along ``invokes`` edges
that also lie in the first-stage pool ``S_N``; invokes neighbours are capped to the best
ranked ``invokes_neighbour_cap`` (as in the paper). Stage 2 asks the selector. Stage 3,
the fixed-budget exchange, lives in ``spider.expand.select.exchange``.

:func:`run_expansion` also accounts for what happened per centre (neighbours offered to
the selector, how many it accepted, how many entered the list), so that the comment and
the benchmark say what expansion did rather than what it could do.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from spider.expand.select.base import Candidate, SelectionRequest, Selector
from spider.expand.select.exchange import Admission, exchange
from spider.graph.model import CodeGraph
from spider.models import CentreExpansion, Issue
from spider.rank.features import issue_vocabulary, neighbour_features
from spider.settings import EngineSettings


@dataclass(frozen=True)
class Neighbour:
    """A function reached from a centre: by which edge type and in how many hops."""

    id: str
    edge: str
    hops: int


@dataclass(frozen=True)
class Expansion:
    """The outcome of stages 1-3: the final K ids, the admissions and the accounting."""

    final: list[str]
    placed: dict[str, Admission]
    requests: list[SelectionRequest]
    centres: list[CentreExpansion]


def hop_distances(graph: CodeGraph, start: str, edge_type: str, depth: int) -> dict[str, int]:
    """Hop distance of every node within ``depth`` steps along ``edge_type`` (either direction)."""
    dist = {start: 0}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        d = dist[node]
        if d >= depth:
            continue
        for nxt in graph.neighbours(node, edge_type):
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
        dist = hop_distances(graph, centre, "invokes", settings.invokes_depth)
        inv = [n for n in dist if n != centre and n in pool_rank]
        inv.sort(key=lambda n: pool_rank[n])
        for n in inv[: settings.invokes_neighbour_cap]:
            found[n] = Neighbour(n, "invokes", dist[n])
    if "contains" in settings.edges:
        dist = hop_distances(graph, centre, "contains", settings.depth)
        for n, d in dist.items():
            if n == centre or n not in pool_rank:
                continue
            prev = found.get(n)
            if prev is None or d < prev.hops:
                found[n] = Neighbour(n, "contains", d)
    return sorted(found.values(), key=lambda nb: pool_rank[nb.id])


def build_requests(
    graph: CodeGraph,
    issue: Issue,
    ranked: Sequence[str],
    scores: Mapping[str, float],
    settings: EngineSettings,
    item_features: Mapping[str, Mapping[str, float]] | None = None,
) -> list[SelectionRequest]:
    """Stage 1 for every centre: one selection request each.

    ``item_features`` holds first-stage features per pool item (``features.pool_features``);
    they are copied onto each candidate, with the centre's signal added.
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
            feats = neighbour_features(
                graph, centre, ci + 1, nb.id, nb.edge, nb.hops, rank, words, parts
            )
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


def account(
    requests: Sequence[SelectionRequest],
    accepted: Sequence[Sequence[str]],
    placed: Mapping[str, Admission],
    top_k: Sequence[str],
) -> list[CentreExpansion]:
    """Per centre: neighbours offered to the selector, accepted by it, placed in the list.

    ``offered`` and ``accepted`` count every candidate, ``outside`` those not already in
    the top K (the only ones that can change the list); ``admitted`` counts the items the
    exchange inserted (it drops acceptances once nothing is left to evict).
    """
    head = set(top_k)
    return [
        CentreExpansion(
            centre=req.centre,
            offered=len(req.candidates),
            outside=sum(1 for c in req.candidates if c.id not in head),
            accepted=len(ids),
            admitted=sum(1 for a in placed.values() if a.centre == req.centre),
        )
        for req, ids in zip(requests, accepted, strict=True)
    ]


def run_expansion(
    graph: CodeGraph,
    issue: Issue,
    ranked: Sequence[str],
    scores: Mapping[str, float],
    settings: EngineSettings,
    selector: Selector,
    item_features: Mapping[str, Mapping[str, float]] | None = None,
) -> Expansion:
    """Stages 1-3 over a first-stage ranking: the final K ids, admissions and accounting."""
    top_k = list(ranked[: settings.k])
    if not settings.expands or selector.name == "none":
        return Expansion(top_k, {}, [], [])
    requests = build_requests(graph, issue, ranked, scores, settings, item_features)
    accepted = selector.judge(requests)
    final, placed = exchange(top_k, requests, accepted, settings.k)
    return Expansion(final, placed, requests, account(requests, accepted, placed, top_k))
