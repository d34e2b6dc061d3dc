"""Node ids in the convention of the SWE-bench function-level ground truth.

The graph names a nested function with its full qualified name
(``requests/models.py:Response.iter_content.generate``); the dataset drops enclosing
*function* names but keeps class names (``requests/models.py:Response.generate``).
A second definition with the same name (property setter, overload) is ``...#2`` in the
graph and shares the first one's id in the dataset.
"""

from __future__ import annotations

import re

from spider.graph.model import CodeGraph

DUPLICATE_SUFFIX = re.compile(r"#\d+$")
ELLIPSIS = "…"  # stands for the path segments or name parts a shortened id leaves out
QUALIFIER_SEP = "."  # the graph joins qualified names with dots in every language


def short_name(qualified: str) -> str:
    """The last component of a qualified name, without an overload suffix (``#2``)."""
    return qualified.split("#")[0].split(".")[-1]


def normalise_id(node_id: str) -> str:
    """Strip a ``#n`` duplicate suffix (string-level normalisation, no graph needed)."""
    return DUPLICATE_SUFFIX.sub("", node_id.strip())


def split_id(node_id: str) -> tuple[str, str]:
    """``(path, qualified name)`` of a function/class id (name "" for files)."""
    path, _, name = normalise_id(node_id).partition(":")
    return path, name


def _id_pieces(node_id: str) -> list[str]:
    """``node_id`` in the pieces a shortened id keeps or drops whole, each with the
    separator after it: the path's folders, its file, the qualified name's parts."""
    path, sep, name = node_id.partition(":")
    folders = [f"{seg}/" for seg in path.split("/")[:-1]]
    file = path.split("/")[-1] + sep
    parts = name.split(QUALIFIER_SEP) if name else []
    return [*folders, file, *(f"{p}{QUALIFIER_SEP}" for p in parts[:-1]), *parts[-1:]]


def shorten_id(node_id: str, width: int) -> str:
    """``node_id`` in at most ``width`` characters, shortened only at a path or dot
    boundary with :data:`ELLIPSIS` in the middle, never cut inside a name. Of the ways to
    leave out one run of whole folders, file or name parts it keeps, in this order, the
    most of the qualified name, the file, the most characters, the start
    (``gson/…/bind/ReflectiveTypeAdapterFactory.java:ReflectiveTypeAdapterFactory.getBoundFields``).
    The last name part is always kept whole, even when it alone is wider than ``width``."""
    if len(node_id) <= width:
        return node_id
    pieces = _id_pieces(node_id)
    file_at = next(i for i, p in enumerate(pieces) if not p.endswith("/"))
    best: tuple[int, bool, int, bool] | None = None
    chosen = ELLIPSIS + pieces[-1]
    for j in range(1, len(pieces)):  # the tail kept: pieces[j:]
        sep = pieces[j - 1][-1:]  # the separator after the left-out run leads the tail
        tail = (sep if sep in ("/", ":", QUALIFIER_SEP) else "") + "".join(pieces[j:])
        for i in range(j):  # the head kept: pieces[:i]
            text = "".join(pieces[:i]) + ELLIPSIS + tail
            rank = (len(pieces) - max(j, file_at + 1), j <= file_at, len(text), i > 0)
            if len(text) <= width and (best is None or rank > best):
                best, chosen = rank, text
    return chosen


def dataset_id(graph: CodeGraph, node_id: str) -> str:
    """The dataset's id for a graph node: enclosing function names dropped, ``#n`` stripped."""
    attrs = graph.g.nodes[node_id] if node_id in graph.g else {}
    path, name = split_id(node_id)
    path = attrs.get("path") or path
    name = DUPLICATE_SUFFIX.sub("", attrs.get("name") or name)
    parts = name.split(QUALIFIER_SEP)
    kept: list[str] = []
    for i, part in enumerate(parts[:-1]):
        prefix = f"{path}:{QUALIFIER_SEP.join(parts[: i + 1])}"
        kind = graph.g.nodes[prefix].get("kind") if prefix in graph.g else None
        if kind != "function":  # classes (and anything unknown) keep their name
            kept.append(part)
    kept.append(parts[-1])
    return f"{path}:{QUALIFIER_SEP.join(kept)}"


def dataset_id_map(graph: CodeGraph) -> dict[str, str]:
    """``graph id -> dataset id`` for every function node."""
    return {n: dataset_id(graph, n) for n in graph.functions()}


def graph_ids_for(truth: set[str], id_map: dict[str, str]) -> set[str]:
    """Graph ids whose dataset id is in ``truth`` (every duplicate of a setter/overload)."""
    return {gid for gid, did in id_map.items() if did in truth}
