"""Source trees: a directory walk that refuses symlinks, and a git commit read without checkout."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from spider.errors import RepositoryNotFound
from spider.source import DirectorySource, GitSource, open_source


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_directory_source_skips_symlinks_and_pruned_dirs(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("def a(): pass\n")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "x.js").write_text("x")
    os.symlink("/etc/passwd", tmp_path / "pkg" / "passwd.py")
    os.symlink(tmp_path / "pkg", tmp_path / "loop")
    src = DirectorySource(tmp_path)
    assert [f.path for f in src.files()] == ["pkg/a.py"]
    assert dict(src.read_many(["pkg/a.py", "pkg/passwd.py", "../etc/passwd"])) == {
        "pkg/a.py": b"def a(): pass\n"
    }
    assert src.commit is None


def test_missing_or_file_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RepositoryNotFound, match="does not exist"):
        open_source(tmp_path / "nope")
    (tmp_path / "f").write_text("x")
    with pytest.raises(RepositoryNotFound, match="not a directory"):
        open_source(tmp_path / "f")


def test_git_source_reads_a_commit_without_checkout(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "a.py").write_text("v1\n")
    os.symlink("/etc/passwd", repo / "link.py")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / "a.py").write_text("v2\n")
    (repo / "b.py").write_text("b\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "two")
    bare = tmp_path / "bare.git"
    _git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    old = GitSource(bare, first)
    assert old.commit == first
    assert [f.path for f in old.files()] == ["a.py"]  # the symlink is not a regular blob
    assert dict(old.read_many(["a.py"])) == {"a.py": b"v1\n"}
    head = open_source(bare)
    assert isinstance(head, GitSource)
    assert dict(head.read_many(["a.py", "b.py", "missing.py"])) == {"a.py": b"v2\n", "b.py": b"b\n"}
    work = open_source(repo)
    assert isinstance(work, DirectorySource) and work.commit == head.commit


def test_git_source_reads_odd_names_from_a_bare_repository_without_config(tmp_path: Path) -> None:
    """Blobs are read by id through GitPython's persistent cat-file: names that are not
    UTF-8 or hold a newline cannot confuse the batch protocol; a bare mirror without a
    config file (GitPython would take it for a work tree) still reads."""
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / os.fsdecode(b"na\xefve.py")).write_bytes(b"def naive(): pass\n")
    (repo / "new\nline.py").write_text("def nl(): pass\n")
    (repo / "a.py").write_text("a\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    bare = tmp_path / "bare.git"
    _git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    (bare / "config").unlink()
    src = GitSource(bare, "HEAD")
    paths = [f.path for f in src.files()]
    assert sorted(paths) == sorted(["a.py", os.fsdecode(b"na\xefve.py"), "new\nline.py"])
    assert dict(src.read_many(paths)) == {
        "a.py": b"a\n",
        os.fsdecode(b"na\xefve.py"): b"def naive(): pass\n",
        "new\nline.py": b"def nl(): pass\n",
    }
    fresh = GitSource(bare, "HEAD")  # read without listing first
    assert dict(fresh.read_many(["a.py", "missing.py"])) == {"a.py": b"a\n"}
