"""Where a local checkout lives on GitHub: its web URL and branch, for permalinks.

``spider locate --format markdown`` renders the app's comment for a local checkout; the
permalinks need the repository's ``https://github.com/OWNER/NAME`` and the commit, which a
clone knows from its ``origin`` remote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from spider.errors import InputError, SourceError
from spider.source import git

# git@github.com:o/r.git, ssh://git@github.com/o/r.git, https://github.com/o/r(.git)
_GITHUB = re.compile(
    r"^(?:git@(?P<h1>[A-Za-z0-9.-]+):|(?:ssh|https?)://(?:[^@/]+@)?(?P<h2>[A-Za-z0-9.-]+)(?::\d+)?/)"
    r"(?P<owner>[A-Za-z0-9_.-]+)/(?P<name>[A-Za-z0-9_.-]+?)(?:\.git)?/?$"
)


@dataclass(frozen=True)
class Remote:
    """The web address of a repository and the branch a checkout is on."""

    html_url: str
    branch: str


def github_url(remote_url: str) -> str | None:
    """``https://github.com/OWNER/NAME`` for a GitHub remote URL, else None."""
    m = _GITHUB.match(remote_url.strip())
    if not m or (m.group("h1") or m.group("h2")) != "github.com":
        return None
    return f"https://github.com/{m.group('owner')}/{m.group('name')}"


def find_remote(path: Path, html_url: str | None = None) -> Remote:
    """The checkout's GitHub address (``origin``) and branch; ``html_url`` overrides the first.

    Raises InputError when there is no GitHub remote and none was given.
    """
    try:
        branch = git(["rev-parse", "--abbrev-ref", "HEAD"], path).decode().strip() or "HEAD"
    except SourceError:
        branch = "HEAD"
    if html_url is None:
        try:
            url = git(["remote", "get-url", "origin"], path).decode().strip()
        except SourceError:
            url = ""
        html_url = github_url(url)
        if html_url is None:
            raise InputError(
                f"{path} has no GitHub 'origin' remote to build permalinks from; "
                "pass --repo-url https://github.com/OWNER/NAME"
            )
    return Remote(html_url=html_url.rstrip("/"), branch=branch)
