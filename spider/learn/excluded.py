"""Repositories that never enter training data of any kind, nor tuning.

The list ships with the engine (``excluded_repos.txt``: the 12 SWE-bench repositories, the
held-out evaluation's repositories and others); ``--excluded FILE`` adds more. Issues, fix
commits, changelog fragments and code–text pairs of a listed repository are dropped and
counted, never silently used.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from spider.errors import InputError

SHIPPED_LIST = Path(__file__).with_name("excluded_repos.txt")

T = TypeVar("T")


def read_list(path: str | Path) -> frozenset[str]:
    """``owner/name`` per line, lower-cased; ``#`` comments and blank lines ignored."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the exclusion list {p}: {exc}") from exc
    out: set[str] = set()
    for n, line in enumerate(text.splitlines(), start=1):
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        if entry.count("/") != 1:
            raise InputError(f"{p}:{n}: expected owner/name, got {entry!r}")
        out.add(entry.lower())
    return frozenset(out)


def excluded_repos(extra: Iterable[str | Path] = ()) -> frozenset[str]:
    """The shipped list plus any further list files."""
    names = set(read_list(SHIPPED_LIST))
    for path in extra:
        names |= read_list(path)
    return frozenset(names)


def is_excluded(repo: str, excluded: frozenset[str]) -> bool:
    """Whether ``repo`` (``owner/name``, any case) is on the list."""
    return repo.strip().lower() in excluded


def drop_excluded(
    rows: Iterable[T], repo_of: Callable[[T], str], excluded: frozenset[str]
) -> tuple[list[T], Counter[str]]:
    """The rows whose repository is not excluded, and how many were dropped per repository."""
    kept: list[T] = []
    dropped: Counter[str] = Counter()
    for row in rows:
        repo = repo_of(row)
        if is_excluded(repo, excluded):
            dropped[repo.lower()] += 1
        else:
            kept.append(row)
    return kept, dropped
