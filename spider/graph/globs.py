"""Path globs with ``**``, as used by exclusion and inclusion settings.

Semantics are those of .gitignore, which users know, matched by ``pathspec``'s
``GitIgnoreSpec``:

- ``*`` and ``?`` never cross ``/``; ``**`` crosses any number of directories, and a
  leading ``**/`` also matches zero directories (``**/tests/**`` matches ``tests/x.py``);
- a pattern without ``/`` matches a name at any depth (``*.min.js``, ``build``);
- a leading ``/`` anchors at the repository root; a trailing ``/`` names a directory;
- a path matches when it, or any directory above it, matches a pattern.

What differs from a .gitignore file, on purpose: every pattern adds to the set (a
leading ``!`` or ``#`` is taken literally, not as a negation or a comment, so one
setting can never re-include what another excludes), a backslash is a literal
character, not an escape, and surrounding blanks are dropped.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable

from pathspec import GitIgnoreSpec

_LITERAL_FIRST = ("!", "#")  # gitignore syntax (negation, comment) that a setting never means


def _gitignore_line(pattern: str) -> str:
    """One setting glob as a .gitignore line with the same meaning.

    A backslash is a character of the path (git allows it in names), not an escape:
    ``glob.escape`` escapes with brackets, and a setting written for any OS stays literal.
    """
    pat = pattern.strip().replace("\\", "\\\\")
    return "\\" + pat if pat.startswith(_LITERAL_FIRST) else pat


class GlobSet:
    """A set of globs matched together; empty sets match nothing."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = [p for p in patterns if p and p.strip() and p.strip() != "/"]
        self._spec: GitIgnoreSpec | None = None
        if self.patterns:
            with warnings.catch_warnings():
                # ``[[]`` (how glob.escape writes "[") is the set of "[" today; Python's
                # regex parser warns that it might one day read it as a nested set.
                warnings.filterwarnings("ignore", "Possible nested set", FutureWarning)
                self._spec = GitIgnoreSpec.from_lines(
                    [_gitignore_line(p) for p in self.patterns]
                )

    def __bool__(self) -> bool:
        return self._spec is not None

    def matches(self, path: str) -> bool:
        """Whether a repository-relative posix path, or a directory above it, matches."""
        if self._spec is None:
            return False
        return self._spec.match_file(path.strip("/"))
