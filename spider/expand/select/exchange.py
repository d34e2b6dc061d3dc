"""SpIDER stage 3: the fixed-budget exchange, and placement of admitted items by probability.

An admitted candidate enters the list right below its centre and the lowest-ranked
unprotected item leaves, so the list keeps exactly K items; ``order_by_probability`` then
lets the offline selector move an admitted item down to where its estimated probability
of being edited belongs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from spider.expand.select.base import SelectionRequest


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
