from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from contract.settings import AppSettings
from spider.source import GitSource
from tests.worker.helpers import commit, git, make_repo, write
from worker.errors import FetchFailed, RepositoryTooLarge, UnsafeRepository
from worker.mirror import Mirrors

from .conftest import REPO


def test_fetch_reads_the_branch_head_without_a_working_tree(settings: AppSettings, repo_path: Path) -> None:
    mirrors = Mirrors(settings, depth=1)  # an engine that reads no history
    head = git(repo_path, "rev-parse", "HEAD")
    checkout = mirrors.fetch(REPO, "main", token=None)
    assert checkout.sha == head and checkout.git_dir == settings.mirror_dir / "acme" / "httpkit.git"
    assert (checkout.git_dir / "HEAD").is_file() and not (checkout.git_dir / "httpkit").exists()
    assert not any((checkout.git_dir / "hooks").glob("*"))
    files = {f.path for f in GitSource(checkout.git_dir, checkout.sha).files()}
    assert "httpkit/session.py" in files

    write(repo_path, {"httpkit/new.py": "def added():\n    return 1\n"})
    new = commit(repo_path, "second")
    assert mirrors.fetch(REPO, "main", token=None).sha == new
    shallow = (checkout.git_dir / "shallow").read_text()
    assert new in shallow  # history is not fetched: one tree is all such an engine reads


def test_force_pushed_branch_is_followed(settings: AppSettings, repo_path: Path) -> None:
    mirrors = Mirrors(settings)
    mirrors.fetch(REPO, "main", token=None)
    git(repo_path, "commit", "-q", "--amend", "-m", "rewritten")
    assert mirrors.fetch(REPO, "main", token=None).sha == git(repo_path, "rev-parse", "HEAD")


def test_stale_lock_from_a_killed_fetch_is_cleared(settings: AppSettings, repo_path: Path) -> None:
    mirrors = Mirrors(settings, depth=1)  # shallow: the fetch rewrites `shallow` too
    checkout = mirrors.fetch(REPO, "main", token=None)
    locks = [checkout.git_dir / "shallow.lock", checkout.git_dir / "refs" / "heads" / "main.lock"]
    for lock in locks:  # what a fetch killed mid-way leaves behind
        lock.write_text("")
    write(repo_path, {"httpkit/later.py": "def later():\n    return 2\n"})
    new = commit(repo_path, "after the killed fetch")  # the next fetch must rewrite both
    assert mirrors.fetch(REPO, "main", token=None).sha == new
    assert not any(lock.exists() for lock in locks)
    assert new in (checkout.git_dir / "shallow").read_text()
    assert dict(GitSource(checkout.git_dir, new).read_many(["httpkit/later.py"])) == {
        "httpkit/later.py": b"def later():\n    return 2\n"
    }


def test_size_cap(settings: AppSettings) -> None:
    small = settings.model_copy(update={"max_repo_kb": 1})
    (Path(settings.git_url_template.format(owner="acme", name="big")) ).mkdir(parents=True)
    big = Path(settings.git_url_template.format(owner="acme", name="big"))
    make_repo(big, {"blob.py": "x = '" + "ab" * 40_000 + "'\n" + "".join(f"# {i}\n" for i in range(9000))})
    with pytest.raises(RepositoryTooLarge):
        Mirrors(small).fetch("acme/big", "main", token=None)
    assert not Mirrors(small).path_for("acme/big").exists()


@pytest.mark.parametrize("template", ["git@github.com:{owner}/{name}.git", "http://github.com/{owner}/{name}",
                                      "ext::sh -c touch% /tmp/pwned", "relative/{owner}/{name}"])
def test_only_https_or_local_paths(settings: AppSettings, template: str) -> None:
    with pytest.raises(UnsafeRepository):
        Mirrors(settings.model_copy(update={"git_url_template": template})).fetch(REPO, "main", None)


@pytest.mark.parametrize("repo", ["../x", "a/../../b", "a/b/c", "a", "-a/b"])
def test_repository_names_are_checked(settings: AppSettings, repo: str) -> None:
    with pytest.raises(UnsafeRepository):
        Mirrors(settings).path_for(repo)


@pytest.mark.parametrize("branch", ["--upload-pack=touch", "a..b", "/abs", "x.lock/", "a b"])
def test_branch_names_are_checked(settings: AppSettings, branch: str) -> None:
    with pytest.raises(UnsafeRepository):
        Mirrors(settings).fetch(REPO, branch, None)


def test_missing_branch_is_a_fetch_failure(settings: AppSettings) -> None:
    with pytest.raises(FetchFailed):
        Mirrors(settings).fetch(REPO, "nope", token=None)


def test_token_goes_to_git_through_the_environment_only(
    settings: AppSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "ghs_0123456789abcdefSECRET"
    seen: list[tuple[list[str], dict[str, str]]] = []
    real_run = subprocess.run

    def spy(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        seen.append((list(argv), dict(kw.get("env") or {})))  # type: ignore[call-overload]
        if "fetch" in argv:
            return subprocess.CompletedProcess(argv, 0, "", "")
        return real_run(argv, **kw)  # type: ignore[call-overload, no-any-return]

    monkeypatch.setattr(subprocess, "run", spy)
    https = settings.model_copy(update={"git_url_template": "https://github.com/{owner}/{name}.git"})
    with pytest.raises(FetchFailed):  # rev-parse fails: the spy fetched nothing
        Mirrors(https).fetch(REPO, "main", token=token)
    fetch_argv, fetch_env = next((a, e) for a, e in seen if "fetch" in a)
    assert not any(token in arg for arg in fetch_argv)
    assert "https://github.com/acme/httpkit.git" in fetch_argv
    assert fetch_env["GIT_CONFIG_KEY_0"] == "http.extraHeader"
    assert fetch_env["GIT_CONFIG_VALUE_0"].startswith("Authorization: Basic ")
    assert "protocol.file.allow=always" not in fetch_argv
    for argv, env in seen:
        if "fetch" not in argv:
            assert "GIT_CONFIG_VALUE_0" not in env  # only that one command sees it
    mirror = Mirrors(https).path_for(REPO)
    for f in mirror.rglob("*"):
        if f.is_file():
            assert token.encode() not in f.read_bytes()


def _history(path: Path, commits: int) -> None:
    for i in range(commits):
        write(path, {"app.py": f"def handler():\n    return {i}\n"})
        commit(path, f"Change the handler's answer to {i}")


def test_fetch_brings_the_history_the_engine_reads(settings: AppSettings, repo_path: Path) -> None:
    _history(repo_path, 4)
    checkout = Mirrors(settings, depth=3).fetch(REPO, "main", token=None)
    listed = git(checkout.git_dir, "rev-list", checkout.sha).split()
    assert len(listed) == 3  # the head and two commits before it, for history at inference
    shallow = Mirrors(settings, depth=1).fetch(REPO, "main", token=None)
    assert shallow.sha == checkout.sha


def test_a_mirror_with_the_history_fetches_only_what_is_new(
    settings: AppSettings, repo_path: Path
) -> None:
    _history(repo_path, 4)
    mirrors = Mirrors(settings, depth=3)
    first = mirrors.fetch(REPO, "main", token=None)
    assert len(git(first.git_dir, "rev-list", first.sha).split()) == 3
    write(repo_path, {"app.py": "def handler():\n    return 'new'\n"})
    new = commit(repo_path, "One more change")
    caught_up = mirrors.fetch(REPO, "main", token=None)
    assert caught_up.sha == new
    # no --depth this time: the window below the new head grew by the new commit
    assert len(git(first.git_dir, "rev-list", new).split()) == 4
    head_only = Mirrors(settings, depth=1).fetch(REPO, "main", token=None)
    assert git(head_only.git_dir, "rev-list", new).split() == [new]
    write(repo_path, {"app.py": "def handler():\n    return 'newer'\n"})
    newer = commit(repo_path, "And another")
    again = mirrors.fetch(REPO, "main", token=None)  # the head alone cut it: fetched deep
    assert len(git(again.git_dir, "rev-list", newer).split()) == 3


def test_a_commit_fetched_alone_does_not_cut_the_branch_history(
    settings: AppSettings, repo_path: Path
) -> None:
    _history(repo_path, 4)
    mirrors = Mirrors(settings, depth=3)
    mirrors.fetch(REPO, "main", token=None)
    write(repo_path, {"app.py": "def handler():\n    return 'a'\n"})
    a = commit(repo_path, "A")
    write(repo_path, {"app.py": "def handler():\n    return 'b'\n"})
    b = commit(repo_path, "B")
    mirrors.fetch_commit(REPO, a, token=None)  # e.g. a pull request's base, newer than the head
    head = mirrors.fetch(REPO, "main", token=None)
    assert head.sha == b
    assert len(git(head.git_dir, "rev-list", b).split()) == 3  # the window, not [B, A]


def test_the_shipped_ranker_decides_the_depth(settings: AppSettings, repo_path: Path) -> None:
    from spider import history_depth

    _history(repo_path, 2)
    checkout = Mirrors(settings).fetch(REPO, "main", token=None)
    listed = git(checkout.git_dir, "rev-list", checkout.sha).split()
    assert len(listed) == min(history_depth(settings.engine), 3)
    off = settings.engine.model_copy(update={"history_commits": 0})
    assert history_depth(off) == 1
    fused = settings.engine.model_copy(update={"fusion_history": 1.0, "history_commits": 50})
    assert history_depth(fused) == 51


def test_a_repository_too_large_with_history_is_mirrored_without_it(settings: AppSettings) -> None:
    import os

    origin = Path(settings.git_url_template.format(owner="acme", name="grown"))
    make_repo(origin, {"data.py": "BLOB = '" + os.urandom(150_000).hex() + "'\n"})
    write(origin, {"data.py": "BLOB = ''\n"})
    commit(origin, "Drop the blob")
    small = settings.model_copy(update={"max_repo_kb": 120})
    checkout = Mirrors(small, depth=10).fetch("acme/grown", "main", token=None)
    assert git(checkout.git_dir, "rev-list", checkout.sha).split() == [checkout.sha]
    again = Mirrors(small, depth=10).fetch("acme/grown", "main", token=None)  # remembered
    assert again.sha == checkout.sha
    with pytest.raises(RepositoryTooLarge):  # too large even alone: refused as before
        Mirrors(settings.model_copy(update={"max_repo_kb": 1}), depth=10).fetch(
            "acme/grown", "main", token=None
        )


def test_an_answer_never_waits_for_the_history_window(
    settings: AppSettings, repo_path: Path
) -> None:
    _history(repo_path, 4)
    mirrors = Mirrors(settings, depth=3)
    first = mirrors.fetch(REPO, "main", token=None, history=False)
    assert first.history_pending  # the head alone: the index job brings the window
    assert git(first.git_dir, "rev-list", first.sha).split() == [first.sha]
    indexed = mirrors.fetch(REPO, "main", token=None)  # what the index job fetches
    assert not indexed.history_pending
    assert len(git(indexed.git_dir, "rev-list", indexed.sha).split()) == 3
    write(repo_path, {"app.py": "def handler():\n    return 'new'\n"})
    new = commit(repo_path, "One more change")
    later = mirrors.fetch(REPO, "main", token=None, history=False)  # the window is held
    assert later.sha == new and not later.history_pending
    assert len(git(later.git_dir, "rev-list", new).split()) == 4


def test_a_window_git_refuses_leaves_the_head_alone(settings: AppSettings, repo_path: Path) -> None:
    _history(repo_path, 1)
    tree = git(repo_path, "rev-parse", "HEAD^{tree}")
    parent = git(repo_path, "rev-parse", "HEAD")
    raw = (f"tree {tree}\nparent {parent}\nauthor A <a@b.c> 1234567890 +99999\n"
           f"committer A <a@b.c> 1234567890 +99999\n\nA bad time zone\n")
    bad = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin", "--literally"],
                         cwd=repo_path, input=raw, capture_output=True, text=True,
                         check=True).stdout.strip()
    git(repo_path, "update-ref", "refs/heads/main", bad)
    git(repo_path, "reset", "-q", "--hard", bad)
    for i in (7, 8):  # the malformed commit lies inside the window below the head
        write(repo_path, {"app.py": f"def handler():\n    return {i}\n"})
        commit(repo_path, f"Answer {i}")
    head = git(repo_path, "rev-parse", "HEAD")
    mirrors = Mirrors(settings, depth=4)
    checkout = mirrors.fetch(REPO, "main", token=None)  # what the index job fetches
    assert checkout.sha == head and not checkout.history_pending
    assert git(checkout.git_dir, "rev-list", head).split() == [head]  # ranked without history
    assert mirrors.fetch(REPO, "main", token=None, history=False).sha == head
