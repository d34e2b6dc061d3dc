"""The local git repositories behind the fake's repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(path: Path, *args: str) -> str:
    """The output of a git command run in ``path`` (CalledProcessError when it fails)."""
    return subprocess.run(["git", *args], cwd=path, check=True, capture_output=True, text=True).stdout


def show_bytes(path: Path, rev: str, file: str) -> bytes:
    """A file's bytes at a revision (CalledProcessError when there is none)."""
    return subprocess.run(["git", "show", f"{rev}:{file}"], cwd=path, check=True,
                          capture_output=True).stdout


def packed_kb(path: Path) -> int:
    """The repository's size as GitHub measures it, roughly: its objects, in KB."""
    out = git(path, "count-objects", "-v")
    sizes = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    return int(sizes.get("size-pack", "0")) + int(sizes.get("size", "0"))
