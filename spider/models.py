"""Typed results of the engine: hits, the reasons they were chosen, a localization."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

ReasonKind = Literal["dense", "bm25", "hybrid", "mention", "traceback", "expand", "first_stage"]


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

    def describe(self) -> str:
        """The reason in words, as shown in the comment and the CLI table."""
        if self.kind == "expand" and self.centre is not None:
            centre = self.centre.split(":", 1)[-1]
            hops = f", {self.hops} hops" if self.hops and self.hops > 1 else ""
            return f"found via {self.edge} from `{centre}`{hops}"
        if self.kind == "mention":
            kind, _, what = (self.detail or "").partition(": ")
            if kind == "file":
                return f"in `{what}`, a file named in the issue"
            return f"`{what}` is named in the issue" if what else "named in the issue"
        if self.kind == "traceback":
            return f"in the traceback (`{self.detail}`)" if self.detail else "in the traceback"
        label = {"dense": "dense", "bm25": "BM25", "hybrid": "hybrid", "first_stage": "first-stage"}
        text = f"{label.get(self.kind, self.kind)} rank {self.rank}"
        return text if self.detail is None else f"{text} ({self.detail})"

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


@dataclass
class Localization:
    """The result of one query: ranked hits plus what produced them."""

    commit: str | None
    hits: list[Hit]
    settings: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON form used by ``spider locate --json``."""
        return {
            "commit": self.commit,
            "hits": [h.to_dict() for h in self.hits],
            "settings": self.settings,
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
        }
