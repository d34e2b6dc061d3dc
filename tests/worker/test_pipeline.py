from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis

from contract import installs
from contract.jobs import IssueJob
from contract.settings import AppSettings
from spider.comment.render import MARKER
from spider_devkit.fake_github import FakeGitHub
from tests.worker.helpers import StubEngine, commit, git, write
from worker import locks
from worker.errors import Busy, Delayed, GitHubUnavailable
from worker.github import GitHubClient, InstallationTokens, RetryPolicy, TokenCache
from worker.mirror import Mirrors
from worker.pipeline import Deps, run_job

from .conftest import INSTALLATION, REPO

BODY = "parse_header drops the value when the header line contains a second colon, e.g. Host: a:80"


@pytest.fixture
def engine() -> StubEngine:
    return StubEngine()


@pytest.fixture
def deps(settings: AppSettings, redis_client: redis.Redis, engine: StubEngine) -> Deps:
    policy = RetryPolicy(settings, sleep=lambda s: None)
    tokens = InstallationTokens(settings, TokenCache(redis_client, settings), policy)
    return Deps(settings=settings, redis=redis_client,
                github=lambda i: GitHubClient(settings, tokens, i, policy),
                mirrors=Mirrors(settings), engine=engine, policy=policy)


def job(number: int = 1, trigger: str = "issues.opened", delivery: str = "d1") -> IssueJob:
    return IssueJob(INSTALLATION, REPO, number, delivery, trigger)


def test_opened_issue_gets_one_comment_then_it_is_edited(deps: Deps, fake: FakeGitHub, repo_path: Path,
                                                        engine: StubEngine) -> None:
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    first = run_job(job(), deps)
    assert first.status == "created" and first.sha == git(repo_path, "rev-parse", "HEAD")
    (ours,) = fake.bot_comments(REPO, 1)
    assert ours.body.startswith(MARKER) and ours.body.count(f"/blob/{first.sha}/") == 3
    assert engine.calls[0]["issue"].title == "Header parsing loses values"

    write(repo_path, {"httpkit/extra.py": "def extra():\n    pass\n"})
    new_sha = commit(repo_path, "more")
    fake.add_comment(REPO, 1, "/spider k=2 edges=contains", comment_id=555, association="MEMBER")
    second = run_job(job(trigger="comment:555", delivery="d2"), deps)
    assert second.status == "updated" and second.comment_id == ours.id and second.sha == new_sha
    (ours,) = fake.bot_comments(REPO, 1)
    assert ours.body.count(f"/blob/{new_sha}/") == 2
    assert engine.calls[-1]["k"] == 2 and engine.calls[-1]["edges"] == ("contains",)


def test_repo_config_applies(deps: Deps, fake: FakeGitHub, repo_path: Path, engine: StubEngine) -> None:
    write(repo_path, {}, config="k: 2\ninclude: [httpkit/**]\ntriggers: [opened, edited]\n")
    commit(repo_path, "config")
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    assert run_job(job(trigger="issues.edited"), deps).status == "created"
    assert engine.calls[0]["k"] == 2 and engine.calls[0]["include"] == ["httpkit/**"]
    assert "Configuration: `.github/spider.yml`" in fake.bot_comments(REPO, 1)[0].body


def test_min_confidence_silences_a_weak_list_and_shown_collapses(
        deps: Deps, fake: FakeGitHub, repo_path: Path, engine: StubEngine) -> None:
    write(repo_path, {}, config="min_confidence: 0.2\nshown: 1\n")
    commit(repo_path, "config")
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    engine.confidence = 0.05
    out = run_job(job(), deps)
    assert out.status == "skipped" and "below min_confidence 0.20" in out.reason
    assert fake.bot_comments(REPO, 1) == []
    engine.confidence = 0.5
    assert run_job(job(delivery="d2"), deps).status == "created"
    body = fake.bot_comments(REPO, 1)[0].body
    assert "<summary>2 more candidates</summary>" in body
    assert "best match is weak" not in body


def test_invalid_config_uses_defaults_and_says_why(deps: Deps, fake: FakeGitHub, repo_path: Path,
                                                   engine: StubEngine) -> None:
    write(repo_path, {}, config="k: 1000\n")
    commit(repo_path, "bad config")
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    run_job(job(), deps)
    body = fake.bot_comments(REPO, 1)[0].body
    assert "> **Note:** `.github/spider.yml` was ignored because `k`: Input should be less than" in body
    assert engine.calls[0]["k"] == 3  # the installation's default, not the file's


@pytest.mark.parametrize(
    ("issue", "config", "trigger", "reason"),
    [
        ({"labels": ["spider:skip"]}, None, "issues.opened", "label"),
        ({"labels": ["later"]}, "skip_label: later\n", "issues.opened", "label"),
        ({"body": "short"}, "min_issue_length: 100\n", "issues.opened", "shorter than 100"),
        ({}, None, "issues.edited", "does not trigger"),
        ({}, "enabled: false\n", "issues.opened", "disabled"),
        ({"locked": True}, None, "issues.opened", "locked"),
        ({"state": "closed"}, None, "issues.opened", "closed"),
        ({"user": "dependabot[bot]", "user_type": "Bot"}, None, "issues.opened", "bot"),
        ({"pull_request": True}, None, "issues.opened", "pull request"),
    ],
)
def test_skips(deps: Deps, fake: FakeGitHub, repo_path: Path, issue: dict[str, object],
               config: str | None, trigger: str, reason: str) -> None:
    if config is not None:
        write(repo_path, {}, config=config)
        commit(repo_path, "config")
    fake.add_issue(REPO, 1, "Header parsing loses values", **{"body": BODY, **issue})  # type: ignore[arg-type]
    outcome = run_job(job(trigger=trigger), deps)
    assert outcome.status == "skipped" and reason in outcome.reason
    assert fake.bot_comments(REPO, 1) == []


def test_command_from_a_stranger_or_no_longer_a_command(deps: Deps, fake: FakeGitHub) -> None:
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    fake.add_comment(REPO, 1, "/spider", comment_id=600, user="drive-by", association="NONE")
    assert "members" in run_job(job(trigger="comment:600"), deps).reason
    fake.add_comment(REPO, 1, "never mind", comment_id=601, association="OWNER")
    assert "no longer" in run_job(job(trigger="comment:601"), deps).reason
    fake.add_comment(REPO, 1, "/spider k=99 colour=red", comment_id=602, user="octocat")  # the author
    assert run_job(job(trigger="comment:602"), deps).status == "created"
    body = fake.bot_comments(REPO, 1)[0].body
    assert "ignored `k=99`" in body and "ignored `colour=red`" in body


def test_lost_answer_to_a_create_does_not_duplicate(deps: Deps, fake: FakeGitHub) -> None:
    # GitHub creates the comment but the answer is a 502: the retry must find it, not post again.
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    fake.inject("POST", r"/issues/1/comments$", 502, apply=True)
    assert run_job(job(), deps).status == "unchanged"
    assert len(fake.bot_comments(REPO, 1)) == 1


def test_someone_elses_marker_is_not_ours(deps: Deps, fake: FakeGitHub) -> None:
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    fake.add_comment(REPO, 1, MARKER + "\nquoted by a human")
    assert run_job(job(), deps).status == "created"
    assert len(fake.bot_comments(REPO, 1)) == 1


def test_github_down_is_transient(deps: Deps, fake: FakeGitHub) -> None:
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    fake.inject("GET", r"/issues/1$", 503, times=100)
    with pytest.raises(GitHubUnavailable):
        run_job(job(), deps)
    assert fake.bot_comments(REPO, 1) == []


def test_issue_lock_makes_a_second_job_wait_its_turn(deps: Deps, fake: FakeGitHub,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import worker.pipeline

    monkeypatch.setattr(worker.pipeline, "ISSUE_LOCK_WAIT_S", 0.1)
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    with locks.held(deps.redis, locks.issue_lock_name(REPO, 1), ttl_s=30, wait_s=0), \
            pytest.raises(Busy):
        run_job(job(), deps)
    assert run_job(job(), deps).status == "created"


# --- a maintainer's first hour: delay_minutes and no backfill ------------------------------


def _with_config(repo_path: Path, config: str) -> None:
    write(repo_path, {}, config=config)
    commit(repo_path, "config")


def test_a_delayed_job_waits_without_a_slot_then_runs_on_an_untouched_issue(
        deps: Deps, fake: FakeGitHub, repo_path: Path) -> None:
    _with_config(repo_path, "delay_minutes: 30\n")
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY, labels=["needs-triage"])
    with pytest.raises(Delayed) as first:
        run_job(job(), deps)
    waited = first.value.kwargs["waited"]
    assert waited["labels"] == ["needs-triage"] and waited["due"] > time.time() + 1700
    assert first.value.countdown == min(1800, deps.settings.visibility_timeout_s / 2)
    assert fake.bot_comments(REPO, 1) == []
    assert locks.slot_holders(deps.redis, locks.installation_slots_name(INSTALLATION)) == 0
    assert locks.slot_holders(deps.redis, locks.repo_slots_name(REPO)) == 0

    calls = len(fake.requests())
    with pytest.raises(Delayed) as again:  # a leg of the wait: not due yet, nothing read
        run_job(job(), deps, waited=waited)
    assert again.value.kwargs == {"waited": waited} and len(fake.requests()) == calls

    fake.add_comment(REPO, 1, "+1, same here", user="passer-by", association="NONE")
    outcome = run_job(job(), deps, waited={**waited, "due": time.time() - 1})
    assert outcome.status == "created"  # a template's label and a "+1" are no triage


def test_a_delayed_job_whose_issue_a_maintainer_answered_posts_nothing(
        deps: Deps, fake: FakeGitHub, repo_path: Path) -> None:
    _with_config(repo_path, "delay_minutes: 10\n")
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    with pytest.raises(Delayed) as first:
        run_job(job(), deps)
    fake.add_comment(REPO, 1, "Duplicate of #3.", user="maria", association="MEMBER")
    waited = {**first.value.kwargs["waited"], "due": time.time() - 1}  # type: ignore[dict-item]
    outcome = run_job(job(), deps, waited=waited)
    assert (outcome.status, outcome.reason) == ("skipped", "answered by @maria")
    assert fake.bot_comments(REPO, 1) == []


def test_a_delayed_job_whose_issue_got_a_label_or_an_assignee_posts_nothing(
        deps: Deps, fake: FakeGitHub, repo_path: Path) -> None:
    _with_config(repo_path, "delay_minutes: 10\n")
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    fake.add_issue(REPO, 2, "Header parsing loses values", BODY)
    due = {"labels": [], "assignees": [], "due": time.time() - 1}
    fake.issues[(REPO, 1)].labels.append("bug")
    fake.issues[(REPO, 2)].assignees.append("x")
    assert run_job(job(1), deps, waited=due).reason == "a maintainer labelled it `bug`"
    assert run_job(job(2, delivery="d2"), deps, waited=due).reason == "assigned to @x"
    assert fake.bot_comments(REPO, 1) == fake.bot_comments(REPO, 2) == []


def test_a_command_is_never_delayed(deps: Deps, fake: FakeGitHub, repo_path: Path) -> None:
    _with_config(repo_path, "delay_minutes: 30\n")
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY)
    fake.add_comment(REPO, 1, "/spider", comment_id=700, association="MEMBER")
    assert run_job(job(trigger="comment:700"), deps).status == "created"


def test_an_issue_older_than_the_installation_is_not_backfilled_unless_asked(
        deps: Deps, fake: FakeGitHub, repo_path: Path) -> None:
    _with_config(repo_path, "triggers: [opened, edited]\n")
    fake.installation_created_at = "2026-06-01T00:00:00Z"
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY, created_at="2025-01-01T00:00:00Z")
    outcome = run_job(job(trigger="issues.edited"), deps)
    assert outcome.status == "skipped"
    assert "opened before the app was installed here (2026-06-01)" in outcome.reason
    assert fake.bot_comments(REPO, 1) == []
    assert installs.installation_created_at(deps.redis, INSTALLATION) is not None  # cached

    fake.add_comment(REPO, 1, "/spider", comment_id=701, association="MEMBER")
    assert run_job(job(trigger="comment:701", delivery="d2"), deps).status == "created"


def test_a_repository_added_later_counts_from_its_addition(
        deps: Deps, fake: FakeGitHub, repo_path: Path) -> None:
    _with_config(repo_path, "triggers: [opened, reopened]\n")
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY, created_at="2025-01-01T00:00:00Z")
    assert run_job(job(trigger="issues.reopened"), deps).status == "created"  # installed 2020
    fake.add_issue(REPO, 2, "Header parsing loses values", BODY, created_at="2025-01-01T00:00:00Z")
    installs.record_repos_added(deps.redis, [REPO], datetime(2025, 6, 1, tzinfo=UTC))
    outcome = run_job(job(2, trigger="issues.reopened", delivery="d2"), deps)
    assert outcome.status == "skipped" and "(2025-06-01)" in outcome.reason


def test_a_github_without_the_installation_route_means_no_backfill_rule(
        deps: Deps, fake: FakeGitHub, repo_path: Path) -> None:
    _with_config(repo_path, "triggers: [opened, edited]\n")
    fake.installation_created_at = "2026-06-01T00:00:00Z"
    fake.add_issue(REPO, 1, "Header parsing loses values", BODY, created_at="2025-01-01T00:00:00Z")
    fake.inject("GET", r"^/app/installations/\d+$", 404)
    assert run_job(job(trigger="issues.edited"), deps).status == "created"
    fake.add_issue(REPO, 2, "Header parsing loses values", BODY, created_at="2025-01-01T00:00:00Z")
    fake.inject("GET", r"^/app/installations/\d+$", 503, times=100)
    with pytest.raises(GitHubUnavailable):  # transient: the job is retried, not let through
        run_job(job(2, trigger="issues.edited", delivery="d2"), deps)
