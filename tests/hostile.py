"""Hostile repositories, built with git by the tests that need them (nothing committed).

Each builder writes a repository under a given directory and returns what a test needs to
check that nothing was executed and nothing outside the repository was read: marker files
that a hook, a submodule transport or a filter would create if git ever ran them, and
"secret" files outside the repository whose contents must never reach an index.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

GIT_ID = {"GIT_AUTHOR_NAME": "Mallory", "GIT_AUTHOR_EMAIL": "m@example.invalid",
          "GIT_COMMITTER_NAME": "Mallory", "GIT_COMMITTER_EMAIL": "m@example.invalid"}
BIG_BLOB_BYTES = 200 * 1024 * 1024
DEEP_LEVELS = 10_000
LFS_POINTER = (
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
    "size 12345\n"
)
SECRET_FUNCTION = "leaked_secret_function"  # defined only outside the repository


def git(cwd: Path, *args: str, input_bytes: bytes | None = None) -> str:
    """git as the builder runs it: never the hostile repository's hooks or fsmonitor."""
    env = {**os.environ, **GIT_ID, "GIT_CONFIG_NOSYSTEM": "1"}
    safe = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"]
    proc = subprocess.run(["git", *safe, *args], cwd=cwd, input=input_bytes,
                          capture_output=True, env=env, check=True)
    return proc.stdout.decode().strip()


@dataclass
class Hostile:
    """A hostile repository and how to tell whether it got its way."""

    path: Path
    markers: list[Path] = field(default_factory=list)  # must never exist
    outside: Path | None = None  # a directory outside the repository

    def fired(self) -> list[Path]:
        """Markers that exist: something was executed."""
        return [m for m in self.markers if m.exists()]


def _outside(root: Path) -> Path:
    """A directory beside the repository holding code that must never be indexed."""
    out = root / "outside"
    out.mkdir(parents=True, exist_ok=True)
    (out / "secret.py").write_text(f"def {SECRET_FUNCTION}():\n    return 'the secret'\n")
    return out


def hostile_repo(root: Path) -> Hostile:
    """One repository with every trick at once (except the slow ones, see below).

    - hooks in the origin and in .git/hooks that would create marker files;
    - ``.gitmodules`` naming an ``ext::`` transport that would run a command, with a gitlink;
    - a ``.gitattributes`` filter and an LFS pointer saved as a ``.py`` file;
    - symlinks to /etc/passwd, out of the tree (file and directory), committed as links;
    - a tree entry named ``..`` (a ``../evil.py`` path), written with ``git mktree``;
    - binary data and a minified one-line file under source extensions;
    - invalid UTF-8 inside a source file, and a file name that is not UTF-8;
    - a 200 MB blob of zeros as a ``.py`` file (sparse on disk, a few hundred KB packed);
    - 10,000 levels of nesting in JavaScript, Python brackets and C blocks.
    """
    repo = root / "repo"
    repo.mkdir(parents=True)
    outside = _outside(root)
    markers = [root / f"pwned-{n}" for n in ("hook", "submodule", "filter", "fsmonitor")]
    git(repo, "init", "-q", "-b", "main")
    hook = f"#!/bin/sh\ntouch {markers[0]}\n"
    for name in ("post-checkout", "pre-commit", "reference-transaction", "post-merge",
                 "pre-push", "post-index-change", "fsmonitor-watchman"):
        h = repo / ".git" / "hooks" / name
        h.write_text(hook)
        h.chmod(0o755)

    files: dict[str, bytes] = {
        "app/core.py": b"def handle(request):\n    return route(request)\n\n\n"
                       b"def route(request):\n    return request\n",
        "app/lfs_model.py": LFS_POINTER.encode(),
        "app/binary.py": b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 64,
        "app/image.js": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 4096,
        "app/bundle.js": b"var a=1;" + b"function f(){return 1};" * 40_000,  # one line
        "app/latin1.py": b"def caf\xe9():\n    return '\xff\xfe'\n\n\ndef after_bad_bytes():\n"
                         b"    pass\n",
        "app/deep.js": b"".join(b"function d%d(){\n" % i for i in range(DEEP_LEVELS))
                       + b"}\n" * DEEP_LEVELS + b"function shallow() {}\n",
        "app/deep_brackets.py": b"x = " + b"[" * DEEP_LEVELS + b"]" * DEEP_LEVELS
                                + b"\n\n\ndef after_brackets():\n    pass\n",
        "app/deep.c": b"int deep(void) {\n" + b"{\n" * DEEP_LEVELS + b"}\n" * DEEP_LEVELS
                      + b"return 0;\n}\n",
        ".gitattributes": b"*.py filter=pwn\napp/lfs_model.py filter=lfs diff=lfs merge=lfs\n",
        ".gitmodules": (
            b'[submodule "vendor/evil"]\n\tpath = vendor/evil\n'
            b"\turl = ext::sh -c touch% " + str(markers[1]).encode() + b"\n"
            b'[submodule "vendor/local"]\n\tpath = vendor/local\n\turl = ' + str(outside).encode()
            + b"\n"
        ),
    }
    for rel, data in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(data)
    # A filter in the *origin's* config: it must not travel with a fetch.
    git(repo, "config", "filter.pwn.clean", "cat")
    git(repo, "config", "filter.pwn.smudge", f"sh -c 'touch {markers[2]}; cat'")
    git(repo, "config", "core.fsmonitor", f"sh -c 'touch {markers[3]}'")
    (repo / "app" / "passwd.py").symlink_to("/etc/passwd")
    (repo / "app" / "escape.py").symlink_to(outside / "secret.py")
    (repo / "app" / "up.py").symlink_to("../../outside/secret.py")
    (repo / "lib").symlink_to(outside)
    (repo / "etc").symlink_to("/etc")
    (repo / os.fsdecode(b"app/na\xefve.py")).write_bytes(b"def naive_name():\n    pass\n")
    with open(repo / "app" / "huge.py", "wb") as fh:  # sparse: no disk blocks written
        fh.truncate(BIG_BLOB_BYTES)
    git(repo, "add", "-A")
    # a gitlink (submodule entry) at vendor/evil and vendor/local
    fake_commit = "1" * 40
    for sub in ("vendor/evil", "vendor/local"):
        git(repo, "update-index", "--add", "--cacheinfo",
            f"160000,{fake_commit},{sub}")
    tree = git(repo, "write-tree")
    # Graft a tree entry named '..' holding evil.py, and one named '.git' holding config.
    evil = git(repo, "hash-object", "-w", "--stdin",
               input_bytes=f"def {SECRET_FUNCTION}():\n    pass\n".encode())
    inner = git(repo, "mktree", input_bytes=f"100644 blob {evil}\tevil.py\n".encode())
    listing = git(repo, "ls-tree", tree).splitlines()
    listing.append(f"040000 tree {inner}\t..")
    tree = git(repo, "mktree", input_bytes=("\n".join(listing) + "\n").encode())
    commit = git(repo, "commit-tree", tree, "-m", "hostile", input_bytes=b"")
    git(repo, "update-ref", "refs/heads/main", commit)
    git(repo, "reset", "-q", "--soft", "main")
    assert not any(m.exists() for m in markers), "the builder itself ran a hook"
    return Hostile(repo, markers, outside)


def safe_tree_of(hostile: Hostile) -> str:
    """A commit of the same repository without the ``..`` entry (which git's fsck refuses
    to transfer): what a fetch can bring, to test the engine on everything else."""
    repo = hostile.path
    listing = [line for line in git(repo, "ls-tree", "main").splitlines()
               if not line.endswith("\t..")]
    tree = git(repo, "mktree", input_bytes=("\n".join(listing) + "\n").encode())
    return git(repo, "commit-tree", tree, "-m", "hostile but fsck-clean", input_bytes=b"")


def many_files_repo(root: Path, n_files: int, *, source_every: int = 1) -> Path:
    """A repository of ``n_files`` files written by ``git fast-import`` in seconds: every
    ``source_every``-th is a small Python module, the rest are small data files."""
    repo = root / "many"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    chunks: list[bytes] = [b"blob\nmark :1\ndata 14\n{\"ok\": true}\n\n"]
    for i in range(n_files // source_every + 1):
        body = f"def f{i}(x):\n    return g{i}(x)\n\n\ndef g{i}(x):\n    return x\n".encode()
        chunks.append(b"blob\nmark :%d\ndata %d\n%s\n" % (i + 2, len(body), body))
    chunks.append(b"commit refs/heads/main\ncommitter M <m@example.invalid> 1700000000 +0000\n"
                  b"data 4\nmany\n")
    for i in range(n_files):
        d = f"pkg{i // 1000:03d}"
        if i % source_every == 0:
            chunks.append(f"M 100644 :{i // source_every + 2} {d}/m{i:06d}.py\n".encode())
        else:
            chunks.append(f"M 100644 :1 {d}/data{i:06d}.json\n".encode())
    chunks.append(b"\n")
    git(repo, "fast-import", "--quiet", input_bytes=b"".join(chunks))
    return repo
