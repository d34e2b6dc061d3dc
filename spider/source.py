"""Where source files come from: a directory on disk, or a git commit read without checkout.

Both kinds list files first (path and size, no content) so exclusions and size caps are
applied before anything is read, and both refuse symlinks and submodules so nothing
outside the repository is ever read. What a listing leaves out for safety is counted in
``skipped`` (symlinks, submodules, special files, unsafe paths), which the graph reports
with its own skip counts.

git runs through GitPython: one-shot commands through ``git.Git.execute`` (with
``kill_after_timeout``), blob contents through the persistent ``cat-file --batch`` process
of ``Repo(odbt=GitCmdObjectDB)``. Every command gets ``GIT_OPTIONS`` (no hooks, no
fsmonitor) and ``GIT_ENV`` (no prompts, no LFS smudging, no system config).
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from git import Git, Repo
from git.db import GitCmdObjectDB
from git.exc import GitError
from gitdb.util import hex_to_bin

from spider.errors import RepositoryNotFound, SourceError

# git must never run hooks, ask for credentials or smudge LFS content for us.
GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_LFS_SKIP_SMUDGE": "1",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_ASKPASS": "/bin/true",
}
GIT_OPTIONS = ("core.hooksPath=/dev/null", "core.fsmonitor=false")  # `-c` of every command
GIT_TIMEOUT_S = 600  # listing/reading a very large tree is slow but must end
# Directories never worth walking on disk (VCS data, virtualenvs, caches, dependencies).
PRUNE_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".cache",
    }
)


# Reasons a listing leaves an entry out (keys of ``skipped``).
SKIP_SYMLINK = "symlink"
SKIP_SUBMODULE = "submodule"
SKIP_SPECIAL = "not_a_file"  # fifos, sockets, devices
SKIP_UNSAFE_PATH = "unsafe_path"  # '..', '.git' or an absolute path inside a crafted tree
_GIT_FILE_MODES = (b"100644", b"100755")


def unsafe_path(path: str) -> bool:
    """Whether a repository path could name something outside it or git's own files."""
    parts = path.split("/")
    return (path.startswith("/") or any(p in ("", ".", "..") for p in parts)
            or any(p.lower() == ".git" for p in parts))


@dataclass(frozen=True)
class SourceFile:
    """One regular file of the tree: repository-relative posix path and size in bytes."""

    path: str
    size: int


class SourceTree(Protocol):
    """A readable snapshot of a repository."""

    commit: str | None
    skipped: Counter[str]  # what the last ``files()`` left out, by reason

    def files(self) -> list[SourceFile]:
        """Every regular file (no symlinks, no submodules), without content."""
        ...

    def read_many(self, paths: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        """Contents of the given paths, in the given order."""
        ...

    def blob_ids(self) -> dict[str, str]:
        """Path -> content id (git blob) of the files of the last listing, where the source
        has them; empty otherwise (the outline cache then has nothing to key by)."""
        ...


def git(args: list[str], cwd: Path) -> bytes:
    """Run git safely (no hooks, no prompts) and return stdout; raise SourceError on failure.

    Killed after ``GIT_TIMEOUT_S``.
    """
    argv = [Git.GIT_PYTHON_GIT_EXECUTABLE, *(a for c in GIT_OPTIONS for a in ("-c", c)), *args]
    what = f"git {' '.join(args[:2])} failed in {cwd}"
    try:
        status, out, err = Git(cwd).execute(
            argv,
            with_extended_output=True,
            with_exceptions=False,
            kill_after_timeout=GIT_TIMEOUT_S,
            stdout_as_string=False,
            strip_newline_in_stdout=False,
            env=GIT_ENV,
        )
    except (OSError, GitError) as exc:  # git missing, cwd gone
        raise SourceError(f"{what}: {exc}") from exc
    if status != 0:
        text = err.decode("utf-8", "replace") if isinstance(err, bytes) else str(err)
        msg = text.strip().splitlines()
        raise SourceError(f"{what}: {msg[-1] if msg else ''}")
    return out if isinstance(out, bytes) else out.encode()


class DirectorySource:
    """Files of a directory on disk (a working tree, or any folder)."""

    def __init__(self, root: str | Path) -> None:
        path = Path(root)
        if not path.exists():
            raise RepositoryNotFound(f"repository path does not exist: {path}")
        if not path.is_dir():
            raise RepositoryNotFound(f"repository path is not a directory: {path}")
        self.root = path.resolve()
        self.commit: str | None = self._head()
        self.skipped: Counter[str] = Counter()

    def _head(self) -> str | None:
        if not (self.root / ".git").exists():
            return None
        try:
            return git(["rev-parse", "HEAD"], self.root).decode().strip() or None
        except SourceError:
            return None

    def files(self) -> list[SourceFile]:
        """Walk the directory without following symlinks; skip .git."""
        out: list[SourceFile] = []
        self.skipped = Counter()
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            kept = []
            for d in dirnames:
                if d in PRUNE_DIRS:
                    continue
                if os.path.islink(os.path.join(dirpath, d)):
                    self.skipped[SKIP_SYMLINK] += 1
                    continue
                kept.append(d)
            dirnames[:] = sorted(kept)
            for name in sorted(filenames):
                full = os.path.join(dirpath, name)
                try:
                    st = os.lstat(full)
                except OSError:
                    continue
                if stat.S_ISLNK(st.st_mode):
                    self.skipped[SKIP_SYMLINK] += 1
                    continue
                if not stat.S_ISREG(st.st_mode):
                    self.skipped[SKIP_SPECIAL] += 1
                    continue
                rel = os.path.relpath(full, self.root).replace(os.sep, "/")
                out.append(SourceFile(rel, st.st_size))
        return out

    def blob_ids(self) -> dict[str, str]:
        """None: a working tree's files may change under the same path at any time."""
        return {}

    def read_many(self, paths: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        """Read each path, refusing anything that resolves outside the root."""
        for rel in paths:
            full = (self.root / rel).resolve()
            if self.root not in full.parents or full.is_symlink():
                continue
            try:
                yield rel, full.read_bytes()
            except OSError:
                continue


class GitSource:
    """Files of one commit of a git repository (bare or not), read via ls-tree/cat-file."""

    def __init__(self, git_dir: str | Path, rev: str = "HEAD") -> None:
        path = Path(git_dir)
        if not path.is_dir():
            raise RepositoryNotFound(f"git repository not found: {path}")
        self.git_dir = path
        self.commit: str | None = (
            git(["rev-parse", "--verify", f"{rev}^{{commit}}"], path).decode().strip()
        )
        self.skipped: Counter[str] = Counter()
        self._blobs: dict[str, str] | None = None  # path -> blob id, from the last listing

    def files(self) -> list[SourceFile]:
        """Regular blobs of the commit (mode 100644/100755); symlinks and submodules skipped."""
        raw = git(["ls-tree", "-r", "-l", "-z", "--full-tree", self.commit or "HEAD"], self.git_dir)
        out: list[SourceFile] = []
        blobs: dict[str, str] = {}
        self.skipped = Counter()
        for entry in raw.split(b"\0"):
            if not entry:
                continue
            meta, _, name = entry.partition(b"\t")
            parts = meta.split()
            if len(parts) < 4:
                continue
            if parts[0] == b"120000":
                self.skipped[SKIP_SYMLINK] += 1
                continue
            if parts[0] == b"160000" or parts[1] == b"commit":
                self.skipped[SKIP_SUBMODULE] += 1
                continue
            if parts[1] != b"blob" or parts[0] not in _GIT_FILE_MODES:
                self.skipped[SKIP_SPECIAL] += 1
                continue
            path = name.decode("utf-8", "surrogateescape")
            if unsafe_path(path):
                self.skipped[SKIP_UNSAFE_PATH] += 1
                continue
            size = int(parts[3]) if parts[3].isdigit() else 0
            out.append(SourceFile(path, size))
            blobs[path] = parts[2].decode("ascii")
        self._blobs = blobs
        return out

    def blob_ids(self) -> dict[str, str]:
        """Path -> git blob id of each file of the last listing (``files()``)."""
        return dict(self._blobs or {})

    def read_many(self, paths: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        """Stream blobs through one persistent ``git cat-file --batch`` process.

        Blobs are asked for by id (from the listing, made now if ``files()`` was not
        called): no path lookup per file, and any file name (newlines, bytes that are not
        UTF-8) is safe on the batch protocol. Paths the listing left out are not read.
        """
        wanted = list(paths)
        if not wanted:
            return
        if self._blobs is None:
            skipped = self.skipped
            self.files()
            self.skipped = skipped
        blobs = self._blobs or {}
        try:
            repo = Repo(self.git_dir, odbt=GitCmdObjectDB)
        except GitError as exc:
            raise SourceError(f"cannot open git repository {self.git_dir}: {exc}") from exc
        repo.git.set_persistent_git_options(c=list(GIT_OPTIONS))
        # GIT_DIR pinned: a bare mirror without a config file looks non-bare to GitPython,
        # which would run git in the parent directory; nor may an inherited GIT_DIR win.
        repo.git.update_environment(**GIT_ENV, GIT_DIR=str(repo.git_dir))
        try:
            for rel in wanted:
                sha = blobs.get(rel)
                if sha is None:
                    continue
                try:
                    obj = repo.odb.stream(hex_to_bin(sha))
                except ValueError:  # missing from the object store (a shallow or broken repo)
                    continue
                if obj.type not in (b"blob", "blob"):
                    continue
                yield rel, obj.read()
        finally:
            repo.git.clear_cache()  # ends the cat-file process
            repo.close()


def open_source(path: str | Path, rev: str | None = None) -> SourceTree:
    """A GitSource when ``rev`` is given or ``path`` is a bare repository, else a DirectorySource."""
    p = Path(path)
    if not p.exists():
        raise RepositoryNotFound(f"repository path does not exist: {p}")
    if not p.is_dir():
        raise RepositoryNotFound(f"repository path is not a directory: {p}")
    if rev is not None:
        return GitSource(p, rev)
    if (p / "HEAD").is_file() and (p / "objects").is_dir() and not (p / ".git").exists():
        return GitSource(p, "HEAD")
    return DirectorySource(p)
