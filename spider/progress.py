"""How long work reports how far along it is, without the engine knowing who listens.

The engine (indexing, the cold path, the benchmark's and the training corpus's loops)
calls a :class:`Progress` with a phase, the steps done and the phase's total; the command
line implements it with a ``rich`` display on stderr (``spider.cli_common``), the app
passes nothing. A phase begins with a call whose ``done`` is 0 and may be reported again
with the same ``done``: listeners must not assume every call advances. A phase that
cannot count its steps begins with ``total`` None and ends with ``done == total == 1``
(:func:`ended`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

# The phases, in the order a cold `spider locate` meets them. Each names what it counts
# (UNITS), so a display can say "parsing 120 files" or "embedding 15,240 functions".
PARSING = "parsing"  # source files read and parsed into the graph
EMBEDDING = "embedding"  # functions run through the encoder for the full index
EMBEDDING_POOL = "embedding the pool"  # the cold path: only the best candidates
LEXICAL = "indexing words"  # the BM25 indexes (one step; no total)
RANKING = "ranking"  # one query: first stage, re-ranking, expansion (no total)
LLM_READING = "asking the LLM"  # the LLM pass: functions judged one at a time
RUNS = "benchmarking"  # the benchmark's loop: (instance, method) pairs
INSTANCES = "collecting"  # the training commands' loops: dataset instances
TRAINING = "training"  # optimiser steps of a model being tuned
UNITS = {
    PARSING: "files",
    EMBEDDING: "functions",
    EMBEDDING_POOL: "functions",
    LLM_READING: "functions",
    RUNS: "runs",
    INSTANCES: "instances",
    TRAINING: "steps",
}


class Progress(Protocol):
    """A listener for long work: ``progress(phase, done, total, detail)``.

    ``total`` is None when the phase cannot count its steps (a spinner, not a bar);
    ``detail`` names the item at hand (an instance id), "" when there is none.
    """

    def __call__(self, phase: str, done: int, total: int | None, detail: str = "") -> None: ...


def ended(progress: Progress | None, phase: str) -> None:
    """Report that ``phase``, begun without a total, is over."""
    if progress is not None:
        progress(phase, 1, 1)


def steps(progress: Progress | None, phase: str) -> Callable[[int, int], None] | None:
    """A ``(done, total)`` callback reporting ``phase`` to ``progress`` (None: nothing
    listens), the shape the graph builder and the encoder take."""
    if progress is None:
        return None

    def report(done: int, total: int) -> None:
        progress(phase, done, total)

    return report


def listener(progress: Progress | bool | None) -> Progress | None:
    """``progress`` as a listener: None, False (what callers passed before there was a
    protocol) and True (which asked for a third-party bar, no longer drawn) mean none."""
    return None if isinstance(progress, bool) else progress
