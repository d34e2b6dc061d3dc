"""Typed results of the engine: hits, the reasons they were chosen, a localization."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from spider.settings import EngineSettings

ReasonKind = Literal[
    "dense",
    "bm25",
    "hybrid",
    "mention",
    "traceback",
    "terms",
    "wording",
    "history",
    "expand",
    "related",
    "read",
    "folded",
]
_RANK_LABELS = {"dense": "dense", "bm25": "BM25", "hybrid": "hybrid"}
RANKER_KINDS = frozenset(_RANK_LABELS)  # reasons that are a ranker's rank, not evidence


ANONYMOUS_EXPORTS = frozenset({"default", "exports"})  # how a module's unnamed export is named
SCRIPT_SUFFIXES = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts")
INDEX_STEMS = frozenset({"index"})  # a file standing for its folder: named by the folder


def anonymous_export_name(path: str) -> str:
    """The name a reader gives a module's anonymous export: its file's name without
    extensions, or the folder's for an ``index`` file (``src/utc/index.js`` -> ``utc``)."""
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    stem = parts[-1].split(".")[0] if parts else ""
    if stem in INDEX_STEMS and len(parts) > 1:
        stem = parts[-2]
    return stem or "default"


def display_name(path: str, name: str) -> str:
    """A definition's name as a reader recognises it. The graph names a JS/TS module's
    anonymous export ``default`` (``export default function () {}``) or ``exports``
    (``module.exports = () => {}``): the node ids keep that, the id convention of the
    benchmark's ground truth and the names the ranker was trained on; a reader is shown
    the file's name instead (``lib/adapters/xhr.js`` -> ``xhr``, its nested
    ``default.onload`` -> ``xhr.onload``)."""
    head, dot, rest = name.partition(".")
    if head not in ANONYMOUS_EXPORTS or not path.endswith(SCRIPT_SUFFIXES):
        return name
    return anonymous_export_name(path) + dot + rest


def reader_id(node_id: str) -> str:
    """A node id as a reader is shown it: ``path:name`` with an anonymous export named by
    its file (``lib/helpers/resolveConfig.js:default`` -> ``...:resolveConfig``)."""
    path, sep, name = node_id.partition(":")
    return f"{path}{sep}{display_name(path, name)}" if sep else node_id


def reader_name(node_id: str) -> str:
    """The qualified name a reader is shown for a node id (the part after the path)."""
    return reader_id(node_id).split(":", 1)[-1]


def ordinal(n: int) -> str:
    """``1`` -> ``1st``, ``2`` -> ``2nd``, ``11`` -> ``11th``, ``23`` -> ``23rd``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _frame(detail: str) -> str:
    """A stack frame as its language prints it: ``File "a.py", line 12`` for Python."""
    path, sep, line = detail.rpartition(":")
    if sep and line.isdigit() and path.endswith(".py"):
        return f'File "{path}", line {line}'
    return detail


# How a function folded into a listed one relates to it (``Reason.relation`` of a
# ``folded`` reason): the clause after "also stands for `X`".
_FOLD_CLAUSES = {
    "defines": "defined inside it",
    "defined inside": "in which it is defined",
}

# How an admitted item relates to its centre (``Reason.relation``, from ``spider.explain.reasons.relation``),
# as the clause that ends its route: "found via invokes from `X` (listed 1st), which calls it".
_ROUTE_CLAUSES = {
    "called by": "which calls it",
    "calls": "which it calls",
    "defined inside": "in which it is defined",
    "contains": "which is defined inside it",
    "in the same class as": "in the same class",
    "in the same file as": "in the same file",
}


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

    def clipped(self, max_chars: int) -> Issue:
        """The issue cut so that :attr:`text` holds at most ``max_chars`` characters (the
        title first); the same issue when it is short enough."""
        if len(self.text) <= max_chars:
            return self
        title = self.title.strip()[:max_chars]
        room = max_chars - len(title) - 2
        body = self.body.strip()[: max(room, 0)]
        return Issue(title=title, body=body)


@dataclass(frozen=True)
class Reason:
    """Why a hit is in the list.

    ``kind`` names the evidence; rankers fill ``rank``/``score``; expansion (``expand``)
    fills ``centre`` (node id of the seed), ``edge``, ``hops`` and ``relation`` (how the hit
    relates to the centre: ``called by``, ``calls``, ``defined inside``, ``contains``, ``in
    the same class as``, ...); ``related`` names a higher-listed function the graph joins it
    to, whatever found it: ``centre`` is that function, ``rank`` its place in the list,
    ``edge`` the edge type and ``relation`` one of ``called by``, ``calls``, ``defined
    inside``, ``defines``; ``folded`` names a function listed as one item with this one
    (``centre``; ``relation``: ``defines`` when it is nested in this one, ``defined
    inside`` when this one is nested in it); ``terms`` lists the issue's words the
    function shares in ``detail``.

    :meth:`describe` says it the technical way (ranks, edges: the collapsed details and
    the CLI table); :meth:`words` says it in plain words for the list itself, or ``None``
    for a ranker's rank, which is no evidence a reader can act on.
    """

    kind: ReasonKind
    rank: int | None = None
    score: float | None = None
    centre: str | None = None
    edge: str | None = None
    hops: int | None = None
    detail: str | None = None
    relation: str | None = None

    @property
    def technical(self) -> bool:
        """Whether this is a ranker's rank (shown only in the details)."""
        return self.kind in RANKER_KINDS

    def words(
        self,
        code: Callable[[str], str] = _backticks,
        plain: Callable[[str], str] = _as_is,
        listed: Callable[[str], int | None] | None = None,
    ) -> str | None:
        """The evidence in plain words; ``listed`` gives a function's position in the list
        (without it, a related function's recorded ``rank`` is used)."""
        if self.kind == "expand" and self.centre is not None:
            centre = reader_name(self.centre)
            where = listed(self.centre) if listed else None
            route = f"found via {plain(self.edge or 'an edge')} from {code(centre)}"
            route += f" (listed {ordinal(where)})" if where else ""
            clause = _ROUTE_CLAUSES.get(self.relation or "")
            if clause is None and self.relation == "reached through calls from" and self.hops:
                clause = f"{self.hops} calls away"
            return f"{route}, {plain(clause)}" if clause else route
        if self.kind == "related" and self.centre is not None and self.relation:
            where = listed(self.centre) if listed else self.rank
            tail = f", listed {ordinal(where)}" if where else ""
            return f"{plain(self.relation)} {code(reader_name(self.centre))}{tail}"
        if self.kind == "folded" and self.centre is not None:
            clause = _FOLD_CLAUSES.get(self.relation or "", "related to it")
            return f"also stands for {code(reader_name(self.centre))}, {plain(clause)}"
        if self.kind == "traceback":
            return (
                f"in the traceback ({code(_frame(self.detail))})"
                if self.detail
                else "in the traceback"
            )
        if self.kind == "terms" and self.detail:
            terms = ", ".join(code(t) for t in self.detail.split(", "))
            return f"matches the issue's terms ({terms})"
        if self.kind == "wording":
            return "close to the issue's wording"
        if self.kind == "history" and self.detail:
            return f"an earlier commit that edited it: “{plain(self.detail)}”"
        if self.kind == "mention":
            return self.describe(code, plain)
        if self.kind == "read" and self.detail:
            return f"{plain(self.detail)} judged it likely to need the edit (raised from {ordinal(self.rank or 0)})"
        return None

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
            centre = reader_name(self.centre)
            hops = f", {self.hops} hops" if self.hops and self.hops > 1 else ""
            return f"found via {plain(self.edge or 'an edge')} from {code(centre)}{hops}"
        if self.kind == "mention":
            kind, sep, what = (self.detail or "").partition(": ")
            if not sep:  # a bare detail: the name itself
                kind, what = "", self.detail or ""
            if kind == "file" and what:
                return f"in {code(what)}, a file named in the issue"
            if kind == "member" and what:  # "class X": a scope the issue names
                return f"inside {code(what.removeprefix('class '))}, which the issue names"
            if kind == "component" and what:
                return f"named after {code(what)}, which the issue names"
            return f"{code(what)} is named in the issue" if what else "named in the issue"
        if self.kind in ("traceback", "terms", "wording", "history", "related", "read", "folded"):
            return self.words(code, plain) or ""
        text = plain(f"{_RANK_LABELS.get(self.kind, self.kind)} rank {self.rank}")
        return text if self.detail is None else f"{text} ({plain(self.detail)})"

    def to_dict(self) -> dict[str, Any]:
        """JSON form, with the words added under ``text``."""
        d = {k: v for k, v in asdict(self).items() if v is not None}
        d["text"] = self.describe()
        words = self.words()
        if words is not None:
            d["words"] = words
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


LinkKind = Literal["calls", "contains", "found via"]


@dataclass(frozen=True)
class Link:
    """An edge between two listed functions, for the picture of how they connect:
    ``source`` calls or contains ``target``, or expansion found ``target`` via ``source``."""

    source: str
    target: str
    kind: LinkKind


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


@dataclass(frozen=True)
class LLMRun:
    """What the LLM pass of one query did: which model, in which roles and format, what
    it moved, what it spent, and why it stopped early (``failure``; None: it finished).

    ``roles`` are the roles that were asked to run; ``read``/``raised``: functions the
    reader re-read and how many of them it moved up; ``judged``: functions given a
    pointwise verdict; ``usage``: :meth:`spider.llm.budget.Usage.to_dict`."""

    backend: str  # "llm" (an OpenAI-compatible server) or "anthropic"
    model: str
    roles: tuple[str, ...]
    format: str  # "pointwise" or "listwise"
    read: int = 0
    raised: int = 0
    judged: int = 0
    usage: dict[str, float] = field(default_factory=dict)
    failure: str | None = None
    verdicts: dict[str, float] = field(default_factory=dict)  # pointwise log-odds by id

    def read_step(self) -> str:
        """The reader's step of the method line: what it read with which model, or why
        the ranker's order stands."""
        how = (
            "each judged yes or no on its own" if self.format == "pointwise"
            else "ordered in one answer"
        )
        if self.read == 0:
            why = self.failure or "nothing to read"
            return f"a re-read by {self.model} was asked for but did not finish ({why}): the ranker's order stands"
        return (
            f"the top {self.read} re-read with the issue by {self.model} ({how}) and re-sorted "
            f"with the ranker's order: it raised {self.raised}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the benchmark keeps the verdicts to study the mixing offline)."""
        return {
            "backend": self.backend,
            "model": self.model,
            "roles": list(self.roles),
            "format": self.format,
            "read": self.read,
            "raised": self.raised,
            "judged": self.judged,
            "usage": dict(self.usage),
            "failure": self.failure,
            "verdicts": {k: round(v, 4) for k, v in self.verdicts.items()},
        }


BUNDLED_MODEL = "all-MiniLM-L6-v2 (bundled)"  # what the settings say when model is empty


@dataclass(frozen=True)
class PartialIndex:
    """A ranking made from a partial index (the cold path): dense scored only
    ``embedded_functions`` of the index's ``functions``."""

    embedded_functions: int
    functions: int

    def to_dict(self) -> dict[str, Any]:
        """The keys a Localization's settings have always carried for it."""
        return {
            "partial_index": True,
            "embedded_functions": int(self.embedded_functions),
            "functions": int(self.functions),
        }


@dataclass(frozen=True)
class RunSettings:
    """What produced a Localization: the settings that ran and what the first stage did.

    :meth:`to_dict` is its JSON form (``spider locate --format json``, the benchmark's
    predictions, the comment's settings line)."""

    k: int
    first_stage: str  # dense / bm25 / hybrid
    signals: bool  # the issue's own evidence was fused (hybrid only)
    query_texts: int  # texts the issue was embedded as (windows); 0 = no dense retrieval
    query_adapter: str  # the query adapter those texts went through; "" = none
    rerank: Literal["pool", "head"] | None  # the learned model that re-sorted the head
    ranked_depth: int  # how many items that model re-scored (0 = none)
    selector: str
    edges: tuple[str, ...]
    centres: int
    depth: int
    pool: int
    model: str
    encoder: str
    partial: PartialIndex | None = None  # set when made from a partial index (cold path)
    encoder_delta: str = ""  # digest of the tuned encoder delta dense ranked with; "" = none
    cross_encoder: str = ""  # digest of the cross-encoder that re-scored the top; "" = none
    cross_depth: int = 0  # how many of the ranker's top items it read
    ranker_file: str = ""  # digest of the pool ranker's file when not the shipped one

    @classmethod
    def of(
        cls,
        settings: EngineSettings,
        *,
        selector: str,
        query_texts: int = 0,
        query_adapter: str = "",
        rerank: Literal["pool", "head"] | None = None,
        ranked_depth: int = 0,
        partial: PartialIndex | None = None,
        encoder_delta: str = "",
        cross_encoder: str = "",
        cross_depth: int = 0,
        ranker_file: str = "",
    ) -> RunSettings:
        """The record of a run with these engine settings and what the first stage did."""
        return cls(
            k=settings.k,
            first_stage=settings.first_stage,
            signals=settings.signals and settings.first_stage == "hybrid",
            query_texts=query_texts,
            query_adapter=query_adapter,
            rerank=rerank,
            ranked_depth=ranked_depth,
            selector=selector,
            edges=settings.expansion_edges(selector),
            centres=settings.centres,
            depth=settings.depth,
            pool=settings.pool,
            model=settings.model or BUNDLED_MODEL,
            encoder=settings.encoder,
            partial=partial,
            encoder_delta=encoder_delta,
            cross_encoder=cross_encoder,
            cross_depth=cross_depth,
            ranker_file=ranker_file,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the keys and values Localization.settings has always held."""
        return {
            "k": self.k,
            "first_stage": self.first_stage,
            "signals": self.signals,
            "query_texts": self.query_texts,
            "query_adapter": self.query_adapter,
            "rerank": self.rerank or False,
            "ranked_depth": self.ranked_depth,
            "selector": self.selector,
            "edges": list(self.edges),
            "centres": self.centres,
            "depth": self.depth,
            "pool": self.pool,
            "model": self.model,
            "encoder": self.encoder,
            **({"encoder_delta": self.encoder_delta} if self.encoder_delta else {}),
            **({"ranker_file": self.ranker_file} if self.ranker_file else {}),
            **(
                {"cross_encoder": self.cross_encoder, "cross_depth": self.cross_depth}
                if self.cross_encoder
                else {}
            ),
            **(self.partial.to_dict() if self.partial is not None else {}),
        }


@dataclass
class Localization:
    """The result of one query: ranked hits plus what produced them."""

    commit: str | None
    hits: list[Hit]
    settings: RunSettings
    timings: dict[str, float] = field(default_factory=dict)
    expansion: list[CentreExpansion] = field(default_factory=list)
    selector_calls: int = 0  # requests the selector judged (0: expansion did not run)
    selector_failures: int = 0  # of those, calls that failed (they admitted nothing)
    confidence: float | None = None  # calibrated P(first hit is edited); None: not estimated
    llm: LLMRun | None = None  # the LLM pass, when one was asked to run
    links: list[Link] = field(default_factory=list)  # edges between listed functions

    def method(self) -> str:
        """What ran for this list, in words, from the settings and counts the engine recorded.

        Long because it is one sentence assembled clause by clause, each clause one setting."""
        s = self.settings
        windows = s.query_texts
        dense = "dense retrieval" + (f" over {windows} windows of the issue" if windows > 1 else "")
        if s.encoder_delta:
            dense += f" with the tuned encoder (MiniLM-L6 + delta {s.encoder_delta})"
        if s.query_adapter:
            dense += " (its query side tuned on other projects' fixed issues)"
        first = {
            "dense": dense,
            "bm25": "BM25",
            "hybrid": f"{dense} and BM25, fused",
        }.get(s.first_stage, s.first_stage)
        if s.signals:
            first += ", plus the issue's own evidence such as tracebacks and names"
        steps = [first]
        if s.rerank == "pool":
            trained = (
                f"from the file the install chose, digest {s.ranker_file}"
                if s.ranker_file
                else "trained on other projects' fixed issues"
            )
            steps.append(f"the top {s.ranked_depth} re-scored by the learned ranker ({trained})")
            if s.cross_encoder:
                steps.append(
                    f"its top {s.cross_depth} each read together with the issue by the "
                    f"cross-encoder (MiniLM-L6 + delta {s.cross_encoder}) and re-sorted"
                )
        elif s.rerank:
            steps.append(f"the top {s.k} re-ranked by the head model")
        if self.llm is not None and "read" in self.llm.roles:
            steps.append(self.llm.read_step())
        if self.selector_calls:
            summary = self.expansion_summary()
            edges = ", ".join(s.edges) or "no"
            admitted = summary["admitted"] or "none"
            who = (
                f"the {s.selector} selector ({self.llm.model})"
                if self.llm is not None and s.selector in ("llm", "anthropic")
                else f"the {s.selector} selector"
            )
            step = (
                f"graph expansion over {edges} edges: {who} was "
                f"offered {summary['offered']} neighbours, {summary['outside']} of them outside "
                f"the list, and admitted {admitted}"
            )
            if self.selector_failures:
                step += (
                    f" ({self.selector_failures} of its {self.selector_calls} calls failed: "
                    "those centres admitted nothing)"
                )
            steps.append(step)
        else:
            why = (
                "selector none"
                if s.selector == "none"
                else f"no edge types enabled for the {s.selector} selector"
                if not s.edges
                else "no centres"
            )
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
            "settings": self.settings.to_dict(),
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "expansion": self.expansion_summary(),
            "selector_calls": self.selector_calls,
            "selector_failures": self.selector_failures,
            "method": self.method(),
            "confidence": None if self.confidence is None else round(self.confidence, 4),
            **({"llm": self.llm.to_dict()} if self.llm is not None else {}),
            "links": [asdict(link) for link in self.links],
        }
