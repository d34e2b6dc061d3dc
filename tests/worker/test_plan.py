"""``worker.plan.decide``: facts in, a decision out (no fake GitHub, no Redis)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from pydantic import SecretStr

from contract.settings import AppSettings
from spider.settings import EngineSettings
from worker.plan import (
    CHEAPER_SETTINGS,
    MAX_TITLE_CHARS,
    Account,
    CommentFacts,
    Facts,
    IssueFacts,
    RepoFacts,
    Run,
    Seen,
    Skip,
    TooLarge,
    Wait,
    below_confidence,
    decide,
    maintainer_triage,
)
from worker.repo_config import parse_config

BODY = "parse_header drops the value when the header line contains a second colon, e.g. Host: a:80"
AUTHOR = Account("octocat")


def app(**engine: object) -> AppSettings:
    return AppSettings(_env_file=None, engine=EngineSettings(**{"selector": "none", "k": 3, **engine}))


def facts(*, trigger: str = "issues.opened", config: str | None = None,
          comment: CommentFacts | None = None, **issue: object) -> Facts:
    return Facts(
        trigger=trigger,
        repo=RepoFacts(size_kb=100, default_branch="main", html_url="https://github.com/a/b"),
        issue=replace(IssueFacts("Header parsing loses values", BODY, author=AUTHOR), **issue),
        config=parse_config(config),
        comment=comment,
    )


def test_an_opened_issue_runs_with_the_installation_settings() -> None:
    plan = decide(facts(), app())
    assert isinstance(plan, Run)
    assert (plan.settings.k, plan.settings.selector, plan.notes) == (3, "none", ())
    assert plan.issue.title == "Header parsing loses values" and plan.issue.body == BODY
    assert plan.config_found is False and plan.config.skip_label == "spider:skip"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"labels": frozenset({"spider:skip"})}, "label"),
        ({"locked": True}, "locked"),
        ({"state": "closed"}, "closed"),
        ({"author": Account("dependabot[bot]", "Bot")}, "opened by a bot"),
        ({"is_pull_request": True}, "pull request"),
        ({"body": "short", "title": "x"}, "shorter than 30"),
    ],
)
def test_the_issue_as_it_is_now_can_rule_the_job_out(change: dict[str, object],
                                                      reason: str) -> None:
    plan = decide(facts(**change), app())
    assert isinstance(plan, Skip) and reason in plan.reason


@pytest.mark.parametrize(
    ("config", "trigger", "reason"),
    [
        ("enabled: false\n", "issues.opened", "disabled"),
        (None, "issues.edited", "issues.edited does not trigger"),
        ("skip_label: later\n", "issues.opened", None),
        ("min_issue_length: 1000\n", "issues.opened", "shorter than 1000"),
    ],
)
def test_the_repository_file_decides_triggers_and_lengths(config: str | None, trigger: str,
                                                          reason: str | None) -> None:
    plan = decide(facts(config=config, trigger=trigger, labels=frozenset({"spider:skip"})), app())
    if reason is None:  # its own skip label replaces the default one
        assert isinstance(plan, Run)
    else:
        assert isinstance(plan, Skip) and reason in plan.reason


def test_an_archived_repository_is_skipped_and_a_large_one_said_so() -> None:
    archived = replace(facts(), repo=RepoFacts(archived=True))
    assert decide(archived, app()) == Skip("the repository is archived")
    large = replace(facts(config="skip_label: later\n"), repo=RepoFacts(size_kb=3_000_000))
    assert decide(large, app()) == TooLarge(3_000_000, 2_000_000, "later")


def test_the_file_overrides_settings_and_an_invalid_file_says_why() -> None:
    plan = decide(facts(config="k: 2\nedges: contains\ninclude: src/**\n"), app())
    assert isinstance(plan, Run) and plan.config_found
    assert (plan.settings.k, plan.settings.edges, plan.settings.include) == (2, ("contains",),
                                                                             ["src/**"])
    bad = decide(facts(config="k: 500\n"), app())
    assert isinstance(bad, Run) and bad.settings.k == 3
    assert bad.notes[0].startswith("`.github/spider.yml` was ignored because `k`")


def test_anthropic_without_a_key_falls_back_with_a_note() -> None:
    plan = decide(facts(config="selector: anthropic\n"), app(selector="offline"))
    assert isinstance(plan, Run) and plan.settings.selector == "offline"
    assert "needs a key" in plan.notes[0] and "`offline` selector" in plan.notes[0]
    keyed = decide(facts(config="selector: anthropic\n"),
                   app(anthropic_api_key=SecretStr("sk-test")))
    assert isinstance(keyed, Run) and keyed.settings.selector == "anthropic" and not keyed.notes


def test_a_key_alone_runs_the_claude_selector_over_contains_and_invokes() -> None:
    keyed = app(selector="auto", anthropic_api_key=SecretStr("sk-test"))
    plan = decide(facts(), keyed)
    assert isinstance(plan, Run) and plan.settings.selector_name == "anthropic"
    assert plan.settings.expansion_edges() == ("contains", "invokes") and not plan.notes
    # a repository that turns expansion off, or picks the offline selector, is obeyed
    off = decide(facts(config="edges: none\n"), keyed)
    assert isinstance(off, Run) and off.settings.expansion_edges() == () and not off.settings.expands
    offline = decide(facts(config="selector: offline\n"), keyed)
    assert isinstance(offline, Run) and offline.settings.selector_name == "offline"
    assert offline.settings.expansion_edges() == ()  # auto edges follow the selector
    # /spider edges=... wins over both
    cmd = decide(facts(trigger="comment:9", config="edges: none\n",
                       comment=CommentFacts("/spider edges=invokes", AUTHOR)), keyed)
    assert isinstance(cmd, Run) and cmd.settings.expansion_edges() == ("invokes",)


def test_a_repository_asking_for_claude_without_a_key_gets_the_auto_choice() -> None:
    plan = decide(facts(config="selector: anthropic\n"), app(selector="auto"))
    assert isinstance(plan, Run) and plan.settings.selector_name == "offline"
    assert "`offline` selector was used" in plan.notes[0]
    assert plan.settings.expansion_edges() == ()  # no key: no paid method, no offline expansion


def command(body: str | None, author: Account | None = AUTHOR,
            association: str = "NONE") -> CommentFacts:
    return CommentFacts(body, author, association)


def test_a_command_from_the_author_or_a_member_runs_with_its_options() -> None:
    by_author = decide(facts(trigger="comment:9", comment=command("/spider k=7 colour=red")),
                       app())
    assert isinstance(by_author, Run) and by_author.settings.k == 7
    assert by_author.notes == ("`/spider`: ignored `colour=red`: known options are k and edges.",)
    by_member = decide(facts(trigger="comment:9", state="closed",  # closed: a command still runs
                             comment=command("/spider", Account("maintainer"), "MEMBER")), app())
    assert isinstance(by_member, Run)


@pytest.mark.parametrize(
    ("comment", "reason"),
    [
        (command("never mind"), "no longer a /spider command"),
        (command("/spider", Account("drive-by")), "only the issue's author or repository members"),
        (command("/spider", Account("ci[bot]", "Bot"), "MEMBER"), "comment by a bot"),
    ],
)
def test_a_command_that_no_longer_holds_is_skipped(comment: CommentFacts, reason: str) -> None:
    plan = decide(facts(trigger="comment:9", comment=comment), app())
    assert isinstance(plan, Skip) and reason in plan.reason


def test_the_cheaper_run_and_a_long_issue_say_so() -> None:
    plan = decide(facts(body="x" * 30_000), app(), cheaper=True)
    assert isinstance(plan, Run)
    assert {k: getattr(plan.settings, k) for k in CHEAPER_SETTINGS} == CHEAPER_SETTINGS
    assert len(plan.issue.body) == 20_000
    assert [n.split(" ")[1] for n in plan.notes] == ["first", "issue"]
    long_title = decide(facts(title="t" * 400), app())
    assert isinstance(long_title, Run) and len(long_title.issue.title) == MAX_TITLE_CHARS


def test_min_confidence_silences_a_weak_list() -> None:
    cfg = parse_config("min_confidence: 0.5\n").config
    assert below_confidence(cfg, 0.49) == Skip(
        "confidence 0.49 is below min_confidence 0.50 in .github/spider.yml")
    assert below_confidence(cfg, 0.5) is None and below_confidence(cfg, None) is None
    assert below_confidence(parse_config(None).config, 0.01) is None


# --- a maintainer's first hour: the delay and the no-backfill rule ------------------------

INSTALLED = datetime(2026, 6, 1, tzinfo=UTC)
MAINTAINER = Account("maria")


def test_delay_minutes_waits_first_and_remembers_what_the_issue_had() -> None:
    f = replace(facts(config="delay_minutes: 30\n", labels=frozenset({"needs-triage"}),
                      assignees=frozenset({"octocat"})))
    plan = decide(f, app())
    assert plan == Wait(1800, Seen(frozenset({"needs-triage"}), frozenset({"octocat"})))
    assert Seen.from_dict(plan.seen.as_dict()) == plan.seen


def test_no_delay_by_default_and_never_for_a_command() -> None:
    assert isinstance(decide(facts(), app()), Run)
    command = CommentFacts("/spider", MAINTAINER, "MEMBER")
    plan = decide(facts(trigger="comment:9", config="delay_minutes: 30\n", comment=command), app())
    assert isinstance(plan, Run)


def test_after_the_wait_an_untouched_issue_runs() -> None:
    seen = Seen(frozenset({"needs-triage"}))
    comments = (CommentFacts("me too", Account("passer-by"), "NONE"),
                CommentFacts("more details", AUTHOR, "OWNER"),
                CommentFacts("looking", Account("ci[bot]", "Bot"), "COLLABORATOR"))
    f = replace(facts(config="delay_minutes: 30\n", labels=frozenset({"needs-triage"})),
                waited=seen, comments=comments)
    assert isinstance(decide(f, app()), Run)


@pytest.mark.parametrize(
    ("issue", "comments", "reason"),
    [
        ({"labels": frozenset({"needs-triage", "bug"})}, (), "a maintainer labelled it `bug`"),
        ({"assignees": frozenset({"x"})}, (), "assigned to @x"),
        ({}, (CommentFacts("dup of #3", Account("y"), "COLLABORATOR"),), "answered by @y"),
        ({}, (CommentFacts("fixed on main", Account("y"), "MEMBER"),), "answered by @y"),
    ],
)
def test_after_the_wait_a_maintainers_triage_silences_the_job(
        issue: dict[str, object], comments: tuple[CommentFacts, ...], reason: str) -> None:
    base = {"labels": frozenset({"needs-triage"}), **issue}
    f = replace(facts(config="delay_minutes: 30\n", **base),
                waited=Seen(frozenset({"needs-triage"})), comments=comments)
    plan = decide(f, app())
    assert plan == Skip(reason)


def test_maintainer_triage_names_the_first_thing_found() -> None:
    issue = IssueFacts("t", author=AUTHOR, labels=frozenset({"b", "a"}))
    assert maintainer_triage(issue, Seen(), ()) == "a maintainer labelled it `a`, `b`"
    assert maintainer_triage(issue, Seen(frozenset({"a", "b"})), ()) is None


@pytest.mark.parametrize("trigger", ["issues.edited", "issues.reopened"])
def test_an_issue_older_than_the_installation_is_not_backfilled(trigger: str) -> None:
    old = datetime(2026, 1, 1, tzinfo=UTC)
    f = replace(facts(trigger=trigger, config="triggers: [opened, edited, reopened]\n",
                      created_at=old), installed_at=INSTALLED)
    plan = decide(f, app())
    assert isinstance(plan, Skip)
    assert "opened before the app was installed here (2026-06-01)" in plan.reason
    assert "/spider" in plan.reason


def test_an_old_issue_is_answered_when_asked_and_a_new_one_anyway() -> None:
    old = datetime(2026, 1, 1, tzinfo=UTC)
    command = CommentFacts("/spider", MAINTAINER, "MEMBER")
    asked = replace(facts(trigger="comment:9", comment=command, created_at=old),
                    installed_at=INSTALLED)
    assert isinstance(decide(asked, app()), Run)
    new = replace(facts(created_at=datetime(2026, 7, 1, tzinfo=UTC)), installed_at=INSTALLED)
    assert isinstance(decide(new, app()), Run)
    unknown = replace(facts(created_at=old), installed_at=None)
    assert isinstance(decide(unknown, app()), Run)


def test_delay_minutes_is_bounded() -> None:
    assert parse_config("delay_minutes: 1440\n").config.delay_minutes == 1440
    loaded = parse_config("delay_minutes: 1441\n")
    assert loaded.problem is not None and "delay_minutes" in loaded.problem


def test_a_rerun_of_an_answered_job_never_waits_again() -> None:
    f = replace(facts(config="delay_minutes: 30\n"), rerun=True)
    assert isinstance(decide(f, app()), Run)
