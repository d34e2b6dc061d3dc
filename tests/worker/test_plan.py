"""``worker.plan.decide``: facts in, a decision out (no fake GitHub, no Redis)."""

from __future__ import annotations

from dataclasses import replace

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
    Skip,
    TooLarge,
    below_confidence,
    decide,
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
