"""Why each listed function is listed (the explain step of one query): each hit's reasons
(``hit_reasons``: its admission by expansion, the issue's evidence, shared words, close
wording, history, the LLM reader, what it folded, the ranker's own reason), the relations
between listed functions (``related_reasons``, ``add_relations``) and the edges a picture
of the list draws (``list_links``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from spider.expand.neighbours import Expansion
from spider.expand.select.exchange import Admission
from spider.graph.model import CodeGraph
from spider.index import Index
from spider.models import Hit, Link, Reason, display_name
from spider.rank.ranked import Ranked
from spider.retrieve.first_stage import FirstStage

CLOSE_WORDING_RANK = 10  # a dense rank this good means the text reads like the issue


MAX_TERMS = 3  # shared words shown per hit: the rarest ones say the most


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
        terms = index.lexical().matched_terms(text, index.document(idx), MAX_TERMS, name=name)
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


__all__ = [
    "CLOSE_WORDING_RANK",
    "MAX_TERMS",
    "add_relations",
    "evidence_reason",
    "explain",
    "first_stage_reason",
    "folded_reasons",
    "hit_reasons",
    "list_links",
    "related_reasons",
    "relation",
]
