"""The fix loop in the worker: a real fake GitHub, real git, the real graph, SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from contract.jobs import FixJob, IssueJob
from contract.settings import AppSettings
from spider_devkit.fake_github import FakeGitHub, files_from_diff
from tests.worker.conftest import INSTALLATION, REPO
from tests.worker.helpers import StubEngine, commit, git, write
from worker.github import GitHubClient, InstallationTokens, RetryPolicy, TokenCache
from worker.mirror import Mirrors
from worker.pipeline import Deps, run_job
from worker.scoring import compare, fix_line, parse_comment, patch_of, score_fix
from worker.store import Store

BODY = "Header values lose their case when parsed, and the session drops duplicate headers."


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(f"sqlite:///{tmp_path / 'db' / 'spider.db'}")
    yield s
    s.close()


@pytest.fixture
def deps(settings: AppSettings, redis_client: redis.Redis, store: Store) -> Deps:
    policy = RetryPolicy(settings, sleep=lambda s: None)
    tokens = InstallationTokens(settings, TokenCache(redis_client, settings), policy)
    return Deps(settings=settings, redis=redis_client,
                github=lambda i: GitHubClient(settings, tokens, i, policy),
                mirrors=Mirrors(settings), engine=StubEngine(), policy=policy, store=store)


def answered(deps: Deps, fake: FakeGitHub, number: int = 5) -> str:
    fake.add_issue(REPO, number, "Headers lose values", BODY)
    out = run_job(IssueJob(INSTALLATION, REPO, number, f"d{number}", "issues.opened"), deps)
    assert out.status == "created"
    return str(out.sha)


def pull_editing(repo: Path, fake: FakeGitHub, number: int, edits: dict[str, str], *,
                 title: str = "Fix it", body: str = "Fixes #5", **kw: object) -> str:
    """Commit ``edits`` on a branch off main, register the pull request, return base sha."""
    base = git(repo, "rev-parse", "main")
    git(repo, "checkout", "-q", "-b", f"fix-{number}")
    write(repo, edits)
    head = commit(repo, title)
    diff = git(repo, "diff", base, head) + "\n"
    git(repo, "checkout", "-q", "main")
    fake.add_pull(REPO, number, title, body, base_sha=base, head_sha=head,
                  files=files_from_diff(diff), **kw)
    return base


def edit_read_headers(repo: Path) -> dict[str, str]:
    text = (repo / "httpkit/session.py").read_text()
    return {"httpkit/session.py": text.replace(
        "return dict(parse_header(line) for line in raw.splitlines() if line)",
        "return [parse_header(line) for line in raw.splitlines() if line]")}


def test_merged_fix_of_the_second_listed_function_is_rank_2(deps: Deps, fake: FakeGitHub,
                                                           repo_path: Path, store: Store) -> None:
    sha = answered(deps, fake)
    rec = store.comment(REPO, 5)
    assert rec is not None and rec.commit_sha == sha and rec.k == 3
    assert rec.listed_ids[1] == "httpkit/session.py:Session.read_headers"
    base = pull_editing(repo_path, fake, 12, edit_read_headers(repo_path))

    out = score_fix(FixJob(INSTALLATION, REPO, "p12", pull_number=12), deps, store)
    assert out.status == "scored", out
    fix = store.fix(REPO, 5, 12)
    assert fix is not None and fix.base_commit == base
    assert fix.changed_functions == ["httpkit/session.py:Session.read_headers"]
    assert (fix.first_rank, fix.recall_at_k, fix.outcome) == (2, 1.0, "hit")
    body = fake.bot_comments(REPO, 5)[-1].body
    assert "<!-- spider-bot:fix -->\nThe fix in #12 changed `Session.read_headers` (listed 2nd)." in body
    assert body.index("spider-bot:fix") < body.index("<details>")

    # the same job again (a redelivery, a retry): one record, the comment unchanged
    edits = len(fake.requests("PATCH", "/issues/comments/"))
    score_fix(FixJob(INSTALLATION, REPO, "p12-again", pull_number=12), deps, store)
    assert len(store.fixes(REPO)) == 1
    assert len(fake.requests("PATCH", "/issues/comments/")) == edits


def test_unanswered_issue_unmerged_and_docs_only(deps: Deps, fake: FakeGitHub, repo_path: Path,
                                                 store: Store) -> None:
    answered(deps, fake)
    fake.add_issue(REPO, 6, "Never answered", BODY)
    pull_editing(repo_path, fake, 20, edit_read_headers(repo_path), body="Closes #6")
    out = score_fix(FixJob(INSTALLATION, REPO, "p20", pull_number=20), deps, store)
    assert out.status == "skipped" and "answered none" in out.reason

    pull_editing(repo_path, fake, 21, {"httpkit/cookies.py": "x = 1\n"}, merged=False)
    out = score_fix(FixJob(INSTALLATION, REPO, "p21", pull_number=21), deps, store)
    assert out.status == "skipped" and "without being merged" in out.reason

    before = fake.bot_comments(REPO, 5)[-1].body
    pull_editing(repo_path, fake, 22, {"README.md": "Docs only.\n"}, title="Docs",
                 body="resolves https://github.com/acme/httpkit/issues/5")
    out = score_fix(FixJob(INSTALLATION, REPO, "p22", pull_number=22), deps, store)
    assert out.status == "scored"
    fix = store.fix(REPO, 5, 22)
    assert fix is not None and fix.outcome == "no_function_changed"
    assert fix.first_rank is None and fix.recall_at_k is None
    assert fake.bot_comments(REPO, 5)[-1].body == before  # nothing posted
    assert [f.pull_number for f in store.fixes(REPO)] == [22]


def test_commit_message_and_graphql_references(deps: Deps, fake: FakeGitHub, repo_path: Path,
                                               store: Store) -> None:
    answered(deps, fake)
    answered(deps, fake, 7)
    text = (repo_path / "httpkit/headers.py").read_text()
    pull_editing(repo_path, fake, 30, {"httpkit/headers.py": text.replace(
        "return f\"{name.title()}: {value}\"", "return f\"{name}: {value}\"")},
        body="No keyword here", commits=["format headers as given\n\nfixes #5"],
        closing_issues=[7])
    out = score_fix(FixJob(INSTALLATION, REPO, "p30", pull_number=30), deps, store)
    assert sorted(r["issue"] for r in out.fixes) == [5, 7]
    fix = store.fix(REPO, 5, 30)
    assert fix is not None and fix.outcome == "miss" and fix.first_rank is None
    assert fix.recall_at_k == 0.0
    assert "changed `format_header` (not listed)" in fake.bot_comments(REPO, 5)[-1].body


def test_closed_issue_finds_its_pull_request_through_graphql(deps: Deps, fake: FakeGitHub,
                                                             repo_path: Path, store: Store) -> None:
    answered(deps, fake)
    pull_editing(repo_path, fake, 40, edit_read_headers(repo_path), body="", closing_issues=[5])
    out = score_fix(FixJob(INSTALLATION, REPO, "i5", issue_number=5), deps, store)
    assert [r["pull"] for r in out.fixes] == [40]
    assert store.fix(REPO, 5, 40) is not None


def test_missing_record_is_read_back_from_the_comment(deps: Deps, fake: FakeGitHub,
                                                      repo_path: Path, store: Store) -> None:
    answered(deps, fake)
    with store.engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM posted_comments")
    pull_editing(repo_path, fake, 50, edit_read_headers(repo_path))
    score_fix(FixJob(INSTALLATION, REPO, "p50", pull_number=50), deps, store)
    fix = store.fix(REPO, 5, 50)
    assert fix is not None and fix.first_rank == 2
    assert fix.listed_ids[:2] == ["httpkit/headers.py:parse_header",
                                  "httpkit/session.py:Session.read_headers"]


def test_a_renamed_listed_function_is_matched_by_its_code(deps: Deps, fake: FakeGitHub,
                                                          repo_path: Path, store: Store) -> None:
    answered(deps, fake)
    # after the comment, read_headers is renamed; the fix then edits the renamed function
    text = (repo_path / "httpkit/session.py").read_text()
    write(repo_path, {"httpkit/session.py": text.replace("def read_headers", "def headers_of")
                      .replace("self.read_headers(", "self.headers_of(")})
    commit(repo_path, "rename")
    edits = edit_read_headers(repo_path)
    edits["httpkit/session.py"] = edits["httpkit/session.py"]
    pull_editing(repo_path, fake, 60, edits)
    score_fix(FixJob(INSTALLATION, REPO, "p60", pull_number=60), deps, store)
    fix = store.fix(REPO, 5, 60)
    assert fix is not None
    assert fix.changed_functions == ["httpkit/session.py:Session.headers_of"]
    assert fix.moved == {"httpkit/session.py:Session.read_headers": "httpkit/session.py:Session.headers_of"}
    assert fix.first_rank == 2


def test_pure_pieces() -> None:
    score = compare(["a:f", "a:g", "b:h"], 3, ["a:g", "c:z"])
    assert (score.first_rank, score.recall, score.outcome) == (2, 0.5, "hit")
    assert fix_line(123, score) == "The fix in #123 changed `g` (listed 2nd) and `z` (not listed)."
    assert compare(["a:f"], 1, []).outcome == "no_function_changed"
    many = compare(["a:f"], 1, [f"a:f{i}" for i in range(8)])
    assert fix_line(1, many).endswith("and 3 more.")
    hostile = compare(["a:f"], 1, ["a:x`@team #1"])
    assert "`` x`@team #1 ``" in fix_line(9, hostile) or "``x`@team #1``" in fix_line(9, hostile)

    class F:
        def __init__(self, **kw: object) -> None:
            self.__dict__.update(kw)

    diff = patch_of([F(filename="b.py", previous_filename="a.py", status="renamed", patch="@@ -1 +1 @@\n-x\n+y"),
                     F(filename="new.py", status="added", patch="@@ -0,0 +1 @@\n+z"),
                     F(filename="logo.png", status="modified", patch=None)])
    assert "--- a/a.py\n+++ b/b.py\n" in diff and "--- /dev/null\n+++ b/new.py\n" in diff
    assert "logo.png" not in diff
    sha = "a" * 40
    body = ("<!-- spider-bot:localization -->\nThese...\n\n"
            f"1. [`Session.send`](https://github.com/o/r/blob/{sha}/pkg/my%20s.py#L5-7) in ...\n"
            f"2. [``a`b``](https://github.com/o/r/blob/{sha}/x.py#L1) in ...\n")
    assert parse_comment(body) == (sha, ["pkg/my s.py:Session.send", "x.py:a`b"])
    assert parse_comment("hello") is None
