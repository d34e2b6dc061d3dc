"""A git diff as the files GitHub lists for a pull request."""

from __future__ import annotations

import re
from typing import Any


def files_from_diff(diff: str) -> list[dict[str, Any]]:
    """A git diff split into REST pull-request files (``filename``, ``status``, ``patch``)."""
    out: list[dict[str, Any]] = []
    for chunk in re.split(r"(?m)^(?=diff --git )", diff):
        if not chunk.startswith("diff --git "):
            continue
        old = re.search(r"(?m)^--- (?:a/)?(.+?)\t?$", chunk)
        new = re.search(r"(?m)^\+\+\+ (?:b/)?(.+?)\t?$", chunk)
        at = chunk.find("\n@@")
        old_path = old.group(1) if old else None
        new_path = new.group(1) if new else None
        status = "modified"
        if old_path == "/dev/null":
            status, old_path = "added", None
        elif new_path == "/dev/null":
            status, new_path = "removed", None
        elif old_path != new_path:
            status = "renamed"
        entry: dict[str, Any] = {"filename": new_path or old_path, "status": status}
        if at >= 0:
            entry["patch"] = chunk[at + 1:].rstrip("\n")
        if status == "renamed":
            entry["previous_filename"] = old_path
        out.append(entry)
    return out
