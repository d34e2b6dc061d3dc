"""Dataset rows for command-line tests: the smallest SWE-bench-style instance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def dataset_row(iid: str, repo: str = "o/r", **extra: Any) -> dict[str, Any]:
    """One JSONL row of a dataset (an edited function, a one-line issue)."""
    return {
        "instance_id": iid,
        "repo": repo,
        "base_commit": "abc",
        "problem_statement": "Title\nbody",
        "edit_functions": ["a.py:f"],
        **extra,
    }


def write_two_repo_dataset(path: Path, **extra: Any) -> Path:
    """A dataset of two instances in two repositories (o/r and p/q), written to ``path``."""
    rows = [dataset_row(i, r, **extra) for i, r in [("a-1", "o/r"), ("b-2", "p/q")]]
    path.write_text("\n".join(json.dumps(row) for row in rows))
    return path
