"""Typed results of the engine: hits, the reasons they were chosen, a localization."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

ReasonKind = Literal["dense", "bm25", "hybrid", "mention", "traceback", "expand"]
_RANK_LABELS = {"dense": "dense", "bm25": "BM25", "hybrid": "hybrid"}


def _backticks(text: str) -> str:
    return f"`{text}`"


def _as_is(text: str) -> str:
    return text


@dataclass(frozen=True)
class Issue:
    """An issue as the engine sees it: untrusted title and body text."""

    title: str
    body: str = ""

    @property
    def text(self) -> str:
        """Title and body joined, as embedded and matched."""
        return f"{self.title}\n\n{self.body}".strip()


@dataclass(frozen=True)
class Reason:
    """Why a hit is in the list.

    ``kind`` names the evidence; rankers fill ``rank``/``score``; expansion fills
    ``centre`` (node id of the seed), ``edge`` and ``hops``.
    """

    kind: ReasonKind
    rank: int | None = None
    score: float | None = None
    centre: str | None = None
    edge: str | None = None
    hops: int | None = None
    detail: str | None = None

    def describe(
        self,
        code: Callable[[str], str] = _backticks,
        plain: Callable[[str], str] = _as_is,
    ) -> str:
        """The reason in words, as shown in the comment and the CLI table.

        ``code`` wraps repository text (names, paths) and ``plain`` escapes the rest; the
        defaults give plain text with backticks, the comment passes Markdown-safe ones.
        """
        if self.kind == "expand" and self.centre is not None:
            centre = self.centre.split(":", 1)[-1]
            hops = f", {self.hops} hops" if self.hops and self.hops > 1 else ""
            return f"found via {plain(self.edge or 'an edge')} from {code(centre)}{hops}"
        if self.kind == "mention":
            kind, sep, what = (self.detail or "").partition(": ")
            if not sep:  # a bare detail: the name itself
                kind, what = "", self.detail or ""
            if kind == "file" and what:
                return f"in {code(what)}, a file named in the issue"
            return f"{code(what)} is named in the issue" if what else "named in the issue"
        if self.kind == "traceback":
            return f"in the traceback ({code(self.detail)})" if self.detail else "in the traceback"
        text = plain(f"{_RANK_LABELS.get(self.kind, self.kind)} rank {self.rank}")
        return text if self.detail is None else f"{text} ({plain(self.detail)})"

    def to_dict(self) -> dict[str, Any]:
        """JSON form, with the words added under ``text``."""
        d = {k: v for k, v in asdict(self).items() if v is not None}
        d["text"] = self.describe()
        return d


@dataclass
class Hit:
    """One function the engine proposes, with its location and reasons."""

    id: str
    path: str
    name: str
    start_line: int
    end_line: int
    score: float
    reasons: list[Reason] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON form used by ``spider locate --json``."""
        return {
            "id": self.id,
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "score": round(float(self.score), 6),
            "reasons": [r.to_dict() for r in self.reasons],
        }


@dataclass(frozen=True)
class CentreExpansion:
    """What graph expansion did around one centre.

    ``offered``: neighbours shown to the selector; ``outside``: of those, the ones not
    already in the top K; ``accepted``: the selector said yes; ``admitted``: inserted into
    the list by the exchange.
    """

    centre: str
    offered: int
    outside: int
    accepted: int
    admitted: int


@dataclass
class Localization:
    """The result of one query: ranked hits plus what produced them."""

    commit: str | None
    hits: list[Hit]
    settings: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    expansion: list[CentreExpansion] = field(default_factory=list)
    selector_calls: int = 0  # requests the selector judged (0: expansion did not run)

    def method(self) -> str:
        """What ran for this list, in words, from the settings and counts the engine recorded."""
        s = self.settings
        first = {
            "dense": "dense retrieval",
            "bm25": "BM25",
            "hybrid": "dense retrieval and BM25, fused",
        }.get(str(s.get("first_stage")), str(s.get("first_stage", "first stage")))
        if s.get("signals"):
            first += ", plus the issue's own evidence such as tracebacks and names"
        steps = [first]
        if s.get("rerank"):
            steps.append("the top {} re-ranked by the head model".format(s.get("k", "K")))
        if self.selector_calls:
            summary = self.expansion_summary()
            edges = ", ".join(s.get("edges", [])) or "no"
            admitted = summary["admitted"] or "none"
            steps.append(
                f"graph expansion over {edges} edges: the {s.get('selector')} selector was "
                f"offered {summary['offered']} neighbours, {summary['outside']} of them outside "
                f"the list, and admitted {admitted}"
            )
        else:
            why = "selector none" if s.get("selector") == "none" else "no edges or centres"
            steps.append(f"no graph expansion: {why}")
        return "; ".join(steps)

    def expansion_summary(self) -> dict[str, Any]:
        """Totals and per-centre counts of what expansion offered, accepted and admitted."""
        return {
            "offered": sum(c.offered for c in self.expansion),
            "outside": sum(c.outside for c in self.expansion),
            "accepted": sum(c.accepted for c in self.expansion),
            "admitted": sum(c.admitted for c in self.expansion),
            "centres": [asdict(c) for c in self.expansion],
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON form used by ``spider locate --json``."""
        return {
            "commit": self.commit,
            "hits": [h.to_dict() for h in self.hits],
            "settings": self.settings,
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "expansion": self.expansion_summary(),
            "selector_calls": self.selector_calls,
            "method": self.method(),
        }
