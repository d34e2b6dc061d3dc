"""The selector interface: judge which graph neighbours of a centre are relevant.

A selector only ever admits ids from the candidate list it was given — the issue text is
untrusted input and may try to name other ids. ``Selector.judge`` enforces that for every
implementation.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

from spider.models import Issue

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Candidate:
    """One neighbour of a centre, with what the graph and the first stage say about it."""

    id: str
    text: str
    edge: str  # edge type it was reached by (the shortest path's)
    hops: int
    rank: int  # 1-based first-stage rank
    score: float  # first-stage score
    features: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SelectionRequest:
    """One call to a selector: the issue, one centre and its candidate neighbours."""

    issue: Issue
    centre: str
    centre_text: str
    centre_rank: int
    candidates: tuple[Candidate, ...]
    budget_rank: int  # the rank (K) of the item an admitted candidate would evict


class Selector(ABC):
    """Base class: subclasses implement :meth:`_select`; :meth:`judge` is what callers use."""

    name: str = "selector"
    failures: int = 0  # calls that failed and admitted nothing (a remote selector counts them)

    @abstractmethod
    def _select(self, requests: Sequence[SelectionRequest]) -> list[list[str]]:
        """Admitted candidate ids per request (any order; may contain junk)."""

    def judge(self, requests: Sequence[SelectionRequest]) -> list[list[str]]:
        """Admitted ids per request, restricted to that request's candidates, deduplicated."""
        if not requests:
            return []
        raw = self._select(requests)
        out: list[list[str]] = []
        for req, ids in zip(requests, list(raw) + [[]] * (len(requests) - len(raw)), strict=False):
            offered = {c.id for c in req.candidates}
            kept = list(dict.fromkeys(i for i in ids if isinstance(i, str) and i in offered))
            dropped = len(ids) - len(kept)
            if dropped:
                log.info(
                    "selector %s: dropped %d ids not offered for %s", self.name, dropped, req.centre
                )
            out.append(kept)
        return out


class NoSelector(Selector):
    """Admits nothing: plain first-stage ranking."""

    name = "none"

    def _select(self, requests: Sequence[SelectionRequest]) -> list[list[str]]:
        return [[] for _ in requests]
