"""What a job did: one :class:`Outcome` for the issue, index and scoring jobs.

The task returns :meth:`Outcome.as_dict` as its result (and the replay command prints it).
Each job fills the fields that concern it; the rest keep their empty defaults and are left
out of the JSON form, so an issue job's result reads as before and an index job's does not
carry an issue job's fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

Status = Literal[
    # the issue job: what happened to its one comment
    "created", "updated", "unchanged", "too_large", "timed_out",
    # the index job and the scoring job
    "indexed", "scored",
    # any job
    "skipped", "failed",
]
ALWAYS_SHOWN = frozenset({"status", "reason"})  # in the JSON form even when empty
NEVER_SHOWN = frozenset({"body"})  # the comment's text is on GitHub, not in the result


@dataclass
class Outcome:
    """What one job did (the task's result)."""

    status: Status
    reason: str = ""
    sha: str | None = None  # the commit the job answered from or indexed
    timings: dict[str, float] = field(default_factory=dict)
    # --- the issue job ---
    comment_id: int | None = None
    body: str | None = None  # the comment posted (never in the JSON form)
    # --- the index job ---
    functions: int = 0
    embedded: int = 0
    recorded: bool = False  # the indexed head was recorded (a newer one may have won)
    reruns: list[dict[str, Any]] = field(default_factory=list)  # issue jobs to run again
    # --- the scoring job ---
    fixes: list[dict[str, Any]] = field(default_factory=list)  # fixes scored, one per issue

    def as_dict(self) -> dict[str, Any]:
        """JSON form: status, reason and the fields this job filled."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in NEVER_SHOWN:
                continue
            if f.name in ALWAYS_SHOWN or value not in (None, 0, False, {}, [], ""):
                out[f.name] = value
        return out
