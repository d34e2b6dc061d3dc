"""The code graph: a directed multigraph (:class:`~spider.graph.digraph.Digraph`) of
directories, files, classes and functions.

Node ids:
    directory  ``"pkg/sub"`` (the root is ``"."``)
    file       ``"pkg/sub/mod.py"``
    class      ``"pkg/sub/mod.py:Outer.Inner"``
    function   ``"pkg/sub/mod.py:Outer.method"`` / ``"pkg/sub/mod.py:outer.inner"``
A second definition with the same qualified name in one file (a property setter, an
overload, a definition under ``if``) gets ``#2``, ``#3``... appended to its id.

Node attributes: ``kind`` (directory/file/class/function), ``path``, ``name`` (qualified
name, "" for files and directories), ``language``, ``start_line`` and ``end_line``
(1-based, inclusive; files span their whole text; a decorated Python definition starts
at its first decorator, as the benchmark's ground truth counts it), ``text`` (source of
classes and functions). Edges carry ``type`` (contains/invokes/imports/inherits) and use it as key.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from spider.errors import IndexFormatError
from spider.graph.digraph import Digraph

GRAPH_FORMAT_VERSION = 1
GZIP_LEVEL = 3  # sympy's graph: 6.3 MB at 3 vs 5.2 MB at 9, written 5x faster


@dataclass
class ParseStats:
    """What indexing saw: files parsed per language, files skipped per reason, timings."""

    parsed: Counter[str] = field(default_factory=Counter)  # language -> files
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> files
    seconds: float = 0.0
    reused: int = 0  # files whose outline (or skip) came from the outline cache, not a parse
    parsers: int = 1  # processes that parsed the rest (spider.graph.parse_pool)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "parsed": dict(self.parsed),
            "skipped": dict(self.skipped),
            "seconds": self.seconds,
            "reused": self.reused,
            "parsers": self.parsers,
        }


@dataclass(frozen=True)
class NodeInfo:
    """A read-only view of one node's attributes."""

    id: str
    kind: str
    path: str
    name: str
    language: str
    start_line: int
    end_line: int
    text: str


class CodeGraph:
    """The repository graph plus the stats of the parse that built it."""

    def __init__(
        self,
        graph: Digraph | None = None,
        stats: ParseStats | None = None,
        commit: str | None = None,
    ) -> None:
        self.g: Digraph = graph if graph is not None else Digraph()
        self.stats = stats or ParseStats()
        self.commit = commit

    # -- construction -----------------------------------------------------------------
    def add_node(self, node_id: str, **attrs: Any) -> None:
        """Add or update a node."""
        self.g.add_node(node_id, **attrs)

    def add_edge(self, src: str, dst: str, edge_type: str) -> None:
        """Add one typed edge (idempotent)."""
        self.g.add_edge(src, dst, edge_type)

    # -- queries ----------------------------------------------------------------------
    def node(self, node_id: str) -> NodeInfo:
        """The attributes of one node."""
        a = self.g.nodes[node_id]
        return NodeInfo(
            id=node_id,
            kind=a.get("kind", ""),
            path=a.get("path", ""),
            name=a.get("name", ""),
            language=a.get("language", ""),
            start_line=int(a.get("start_line", 0)),
            end_line=int(a.get("end_line", 0)),
            text=a.get("text", ""),
        )

    def nodes_of_kind(self, kind: str) -> Iterator[str]:
        """Ids of every node of the given kind, in insertion order."""
        return (n for n, a in self.g.nodes(data=True) if a.get("kind") == kind)

    def functions(self) -> list[str]:
        """Ids of every function node, in insertion order (stable across runs)."""
        return list(self.nodes_of_kind("function"))

    def neighbours(self, node_id: str, edge_type: str) -> set[str]:
        """Nodes one ``edge_type`` edge away, in either direction."""
        out = {v for _, v, k in self.g.out_edges(node_id, keys=True) if k == edge_type}
        out |= {u for u, _, k in self.g.in_edges(node_id, keys=True) if k == edge_type}
        return out

    def counts(self) -> dict[str, Any]:
        """Node counts per kind and edge counts per type."""
        kinds = Counter(a.get("kind", "?") for _, a in self.g.nodes(data=True))
        edges = Counter(k for _, _, k in self.g.edges(keys=True))
        return {"nodes": dict(kinds), "edges": dict(edges)}

    # -- persistence ------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write the graph as gzipped node-link JSON (networkx's form)."""
        data = {
            "version": GRAPH_FORMAT_VERSION,
            "commit": self.commit,
            "stats": self.stats.to_dict(),
            "graph": self.g.to_node_link(),
        }
        path = Path(path)
        # a temporary name of this writer's own: two processes (an issue job and an index
        # job) may save the same commit's graph at once, and each rename must find its file
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
        tmp = Path(name)
        try:
            # one encode and a fast compression level: streaming json.dump through gzip's
            # text layer at level 9 took 2.8 s for sympy (22k functions); this takes 0.6 s
            payload = json.dumps(data, separators=(",", ":")).encode("utf-8", "surrogatepass")
            with os.fdopen(fd, "wb") as raw, gzip.GzipFile(
                fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL
            ) as fh:
                fh.write(payload)
            tmp.replace(path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | Path) -> CodeGraph:
        """Read a graph written by :meth:`save`."""
        try:
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                data = json.load(fh)
            if data.get("version") != GRAPH_FORMAT_VERSION:
                raise IndexFormatError(
                    f"{path}: graph format {data.get('version')} != {GRAPH_FORMAT_VERSION}; "
                    "delete it to rebuild"
                )
            g = Digraph.from_node_link(data["graph"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise IndexFormatError(
                f"cannot read graph {path}: {exc}; delete it to rebuild"
            ) from exc
        st = data.get("stats", {})
        stats = ParseStats(
            parsed=Counter(st.get("parsed", {})),
            skipped=Counter(st.get("skipped", {})),
            seconds=float(st.get("seconds", 0.0)),
            reused=int(st.get("reused", 0)),
            parsers=int(st.get("parsers", 1)),
        )
        return cls(g, stats, data.get("commit"))

    def stats_dict(self) -> dict[str, Any]:
        """Stats and counts together, for printing."""
        return {**self.stats.to_dict(), **self.counts(), "commit": self.commit}


__all__ = ["CodeGraph", "NodeInfo", "ParseStats", "asdict"]
