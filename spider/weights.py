"""Shipped coefficient files: one validated loader and one writer for every learned stage.

A weights file is JSON::

    {"schema": 1, "kind": "rerank", "coef": {...}, "bias": -1.2, ...meta}

``schema`` is the file format's version (:data:`SCHEMA_VERSION`), ``kind`` names the stage
that reads it, each *section* is a mapping of feature name to a finite number whose names
the stage knows, each *scalar* a finite number. Everything else (the command that fitted
it, its data and cross-validation figures) is kept as ``meta``. A file that breaks any of
this raises :class:`~spider.errors.WeightsFormatError` naming the file and the fix.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spider.errors import WeightsFormatError

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class WeightsFile:
    """A validated weights file: its sections, scalars and the rest as metadata."""

    kind: str
    sections: Mapping[str, Mapping[str, float]]
    scalars: Mapping[str, float]
    meta: Mapping[str, Any] = field(default_factory=dict)


def _number(path: Path, where: str, value: object, hint: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise WeightsFormatError(f"{path}: {where} must be a finite number, not {value!r}; {hint}")
    return float(value)


def read_checked(path: str | Path, *, kind: str, regenerate: str) -> dict[str, Any]:
    """The JSON object of a shipped model file after the checks every kind shares: it
    parses, its ``schema`` is :data:`SCHEMA_VERSION` and its ``kind`` is ``kind``."""
    path = Path(path)
    hint = f"regenerate it with `{regenerate}`"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise WeightsFormatError(f"cannot read weights {path}: {exc}; {hint}") from exc
    if not isinstance(data, dict):
        raise WeightsFormatError(f"{path}: not a JSON object; {hint}")
    if data.get("schema") != SCHEMA_VERSION:
        raise WeightsFormatError(
            f"{path}: schema {data.get('schema')!r}, this engine reads schema {SCHEMA_VERSION}; "
            + hint
        )
    if data.get("kind") != kind:
        raise WeightsFormatError(f"{path}: holds {data.get('kind')!r} weights, not {kind!r}")
    return data


def load_weights(
    path: str | Path,
    *,
    kind: str,
    sections: Mapping[str, Collection[str]],
    scalars: Mapping[str, float | None],
    regenerate: str,
    optional: Mapping[str, Collection[str]] | None = None,
) -> WeightsFile:
    """Read and check a weights file of ``kind``.

    ``sections`` maps each section to the feature names it may hold; ``optional`` the same
    for sections a file may lack (absent from the result then); ``scalars`` maps each
    scalar to its default (``None``: required). ``regenerate`` is the command that writes
    the file, quoted in every error.
    """
    optional = optional or {}
    path = Path(path)
    hint = f"regenerate it with `{regenerate}`"
    data = read_checked(path, kind=kind, regenerate=regenerate)
    got_sections: dict[str, dict[str, float]] = {}
    for name, allowed in {**sections, **optional}.items():
        raw = data.get(name)
        if raw is None and name in optional:
            continue
        if not isinstance(raw, dict):
            raise WeightsFormatError(f"{path}: section {name!r} is missing; {hint}")
        unknown = sorted(set(raw) - set(allowed))
        if unknown:
            raise WeightsFormatError(f"{path}: {name} names unknown features {unknown}; {hint}")
        got_sections[name] = {str(k): _number(path, f"{name}.{k}", v, hint) for k, v in raw.items()}
    got_scalars: dict[str, float] = {}
    for name, default in scalars.items():
        if name not in data and default is None:
            raise WeightsFormatError(f"{path}: {name!r} is missing; {hint}")
        got_scalars[name] = _number(path, name, data.get(name, default), hint)
    known = {"schema", "kind", *sections, *optional, *scalars}
    meta = {k: v for k, v in data.items() if k not in known}
    return WeightsFile(kind=kind, sections=got_sections, scalars=got_scalars, meta=meta)


def dump_weights(
    path: str | Path,
    *,
    kind: str,
    sections: Mapping[str, Mapping[str, float]],
    scalars: Mapping[str, float],
    meta: Mapping[str, Any],
) -> None:
    """Write a weights file that :func:`load_weights` reads back (meta first, for readers)."""
    body: dict[str, Any] = {"schema": SCHEMA_VERSION, "kind": kind, **meta}
    body.update({k: dict(v) for k, v in sections.items()})
    body.update(scalars)
    Path(path).write_text(json.dumps(body, indent=2) + "\n")
