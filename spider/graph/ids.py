"""Node-id helpers, including the benchmark's naming convention.

Graph ids keep every enclosing name (``mod.py:Outer.method.inner``) and number repeated
names (``mod.py:C.prop#2`` for a property setter). The SWE-bench function-level ground
truth (``bench/README.md``) names a nested function with its enclosing *functions*
dropped (``mod.py:Response.generate``) and lets setters and overloads share their
getter's id; ``benchmark_id`` maps a graph id to that form.
"""

from __future__ import annotations

import re

from spider.graph.model import CodeGraph

_DUPLICATE = re.compile(r"#\d+$")


def split_node_id(node_id: str) -> tuple[str, str, int]:
    """``"a/b.py:C.f#2"`` -> ``("a/b.py", "C.f", 2)``; files and directories have no name."""
    path, sep, name = node_id.partition(":")
    if not sep:
        return node_id, "", 1
    m = _DUPLICATE.search(name)
    if m:
        return path, name[: m.start()], int(m.group()[1:])
    return path, name, 1


def benchmark_id(cg: CodeGraph, node_id: str) -> str:
    """The id of a class/function under the benchmark's convention (see module docstring)."""
    path, name, _ = split_node_id(node_id)
    if not name:
        return node_id
    segments = name.split(".")
    drop: set[int] = set()
    current = node_id
    while True:
        parents = [u for u, _, k in cg.g.in_edges(current, keys=True) if k == "contains"]
        if not parents:
            break
        current = parents[0]
        attrs = cg.g.nodes[current]
        if attrs.get("kind") not in ("class", "function"):
            break
        if attrs.get("kind") == "function":
            depth = len(attrs.get("name", "").split("."))
            drop.add(depth - 1)
    kept = [s for i, s in enumerate(segments) if i not in drop]
    return f"{path}:{'.'.join(kept)}"
