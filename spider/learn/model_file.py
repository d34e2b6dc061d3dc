"""The one writer of model files: every fitted model is saved with what made it.

A model file carries :data:`spider.weights.SCHEMA_VERSION`, its ``kind`` and its
provenance: the command as typed, a one-line comment, the cross-validation figures and
what else its kind records (the data it was fitted on, library versions, the weights a
calibration belongs to). The body is the runtime's format, written by the runtime's own
dumper so that its loader reads it back unchanged:

- :class:`WeightsBody` (sections of named coefficients and scalars: the selector, the
  head model, the head calibration): JSON through :func:`spider.weights.dump_weights`;
- :class:`~spider.rank.pool_rank.PoolRanker`: JSON through :func:`spider.rank.pool_rank.dump_ranker`;
- :class:`~spider.retrieve.adapter.QueryAdapter`: ``.npz`` through
  :func:`spider.retrieve.adapter.dump_adapter`;
- :class:`LoraBody` (the encoder delta, the cross-encoder): ``.npz`` through
  :func:`spider.retrieve.delta.dump_lora`. Its figures are the learning curve it records
  (``curve``), so a LoRA file carries ``comment`` and ``cv`` only when they are given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from spider.rank.pool_rank import PoolRanker, dump_ranker
from spider.retrieve.adapter import QueryAdapter, dump_adapter
from spider.retrieve.delta import dump_lora
from spider.weights import dump_weights

RESERVED = frozenset({"schema", "kind", "comment", "command", "cv"})  # keys provenance owns


@dataclass(frozen=True)
class Provenance:
    """What fitted a model file: the command, a comment, the CV figures, and the rest of
    what its kind records (``extra``: e.g. ``trained_on``, ``fingerprint``)."""

    command: str
    comment: str
    cv: Mapping[str, Any]
    extra: Mapping[str, Any] = field(default_factory=dict)

    def meta(self) -> dict[str, Any]:
        """The metadata as the file holds it: comment, command, the extra fields, cv."""
        if not self.command.strip():
            raise ValueError("a model file needs the command that fitted it")
        clash = sorted(RESERVED & set(self.extra))
        if clash:
            raise ValueError(f"extra metadata may not set {clash}")
        return {"comment": self.comment, "command": self.command, **self.extra, "cv": dict(self.cv)}


@dataclass(frozen=True)
class WeightsBody:
    """A weights file's body: named coefficient sections and scalars of one ``kind``."""

    kind: str
    sections: Mapping[str, Mapping[str, float]]
    scalars: Mapping[str, float]


@dataclass(frozen=True)
class LoraBody:
    """A LoRA file's body: the header its kind's reader checks (``schema``, ``kind``,
    ``base``, ``base_fingerprint``, ``rank``, ``alpha`` and per kind e.g. the head's
    ``bias``), the adapters' factors (``name -> (A, B)``, float16 on disk) and any further
    arrays (the cross-encoder's head direction)."""

    header: Mapping[str, Any]
    factors: Mapping[str, tuple[np.ndarray, np.ndarray]]
    arrays: Mapping[str, np.ndarray] = field(default_factory=dict)


Model = WeightsBody | PoolRanker | QueryAdapter | LoraBody


def _lora_meta(provenance: Provenance) -> dict[str, Any]:
    """A LoRA file's metadata: the provenance, ``comment`` and ``cv`` left out when empty
    (its figures are the learning curve in ``extra``)."""
    meta = provenance.meta()
    return {k: v for k, v in meta.items() if k not in ("comment", "cv") or v}


def write_model_file(path: str | Path, model: Model, provenance: Provenance) -> Path:
    """Write ``model`` with ``provenance`` to ``path`` in its runtime's format; the path."""
    path = Path(path)
    meta = provenance.meta()
    if isinstance(model, WeightsBody):
        dump_weights(
            path, kind=model.kind, sections=model.sections, scalars=model.scalars, meta=meta
        )
    elif isinstance(model, PoolRanker):
        dump_ranker(path, model, meta)
    elif isinstance(model, QueryAdapter):
        dump_adapter(path, model.matrix, meta)
    elif isinstance(model, LoraBody):
        dump_lora(path, {**model.header, **_lora_meta(provenance)}, model.factors, model.arrays)
    else:
        raise TypeError(f"no model file format for {type(model).__name__}")
    return path
