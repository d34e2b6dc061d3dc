"""A directed multigraph with typed edges: the store under :class:`~spider.graph.model.CodeGraph`.

It offers the part of networkx's ``MultiDiGraph`` the engine uses (``nodes``, ``add_node``,
``add_edge``, ``has_edge``, ``out_edges``, ``in_edges``, ``edges``, ``n in g``), in
networkx's iteration order, and reads and writes networkx's node-link JSON, so graphs
cached by either load in the other. Not networkx itself because a warm query loads a
saved graph on every run: importing networkx cost 70-150 ms and unpickling sympy's graph
(22k nodes, 67k edges) as a ``MultiDiGraph`` 0.3-0.5 s, where this graph pickles its
edges as six integer arrays (:meth:`__getstate__`) and unpickles in the time its node
attributes take.

Adjacency is kept in one of two forms: while a graph is built, dicts (successor ->
keys, as networkx does); once read from a pickle, compressed rows (``indptr`` / index /
key arrays per direction), turned back into dicts only if the graph is changed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, overload

import numpy as np

_Adjacency = dict[str, dict[str, list[str]]]  # node -> neighbour -> edge keys, in order


class _Rows:
    """One direction's adjacency in compressed rows: node ``i``'s neighbours are
    ``index[indptr[i]:indptr[i + 1]]`` (positions in the node order) with ``keys``."""

    __slots__ = ("index", "indptr", "keys")

    def __init__(self, indptr: np.ndarray, index: np.ndarray, keys: np.ndarray) -> None:
        self.indptr, self.index, self.keys = indptr, index, keys

    @classmethod
    def of(cls, adjacency: _Adjacency, ids: list[str], position: dict[str, int],
           key_code: dict[str, int]) -> _Rows:
        """The rows of ``adjacency`` over nodes ``ids`` (in that order)."""
        counts = np.zeros(len(ids) + 1, dtype=np.int64)
        index: list[int] = []
        keys: list[int] = []
        for i, node in enumerate(ids):
            for other, node_keys in adjacency.get(node, {}).items():
                for key in node_keys:
                    index.append(position[other])
                    keys.append(key_code[key])
            counts[i + 1] = len(index)
        return cls(counts, np.asarray(index, dtype=np.int32), np.asarray(keys, dtype=np.int8))

    def adjacency(self, ids: list[str], key_names: list[str]) -> _Adjacency:
        """Back to dicts (neighbour order and key order kept)."""
        out: _Adjacency = {}
        for i, node in enumerate(ids):
            lo, hi = int(self.indptr[i]), int(self.indptr[i + 1])
            if lo == hi:
                continue
            row: dict[str, list[str]] = {}
            for j, k in zip(self.index[lo:hi].tolist(), self.keys[lo:hi].tolist(), strict=True):
                row.setdefault(ids[j], []).append(key_names[k])
            out[node] = row
        return out


class NodeView:
    """``g.nodes``: ``g.nodes[n]`` is node ``n``'s attribute dict; ``g.nodes()`` its ids and
    ``g.nodes(data=True)`` (id, attributes) pairs, in insertion order."""

    __slots__ = ("_attrs",)

    def __init__(self, attrs: dict[str, dict[str, Any]]) -> None:
        self._attrs = attrs

    def __getitem__(self, node: str) -> dict[str, Any]:
        return self._attrs[node]

    def __contains__(self, node: object) -> bool:
        return node in self._attrs

    def __iter__(self) -> Iterator[str]:
        return iter(self._attrs)

    def __len__(self) -> int:
        return len(self._attrs)

    @overload
    def __call__(self) -> Iterator[str]: ...
    @overload
    def __call__(self, data: bool) -> Iterator[Any]: ...
    def __call__(self, data: bool = False) -> Iterator[Any]:
        return iter(self._attrs.items()) if data else iter(self._attrs)


class Digraph:
    """A directed multigraph whose edges are told apart by a string key (their type)."""

    def __init__(self) -> None:
        self._attrs: dict[str, dict[str, Any]] = {}
        self._succ: _Adjacency | None = {}
        self._pred: _Adjacency | None = {}
        self._rows: tuple[_Rows, _Rows, list[str]] | None = None  # out, in, key names
        self._position: dict[str, int] | None = None
        self._ids: list[str] | None = None
        self.nodes = NodeView(self._attrs)

    # -- building -----------------------------------------------------------------------
    def add_node(self, node: str, **attrs: Any) -> None:
        """Add ``node``, or update its attributes."""
        self._thaw()
        if node in self._attrs:
            self._attrs[node].update(attrs)
        else:
            self._attrs[node] = dict(attrs)

    def add_edge(self, src: str, dst: str, key: str) -> None:
        """Add the ``key`` edge from ``src`` to ``dst`` (nodes added bare where new); a
        second edge with the same ends and key is not added."""
        self._thaw()
        assert self._succ is not None and self._pred is not None
        for node in (src, dst):
            if node not in self._attrs:
                self._attrs[node] = {}
        keys = self._succ.setdefault(src, {}).setdefault(dst, [])
        if key in keys:
            return
        keys.append(key)
        self._pred.setdefault(dst, {}).setdefault(src, []).append(key)

    def _thaw(self) -> None:
        """Adjacency as dicts again (a graph read from a pickle, about to change)."""
        if self._rows is None:
            return
        out, into, names = self._rows
        ids = list(self._attrs)
        self._succ, self._pred = out.adjacency(ids, names), into.adjacency(ids, names)
        self._rows = self._position = self._ids = None

    # -- reading ------------------------------------------------------------------------
    def __contains__(self, node: object) -> bool:
        return node in self._attrs

    def __len__(self) -> int:
        return len(self._attrs)

    def has_edge(self, src: str, dst: str, key: str | None = None) -> bool:
        """Whether an edge from ``src`` to ``dst`` exists (of type ``key``, when given)."""
        return any(k == key or key is None for _, v, k in self.out_edges(src) if v == dst)

    def out_edges(self, node: str, keys: bool = True) -> Iterator[tuple[str, str, str]]:
        """``(node, successor, key)`` for every edge leaving ``node`` (``keys`` is always
        on: the argument is networkx's)."""
        return ((node, other, key) for other, key in self._neighbours(node, outgoing=True))

    def in_edges(self, node: str, keys: bool = True) -> Iterator[tuple[str, str, str]]:
        """``(predecessor, node, key)`` for every edge entering ``node``."""
        return ((other, node, key) for other, key in self._neighbours(node, outgoing=False))

    def edges(self, keys: bool = True) -> Iterator[tuple[str, str, str]]:
        """``(source, target, key)`` for every edge, by source in node order."""
        for node in self._attrs:
            yield from self.out_edges(node)

    def number_of_nodes(self) -> int:
        """How many nodes."""
        return len(self._attrs)

    def number_of_edges(self) -> int:
        """How many edges."""
        if self._rows is not None:
            return len(self._rows[0].index)
        assert self._succ is not None
        return sum(len(keys) for row in self._succ.values() for keys in row.values())

    def _neighbours(self, node: str, *, outgoing: bool) -> Iterator[tuple[str, str]]:
        if self._rows is None:
            adjacency = self._succ if outgoing else self._pred
            assert adjacency is not None
            for other, keys in adjacency.get(node, {}).items():
                for key in keys:
                    yield other, key
            return
        assert self._position is not None and self._ids is not None
        i = self._position.get(node)
        if i is None:
            return
        out, into, names = self._rows
        rows, ids = (out if outgoing else into), self._ids
        lo, hi = int(rows.indptr[i]), int(rows.indptr[i + 1])
        for j, k in zip(rows.index[lo:hi].tolist(), rows.keys[lo:hi].tolist(), strict=True):
            yield ids[j], names[k]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Digraph):
            return NotImplemented
        return (list(self._attrs.items()) == list(other._attrs.items())
                and all(list(self.out_edges(n)) == list(other.out_edges(n))
                        and list(self.in_edges(n)) == list(other.in_edges(n))
                        for n in self._attrs))

    __hash__ = None  # type: ignore[assignment]  # mutable

    # -- persistence --------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        ids = list(self._attrs)
        if self._rows is not None:
            out, into, names = self._rows
        else:
            assert self._succ is not None and self._pred is not None
            names = sorted({k for row in self._succ.values() for ks in row.values() for k in ks})
            code = {k: i for i, k in enumerate(names)}
            position = {n: i for i, n in enumerate(ids)}
            out = _Rows.of(self._succ, ids, position, code)
            into = _Rows.of(self._pred, ids, position, code)
        return {"attrs": self._attrs, "keys": names,
                "out": (out.indptr, out.index, out.keys), "in": (into.indptr, into.index, into.keys)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._attrs = state["attrs"]
        self.nodes = NodeView(self._attrs)
        self._succ = self._pred = None
        self._ids = list(self._attrs)
        self._position = {n: i for i, n in enumerate(self._ids)}
        self._rows = (_Rows(*state["out"]), _Rows(*state["in"]), list(state["keys"]))

    def to_node_link(self) -> dict[str, Any]:
        """networkx's node-link form (``nx.node_link_data(g, edges="edges")``)."""
        return {
            "directed": True, "multigraph": True, "graph": {},
            "nodes": [{**attrs, "id": node} for node, attrs in self._attrs.items()],
            "edges": [{"type": k, "source": u, "target": v, "key": k} for u, v, k in self.edges()],
        }

    @classmethod
    def from_node_link(cls, data: dict[str, Any]) -> Digraph:
        """The graph of a node-link dict (:meth:`to_node_link`, or networkx's); a malformed
        one raises KeyError or TypeError."""
        g = cls()
        for item in data["nodes"]:
            attrs = dict(item)
            g.add_node(attrs.pop("id"), **attrs)
        for edge in data["edges"]:
            g.add_edge(edge["source"], edge["target"], edge["key"])
        return g
