"""A picture of how the listed functions connect: a Mermaid flowchart GitHub renders.

Nodes are listed functions (``3. Response.text``), edges the calls, nesting and "found
via" routes between them (``Localization.links``); the first :data:`TOP` functions are
highlighted. Every label is built from repository text, so each character outside a small
safe set is written as a Mermaid entity code (``#34;``): no quote, bracket, pipe, backtick,
angle bracket or newline of a function's name can end a label, start HTML or break the
code fence. Only functions that have an edge are drawn, the first :data:`TOP` always.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from spider.comment.markdown import Markdown, printable
from spider.models import Hit, Link

TOP = 5  # highlighted: the functions the comment lists in full
MAX_NODES = 20  # a picture of more functions than K = 20 reads as noise
MAX_EDGES = 40  # twice the nodes: beyond that the layout tangles
MAX_LABEL_CHARS = 60  # long qualified names are cut; the list above has them whole
TOP_STYLE = "fill:#fff5b1,stroke:#9a6700,stroke-width:2px"  # GitHub's attention colours
_SAFE = re.compile(r"[A-Za-z0-9_. ]")  # written as is; everything else as an entity code
_EDGE_WORDS = {"calls": "calls", "contains": "contains", "found via": "found via"}


def label_text(value: str, limit: int = MAX_LABEL_CHARS) -> str:
    """``value`` as safe text inside a quoted Mermaid label: letters, digits, ``_``,
    ``.`` and spaces as they are, any other character as ``#<code point>;``."""
    text = " ".join(printable(value).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return "".join(c if _SAFE.fullmatch(c) else f"#{ord(c)};" for c in text)


def mermaid_graph(hits: Sequence[Hit], links: Sequence[Link], top: int = TOP) -> Markdown | None:
    """The flowchart (a fenced ``mermaid`` block) of ``hits`` and the ``links`` between
    them, or None when no two listed functions connect."""
    rank = {h.id: i for i, h in enumerate(hits[:MAX_NODES], start=1)}
    edges = [
        link
        for link in dict.fromkeys(links)
        if link.source in rank and link.target in rank and link.source != link.target
    ][:MAX_EDGES]
    if not edges:
        return None
    drawn = {link.source for link in edges} | {link.target for link in edges}
    drawn |= {h.id for h in hits[: min(top, MAX_NODES)]}
    lines = ["```mermaid", "flowchart TD"]
    for h in hits[:MAX_NODES]:
        if h.id in drawn:
            name = h.name or h.id.split(":", 1)[-1]
            lines.append(f'  n{rank[h.id]}["{label_text(f"{rank[h.id]}. {name}")}"]')
    lines.extend(
        f"  n{rank[link.source]} -->|{_EDGE_WORDS[link.kind]}| n{rank[link.target]}"
        for link in edges
    )
    highlighted = [f"n{rank[h.id]}" for h in hits[: min(top, MAX_NODES)]]
    lines.append(f"  classDef top {TOP_STYLE}")
    lines.append(f"  class {','.join(highlighted)} top")
    lines.append("```")
    return Markdown("\n".join(lines))


__all__ = ["MAX_EDGES", "MAX_NODES", "TOP", "label_text", "mermaid_graph"]
