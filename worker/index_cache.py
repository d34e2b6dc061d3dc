"""Indexes kept in the worker process between jobs, bounded by their functions.

Loading a warm index from disk (the graph, the vector matrix, both BM25 indexes, the
history window's parses) costs a large repository most of a second; a worker that
answers the same repositories again keeps them in memory instead. The bound is a number
of functions (every index holds a vector, a graph node and a BM25 row per function): the
least recently used indexes are dropped when it is exceeded. A Celery worker process
runs one job at a time, so nothing here is shared between threads.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from spider.settings import EngineSettings

if TYPE_CHECKING:
    from spider import Index


def index_key(git_dir: Path, sha: str, settings: EngineSettings, history_pending: bool) -> str:
    """What makes two jobs' indexes the same: the commit, every setting an index reads, and
    whether the mirror held the history window when it was read (an index read without it
    has none, and must not answer once the window is there)."""
    values = settings.index_part().model_dump(mode="json")
    payload = json.dumps([str(git_dir), sha, values, history_pending], sort_keys=True,
                         default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def index_size(index: Index) -> int:
    """An index's weight against the bound: its functions (at least 1)."""
    return max(1, len(index.function_ids))


class IndexCache:
    """The most recently used indexes, at most ``max_functions`` functions in all (0 = keep
    none); one larger than the bound is never kept."""

    def __init__(self, max_functions: int) -> None:
        self.max_functions = max_functions
        self._items: OrderedDict[str, Index] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def functions(self) -> int:
        """Functions held now."""
        return sum(index_size(i) for i in self._items.values())

    def get(self, key: str) -> Index | None:
        """The index kept under ``key`` (now the most recently used), or None."""
        index = self._items.get(key)
        if index is None:
            self.misses += 1
            return None
        self.hits += 1
        self._items.move_to_end(key)
        return index

    def put(self, key: str, index: Index) -> None:
        """Keep ``index``; drop the least recently used ones beyond the bound."""
        if index_size(index) > self.max_functions:
            self._items.pop(key, None)
            return
        self._items[key] = index
        self._items.move_to_end(key)
        while self.functions > self.max_functions:
            self._items.popitem(last=False)

    def get_or_build(self, key: str, build: Callable[[], Index]) -> Index:
        """The index under ``key``, built (and kept) when there is none."""
        index = self.get(key)
        if index is None:
            index = build()
            self.put(key, index)
        return index
