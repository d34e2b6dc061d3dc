"""Where a local checkout lives on GitHub: its web URL and branch, for permalinks.

``spider locate --format markdown`` renders the app's comment for a local checkout; the
permalinks need the repository's ``https://github.com/OWNER/NAME`` and the commit, which a
clone knows from its ``origin`` remote. A permalink pins a commit, so the lines it
carries must be that commit's: :func:`uncommitted_changes` tells the command line when
the files on disk differ from it (it then ranks the commit, read through git).
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


REPO_URL_FORM = "https://github.com/OWNER/NAME"  # what --repo-url must look like
_SHA = re.compile(r"^[0-9a-f]{7,40}$")  # a commit id, abbreviated or full


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


def repo_url(value: str) -> str:
    """``--repo-url`` as ``https://github.com/OWNER/NAME``; InputError naming the form
    expected when it is not a GitHub repository's address."""
    url = github_url(value)
    if url is None or not value.strip().startswith("https://"):
        raise InputError(f"--repo-url must be {REPO_URL_FORM}, not {value!r}")
    return url


def commit_id(value: str) -> str:
    """``--commit`` as a lower-case commit id; InputError when it is not 7-40 hex digits."""
    sha = value.strip().lower()
    if not _SHA.match(sha):
        raise InputError(f"--commit must be a commit id (7 to 40 hex digits), not {value!r}")
    return sha


def git_kind(path: Path) -> str | None:
    """What git makes of ``path``: ``"top"`` (a working tree's top folder), ``"bare"`` (a
    bare repository), ``"inside"`` (a folder within a working tree) or None (no git: a
    tarball's files)."""
    try:
        bare = git(["rev-parse", "--is-bare-repository"], path).decode().strip()
        if bare == "true":
            return "bare"
        top = git(["rev-parse", "--show-toplevel"], path).decode().strip()
    except SourceError:
        return None
    return "top" if Path(top).resolve() == path.resolve() else "inside"


def uncommitted_changes(path: Path) -> list[str]:
    """Paths whose files on disk differ from HEAD: tracked files changed (staged or not)
    and files git does not ignore but does not track either. Empty for a clean tree."""
    out = git(["status", "--porcelain", "-z", "--untracked-files=normal"], path)
    return [e[3:].decode("utf-8", "surrogateescape") for e in out.split(b"\0") if len(e) > 3]


def find_remote(path: Path, html_url: str | None = None) -> Remote:
    """The checkout's GitHub address (``origin``) and branch; ``html_url`` (``--repo-url``,
    checked by :func:`repo_url`) overrides the first.

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
                f"pass --repo-url {REPO_URL_FORM}"
            )
    else:
        html_url = repo_url(html_url)
    return Remote(html_url=html_url.rstrip("/"), branch=branch)
