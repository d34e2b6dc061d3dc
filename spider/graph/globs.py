"""Path globs with ``**``, as used by exclusion and inclusion settings.

Semantics (those of .gitignore, which users know):

- ``*`` and ``?`` never cross ``/``; ``**`` crosses any number of directories, and a
  leading ``**/`` also matches zero directories (``**/tests/**`` matches ``tests/x.py``);
- a pattern without ``/`` matches a name at any depth (``*.min.js``, ``build``);
- a leading ``/`` anchors at the repository root; a trailing ``/`` names a directory;
- a path matches when it, or any directory above it, matches a pattern.
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def glob_to_regex(pattern: str) -> str:
    """The regular expression (without anchors) of one glob."""
    pat = pattern.strip()
    anchored = pat.startswith("/")
    pat = pat.strip("/") if anchored else pat.rstrip("/")
    if not anchored and "/" not in pat and not pat.startswith("**"):
        pat = "**/" + pat
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("/**", i) and i + 3 == n:
            out.append("(?:/.*)?")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = pat.find("]", i + 2)
            if j == -1:
                out.append(re.escape(c))
                i += 1
                continue
            body = pat[i + 1 : j]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


class GlobSet:
    """A set of globs matched together; empty sets match nothing."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = [p for p in patterns if p and p.strip() and p.strip() != "/"]
        self._regex = (
            re.compile("|".join(f"(?:{glob_to_regex(p)})" for p in self.patterns))
            if self.patterns
            else None
        )
        self._dir_cache: dict[str, bool] = {}

    def __bool__(self) -> bool:
        return self._regex is not None

    def _full(self, path: str) -> bool:
        assert self._regex is not None
        return self._regex.fullmatch(path) is not None

    def _dir_matches(self, directory: str) -> bool:
        """Whether a directory or one above it matches (iterative, cached per directory)."""
        hit = self._dir_cache.get(directory)
        if hit is not None:
            return hit
        pending: list[str] = []
        d = directory
        while d and d not in self._dir_cache:
            pending.append(d)
            d = d.rpartition("/")[0]
        above = self._dir_cache.get(d, False) if d else False
        for d in reversed(pending):
            above = above or self._full(d)
            self._dir_cache[d] = above
        return above

    def matches(self, path: str) -> bool:
        """Whether a repository-relative posix path, or a directory above it, matches."""
        if self._regex is None:
            return False
        path = path.strip("/")
        if self._full(path):
            return True
        parent, _, _ = path.rpartition("/")
        return bool(parent) and self._dir_matches(parent)
