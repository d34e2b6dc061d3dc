"""Bare mirrors of repositories, one per repository under ``SPIDER_CACHE_DIR/mirrors``.

A job fetches the default branch's head (shallow: the engine reads one tree, and its
embedding cache makes the next commit cheap; as many commits more as the engine's history
at inference reads, when it reads any, unless that makes the mirror too large; once the
mirror holds that many, later fetches bring only the new commits) and then reads files
through
``spider.source.GitSource`` (``ls-tree``/``cat-file``, no working tree). git runs with no
hooks, no submodules, no LFS smudging, no prompts, and only https (or a local path the
operator configured). The installation token reaches git through environment config for
that one command: never argv, never the mirror's config, never a log line.

The caller holds the repository's lock (``worker.locks``) while fetching.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from contract.jobs import valid_repo
from contract.settings import AppSettings
from spider import GIT_ENV, history_depth
from worker.errors import FetchFailed, RepositoryTooLarge, UnsafeRepository

log = logging.getLogger(__name__)

# Options for every git command: hooks off, no fsmonitor, no submodule recursion, and
# only the transports we allow (file only when the operator's template is a local path).
_SAFE_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "protocol.allow=never",
    "protocol.https.allow=always",
    "http.followRedirects=false",  # the auth header must not follow a redirect elsewhere
    "transfer.fsckObjects=true",
)
# git's fsck names the broken rule ("hasDotdot", "badTree", ...): such objects never change.
_FSCK_ERROR = re.compile(r"fsck error|error: object [0-9a-f]+: [A-Za-z]+:")
_DEPTH_FILE = "spider-history-depth"  # inside the bare mirror: gone with it
_BRANCH = re.compile(r"^(?!.*\.\.)(?!.*//)(?!/)[A-Za-z0-9._/-]{1,200}(?<![./])$")


def _shallow_marker(git_dir: Path) -> Path:
    """Marks a repository too large to mirror with history: fetched one commit deep."""
    return git_dir.with_name(git_dir.name + ".shallow-only")


@dataclass(frozen=True)
class Checkout:
    """A fetched snapshot: the bare repository and the commit of the branch head."""

    git_dir: Path
    sha: str
    branch: str
    # the mirror holds the head but not yet the history window the engine reads (an issue
    # job's first fetch leaves that to the index job, so no answer waits for it)
    history_pending: bool = False


class Mirrors:
    """Fetches and sizes bare mirrors; knows where each repository is fetched from."""

    def __init__(self, settings: AppSettings, *, depth: int | None = None) -> None:
        self._settings = settings
        self._root = settings.mirror_dir
        # commits fetched per branch head: the engine's history at inference, when it reads it
        self._depth = depth if depth is not None else history_depth(settings.engine)

    def url_for(self, repo: str) -> str:
        """The fetch URL of ``owner/name``: https, or an absolute local path (tests, replay)."""
        if not valid_repo(repo):
            raise UnsafeRepository(f"not a repository name: {repo!r}")
        owner, name = repo.split("/", 1)
        url = self._settings.git_url_template.format(owner=owner, name=name)
        if url.startswith("https://") or Path(url).is_absolute():
            return url
        raise UnsafeRepository("SPIDER_GIT_URL_TEMPLATE must give an https URL or a local path")

    def path_for(self, repo: str) -> Path:
        """Where the bare mirror of ``owner/name`` lives."""
        if not valid_repo(repo):
            raise UnsafeRepository(f"not a repository name: {repo!r}")
        owner, name = repo.split("/", 1)
        return self._root / owner / f"{name}.git"

    def fetch(self, repo: str, branch: str, token: str | None, *,
              history: bool = True) -> Checkout:
        """Bring the mirror to the head of ``branch`` and return that commit.

        ``history=False`` (an issue job's answer): when the mirror does not hold the history
        window yet, fetch the head alone (a ``--depth=2001`` fetch of a large repository
        takes many seconds) and mark the checkout ``history_pending``; the index job
        fetches the window. A mirror that holds it catches up as usual."""
        if not _BRANCH.match(branch):
            raise UnsafeRepository(f"unusual default branch name {branch!r}")
        url = self.url_for(repo)
        git_dir = self.path_for(repo)
        if not (git_dir / "HEAD").is_file():
            git_dir.mkdir(parents=True, exist_ok=True)
            self._git(["init", "--bare", "--quiet", "--template=", str(git_dir)], git_dir.parent)
        _remove_stale_locks(git_dir)
        local = not url.startswith("https://")
        extra_env: dict[str, str] = {}
        if token and not local:
            basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
            extra_env = {
                "GIT_CONFIG_COUNT": "1",
                "GIT_CONFIG_KEY_0": "http.extraHeader",
                "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
            }
        source = Path(url).resolve().as_uri() if local else url  # file:// so --depth applies
        ref = f"refs/heads/{branch}"
        shallow_only = _shallow_marker(git_dir)
        depth = 1 if shallow_only.exists() else self._depth
        # A mirror that already holds `depth` commits below this branch only needs what is
        # new: fetching with --depth again makes git walk the whole window (4 s on sympy
        # for 2,000 commits, on every issue); without it the window only grows.
        catch_up = depth > 1 and _held_depth(git_dir) >= depth and self._has_ref(git_dir, ref)
        pending = depth > 1 and not catch_up and not history
        if pending:
            depth = 1  # the head now; its history window comes with the index job
        try:
            self._git(
                ["fetch", "--quiet", "--no-tags", "--no-recurse-submodules",
                 *(() if catch_up else (f"--depth={depth}",)),
                 "--force", source, f"+{ref}:{ref}"],
                git_dir,
                extra_env=extra_env,
                allow_file=local,
            )
        except FetchFailed as exc:
            _remove_partial_packs(git_dir)
            if exc.refused_by_fsck and depth > 1 and not catch_up:
                # an old commit of the window is malformed (psf/requests has one with a bad
                # time zone): keep the head alone, ranked without history, as when too large
                log.warning("history window refused by git; fetching the head alone",
                            extra={"repo": repo, "error": str(exc)[:300]})
                shallow_only.parent.mkdir(parents=True, exist_ok=True)
                shallow_only.touch()
                return self.fetch(repo, branch, token, history=history)
            if exc.refused_by_fsck:
                raise UnsafeRepository(f"{repo}: git refused its objects ({exc})") from exc
            raise
        sha = self._git(["rev-parse", "--verify", f"{ref}^{{commit}}"], git_dir).strip()
        try:
            self._check_size(repo, git_dir)
        except RepositoryTooLarge:
            if depth == 1:  # the head alone is too large, or a pending window would be
                raise
            # too large with its history: keep the commit alone (ranked without history)
            log.warning("mirror too large with %d commits of history; fetching the head alone",
                        depth - 1, extra={"repo": repo})
            shallow_only.parent.mkdir(parents=True, exist_ok=True)
            shallow_only.touch()
            return self.fetch(repo, branch, token)
        if depth == 1:  # the head alone cuts the history below it: catch up no more
            (git_dir / _DEPTH_FILE).unlink(missing_ok=True)
        elif not catch_up:
            (git_dir / _DEPTH_FILE).write_text(f"{depth}\n")
        log.info("mirror fetched", extra={"repo": repo, "branch": branch, "sha": sha,
                                          "caught_up": catch_up})
        return Checkout(git_dir=git_dir, sha=sha, branch=branch, history_pending=pending)

    def fetch_commit(self, repo: str, sha: str, token: str | None) -> Checkout:
        """Bring one commit (by its full id) into the mirror, e.g. a pull request's base.

        Kept under ``refs/spider/commits/<sha>`` so a later fetch of the branch does not
        lose it. The caller holds the repository's lock, as for :meth:`fetch`.
        """
        if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
            raise UnsafeRepository(f"not a full commit id: {sha!r}")
        git_dir = self.path_for(repo)
        ref = f"refs/spider/commits/{sha}"
        if (git_dir / "HEAD").is_file():
            try:
                self._git(["cat-file", "-e", f"{sha}^{{commit}}"], git_dir)
                return Checkout(git_dir=git_dir, sha=sha, branch=ref)
            except FetchFailed:
                pass  # not there yet
        else:
            git_dir.mkdir(parents=True, exist_ok=True)
            self._git(["init", "--bare", "--quiet", "--template=", str(git_dir)], git_dir.parent)
        url = self.url_for(repo)
        local = not url.startswith("https://")
        extra_env: dict[str, str] = {}
        if token and not local:
            basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
            extra_env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader",
                         "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}"}
        source = Path(url).resolve().as_uri() if local else url
        # one commit deep: it becomes a cut in the history, so the branch's next fetch must
        # bring its whole window again rather than catch up from it
        (git_dir / _DEPTH_FILE).unlink(missing_ok=True)
        try:
            self._git(["fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--depth=1",
                       source, f"+{sha}:{ref}"], git_dir, extra_env=extra_env, allow_file=local)
        except FetchFailed as exc:
            _remove_partial_packs(git_dir)
            if exc.refused_by_fsck:
                raise UnsafeRepository(f"{repo}: git refused its objects ({exc})") from exc
            raise
        self._check_size(repo, git_dir)
        return Checkout(git_dir=git_dir, sha=sha, branch=ref)

    def _has_ref(self, git_dir: Path, ref: str) -> bool:
        try:
            self._git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], git_dir)
        except FetchFailed:
            return False
        return True

    def _check_size(self, repo: str, git_dir: Path) -> None:
        out = self._git(["count-objects", "-v"], git_dir)
        sizes = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
        kb = int(sizes.get("size-pack", "0")) + int(sizes.get("size", "0"))
        if kb > self._settings.max_repo_kb:
            shutil.rmtree(git_dir, ignore_errors=True)
            raise RepositoryTooLarge(f"{repo} is {kb} KB, above {self._settings.max_repo_kb} KB",
                                     kb, self._settings.max_repo_kb)

    def _git(self, args: list[str], cwd: Path, *, extra_env: dict[str, str] | None = None,
             allow_file: bool = False) -> str:
        config = [*_SAFE_CONFIG, *(("protocol.file.allow=always",) if allow_file else ())]
        argv = ["git", *(arg for c in config for arg in ("-c", c)), *args]
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(GIT_ENV)
        env.update(extra_env or {})
        try:
            proc = subprocess.run(
                argv, cwd=cwd, env=env, capture_output=True, text=True,
                timeout=self._settings.git_timeout_s, check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise FetchFailed(f"git {args[0]} timed out") from exc
        except OSError as exc:
            raise FetchFailed(f"git {args[0]} could not run: {exc.strerror}") from exc
        if proc.returncode != 0:
            lines = proc.stderr.strip().splitlines()
            fsck = next((ln for ln in lines if _FSCK_ERROR.search(ln)), None)
            err = FetchFailed(f"git {args[0]} failed: {fsck or (lines[-1] if lines else proc.returncode)}")
            err.refused_by_fsck = fsck is not None
            raise err
        return proc.stdout


def _held_depth(git_dir: Path) -> int:
    """How many commits below each branch head the mirror was last fetched with (0: not
    recorded, or one commit)."""
    try:
        return int((git_dir / _DEPTH_FILE).read_text().strip())
    except (OSError, ValueError):
        return 0


def _remove_partial_packs(git_dir: Path) -> None:
    """Delete what a failed fetch leaves behind, so failures cannot fill the disk."""
    for tmp in [*git_dir.glob("objects/pack/tmp_*"), *git_dir.glob("objects/incoming-*")]:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)


def _remove_stale_locks(git_dir: Path) -> None:
    """Delete lock files a killed fetch left behind (the repository lock excludes live ones)."""
    for lock in [*git_dir.glob("*.lock"), *git_dir.glob("refs/**/*.lock")]:
        lock.unlink(missing_ok=True)
