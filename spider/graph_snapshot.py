"""A commit's graph (and what is derived from it alone) kept as pickles beside its JSON,
for a fast warm start.

Reading sympy's graph (22k nodes) from gzipped node-link JSON costs a warm query about
0.7 s of CPU (gunzip, JSON, then rebuilding the graph); unpickling the same graph
costs 0.04-0.07 s (its edges are integer arrays: spider.graph.digraph; a networkx graph took
2.5-2.9 times as long). The JSON stays the graph's cache of record (portable, checked by
version); the pickle is a copy written by this process's own code into the cache folder
and read only from there, so it is as trusted as the cache itself. Any mismatch (another
cache version, Python, pickled form) or damage and it is ignored, then written again.
"""

from __future__ import annotations

import gc
import logging
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import Any

from spider.graph.model import CodeGraph

log = logging.getLogger(__name__)

SNAPSHOT_SUFFIX = ".pickle"


# the pickled form of spider.graph.digraph.Digraph (and of the name table): bump on a change
SNAPSHOT_FORMAT = "digraph-1"


def _stamp(version: str) -> tuple[str, str, str]:
    """What a snapshot must match to be read: the graph cache's version, Python's and the
    pickled form's (pickles of another version may not load, or load differently)."""
    return version, f"{sys.version_info[0]}.{sys.version_info[1]}", SNAPSHOT_FORMAT


def snapshot_path(json_path: Path) -> Path:
    """Where the snapshot of the graph cached at ``json_path`` lives."""
    return json_path.with_name(json_path.name.split(".")[0] + SNAPSHOT_SUFFIX)


def derived_path(json_path: Path, name: str) -> Path:
    """Where something derived from the graph cached at ``json_path`` alone (its name
    table, say) is kept."""
    return json_path.with_name(f"{json_path.name.split('.')[0]}.{name}{SNAPSHOT_SUFFIX}")


def read_snapshot(path: Path, version: str, kind: type = CodeGraph) -> Any:
    """The ``kind`` object (a graph unless said) kept at ``path`` for cache ``version``,
    or None."""
    collecting = gc.isenabled()
    gc.disable()  # unpickling makes only new objects, no garbage: sympy's graph 0.28 -> 0.15 s CPU
    try:
        with path.open("rb") as fh:
            stamp, graph = pickle.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
            ImportError) as exc:  # damaged, or written by other code
        log.warning("ignoring graph snapshot %s: %s", path, exc)
        return None
    finally:
        if collecting:
            gc.enable()
    if stamp != _stamp(version) or not isinstance(graph, kind):
        return None
    return graph


def write_snapshot(graph: Any, path: Path, version: str) -> None:
    """Keep ``graph`` (or what is derived from it) at ``path`` (a temporary name renamed
    into place); a full disk or a read-only cache costs only the next warm start's time."""
    try:
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    except OSError as exc:
        log.warning("graph snapshot not kept: %s", exc)
        return
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump((_stamp(version), graph), fh, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(path)
    except OSError as exc:
        log.warning("graph snapshot not kept: %s", exc)
        tmp.unlink(missing_ok=True)
