"""SWE-bench-style JSONL rows: read, validate, write.

A row needs ``instance_id``, ``repo`` (``owner/name``), ``base_commit``,
``problem_statement`` and ground truth as ``edit_functions`` or, when absent, a ``patch``.
Other fields are kept but never used as input (``hints_text`` and the patch would leak
the answer).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spider.errors import InputError
from spider.models import Issue

HISTORY_DATASET_FILE = "dataset.jsonl"  # what `spider bench history` writes into its --out
REQUIRED_FIELDS = ("instance_id", "repo", "base_commit", "problem_statement")


@dataclass
class Instance:
    """One benchmark row."""

    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    edit_functions: list[str] | None = None
    patch: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def owner_name(self) -> tuple[str, str]:
        """``(owner, name)`` of ``repo``."""
        owner, _, name = self.repo.partition("/")
        return owner, name

    def issue(self) -> Issue:
        """The issue the engine sees: first line as title, the rest as body."""
        title, _, body = self.problem_statement.strip().partition("\n")
        return Issue(title=title.strip(), body=body.strip())

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the row's other fields first, ours over them)."""
        d: dict[str, Any] = dict(self.extra)
        d.update(
            instance_id=self.instance_id,
            repo=self.repo,
            base_commit=self.base_commit,
            problem_statement=self.problem_statement,
        )
        if self.patch is not None:
            d["patch"] = self.patch
        if self.edit_functions is not None:
            d["edit_functions"] = self.edit_functions
        return d


def parse_row(row: dict[str, Any], where: str = "") -> Instance:
    """One JSON object as an :class:`Instance`; raise InputError when it is unusable."""
    missing = [f for f in REQUIRED_FIELDS if not row.get(f)]
    if missing:
        raise InputError(f"{where}: missing {', '.join(missing)}")
    if "/" not in str(row["repo"]):
        raise InputError(f"{where}: repo must be owner/name, got {row['repo']!r}")
    edits = row.get("edit_functions")
    patch = row.get("patch")
    if not edits and not patch:
        raise InputError(f"{where}: needs edit_functions or a patch for ground truth")
    extra = {k: v for k, v in row.items() if k not in (*REQUIRED_FIELDS, "edit_functions", "patch")}
    return Instance(
        instance_id=str(row["instance_id"]),
        repo=str(row["repo"]),
        base_commit=str(row["base_commit"]),
        problem_statement=str(row["problem_statement"]),
        edit_functions=[str(e) for e in edits] if edits else None,
        patch=str(patch) if patch else None,
        extra=extra,
    )


def read_dataset(path: str | Path) -> list[Instance]:
    """Every row of a JSONL file (blank lines skipped)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"dataset not found: {p}")
    out: list[Instance] = []
    with p.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{p}:{lineno}: not JSON: {exc}") from exc
            out.append(parse_row(row, f"{p}:{lineno}"))
    return out


def write_dataset(path: str | Path, instances: Iterable[Instance]) -> int:
    """Write rows as JSONL; returns how many."""
    n = 0
    with Path(path).open("w", encoding="utf-8") as fh:
        for inst in instances:
            fh.write(json.dumps(inst.to_dict(), ensure_ascii=False) + "\n")
            n += 1
    return n


def select_instances(
    instances: Sequence[Instance],
    *,
    ids: Sequence[str] | None = None,
    repos: Sequence[str] | None = None,
    limit: int | None = None,
) -> list[Instance]:
    """Filter by instance ids and repositories (``owner/name``, in that order), then ``limit``."""
    out = list(instances)
    if ids:
        wanted = set(ids)
        unknown = wanted - {i.instance_id for i in out}
        if unknown:
            raise InputError(f"unknown instance ids: {', '.join(sorted(unknown))}")
        out = [i for i in out if i.instance_id in wanted]
    if repos:  # kept, and ordered as listed (small repositories first warms caches sooner)
        order = {r: n for n, r in enumerate(repos)}
        out = sorted((i for i in out if i.repo in order), key=lambda i: order[i.repo])
    if limit is not None:
        out = out[:limit]
    return out
