"""The ``/spider`` command in an issue comment: re-run, optionally with ``k=`` and ``edges=``
(``contains``, ``invokes``, ``both``, ``none``, or ``auto``: whatever the selector that runs
expands by default).

Pure parsing. The first non-empty line of the comment must start with ``/spider``; the
options follow on that line as ``key=value`` words. Bad options do not cancel the command:
they are reported back (and shown in the comment) while the rest applies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from spider.settings import parse_edges_setting

COMMAND = "/spider"
MAX_K = 50  # a longer list stops being a triage aid and makes the comment unwieldy
MAX_OPTION_CHARS = 40  # options are echoed back in problems; keep the echo short
_OPTION = re.compile(r"^([a-z_]+)=(\S*)$")


@dataclass(frozen=True)
class Command:
    """A parsed ``/spider`` command: overrides for this run and any problems found."""

    k: int | None = None
    edges: tuple[str, ...] | Literal["auto"] | None = None
    problems: tuple[str, ...] = field(default=())

    def overrides(self) -> dict[str, object]:
        """Engine settings this command changes."""
        out: dict[str, object] = {}
        if self.k is not None:
            out["k"] = self.k
        if self.edges is not None:
            out["edges"] = self.edges
        return out


def parse_command(body: str | None) -> Command | None:
    """The command in a comment body, or None when the comment is not a command."""
    if not body:
        return None
    first = next((line.strip() for line in body.splitlines() if line.strip()), "")
    words = first.split()
    if not words or words[0].lower() != COMMAND:
        return None
    k: int | None = None
    edges: tuple[str, ...] | Literal["auto"] | None = None
    problems: list[str] = []
    for word in words[1:]:
        match = _OPTION.match(word.lower())
        shown = word[:MAX_OPTION_CHARS]
        if match is None:
            problems.append(f"ignored `{_tick_free(shown)}`: options are written key=value")
            continue
        key, value = match.groups()
        if key == "k":
            if value.isdigit() and 1 <= int(value) <= MAX_K:
                k = int(value)
            else:
                problems.append(f"ignored `{_tick_free(shown)}`: k must be 1 to {MAX_K}")
        elif key == "edges":
            try:
                edges = parse_edges_setting(value)
            except ValueError:
                problems.append(
                    f"ignored `{_tick_free(shown)}`: edges is contains, invokes, both, none or auto"
                )
        else:
            problems.append(f"ignored `{_tick_free(shown)}`: known options are k and edges")
    return Command(k=k, edges=edges, problems=tuple(problems))


def _tick_free(text: str) -> str:
    """Text safe inside a single-backtick code span."""
    return text.replace("`", "'")
