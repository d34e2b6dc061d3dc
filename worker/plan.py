"""What an issue job should do, decided from data: skip, say it is too large, or run.

Pure, like ``bot.events.route``: :func:`decide` takes what the job read from GitHub (the
repository, the issue as it is now, ``.github/spider.yml``, the ``/spider`` comment that
triggered it) and the app's settings, and returns a :class:`Skip` with its reason, a
:class:`TooLarge`, or a :class:`Run` with the engine settings and the notes the comment
shows. It never touches the network; ``worker.pipeline`` reads the facts and does the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from contract.commands import Command, parse_command
from contract.jobs import comment_id_of
from contract.policy import is_bot, may_rerun
from contract.settings import AppSettings
from spider.models import Issue
from spider.settings import EngineSettings
from worker.repo_config import CONFIG_PATH, LoadedConfig, RepoConfig

MAX_TITLE_CHARS = 256  # GitHub's own limit on issue titles
# What a run retried after the hard time limit uses instead (see worker.tasks): no
# embeddings (on a cold index embedding is most of the time: MiniLM embeds ~30 functions/s
# on two cores), no selector calls (no model, no network waits), and a smaller pool for
# the ranking. The comment says the cheaper method was used.
CHEAPER_SETTINGS: dict[str, Any] = {"first_stage": "bm25", "selector": "none", "pool": 100}


# --- the facts: what the job read from GitHub, as plain data ------------------------------


@dataclass(frozen=True)
class Account:
    """A GitHub account (``contract.policy.Account``)."""

    login: str
    type: str = "User"


@dataclass(frozen=True)
class RepoFacts:
    """The repository as GitHub describes it."""

    archived: bool = False
    size_kb: int = 0  # GitHub's ``size``: nothing fetched yet
    default_branch: str = "main"
    html_url: str = ""


@dataclass(frozen=True)
class IssueFacts:
    """The issue as it is now (it may have changed since the delivery)."""

    title: str
    body: str = ""
    state: str = "open"
    locked: bool = False
    is_pull_request: bool = False
    labels: frozenset[str] = frozenset()
    author: Account | None = None
    assignees: frozenset[str] = frozenset()
    created_at: datetime | None = None


@dataclass(frozen=True)
class CommentFacts:
    """The comment that triggered the job, re-read."""

    body: str | None
    author: Account | None
    association: str = "NONE"


@dataclass(frozen=True)
class Facts:
    """Everything :func:`decide` looks at."""

    trigger: str  # ``issues.<action>`` or ``comment:<id>`` (``contract.jobs.IssueJob``)
    repo: RepoFacts
    issue: IssueFacts
    config: LoadedConfig
    comment: CommentFacts | None = None  # read for a ``comment:<id>`` trigger only
    # When the app was installed here (the installation's ``created_at``, or the time the
    # repository was added to it, whichever is later); None: unknown, no backfill rule.
    installed_at: datetime | None = None
    # The issue as the job first saw it, before its ``delay_minutes`` wait; None: not waited.
    waited: Seen | None = None
    comments: tuple[CommentFacts, ...] = ()  # the issue's comments, read after the wait only
    # A run again of a job that has answered (after the full index; cheaper after the hard
    # time limit): it never waits for ``delay_minutes`` a second time.
    rerun: bool = False


@dataclass(frozen=True)
class Seen:
    """What the issue had when the job first looked, before it waited: labels and
    assignees set then (by an issue template, say) are not a maintainer's triage."""

    labels: frozenset[str] = frozenset()
    assignees: frozenset[str] = frozenset()

    def as_dict(self) -> dict[str, list[str]]:
        """JSON form (a task's keyword argument)."""
        return {"labels": sorted(self.labels), "assignees": sorted(self.assignees)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Seen:
        """Back from :meth:`as_dict` (unknown keys ignored)."""
        return cls(frozenset(map(str, data.get("labels") or ())),
                   frozenset(map(str, data.get("assignees") or ())))


# --- the decisions ------------------------------------------------------------------------


@dataclass(frozen=True)
class Skip:
    """End without a comment, for this reason."""

    reason: str


@dataclass(frozen=True)
class TooLarge:
    """Say politely that the repository is above ``SPIDER_MAX_REPO_KB``; fetch nothing."""

    size_kb: int
    limit_kb: int
    skip_label: str


@dataclass(frozen=True)
class Run:
    """Locate the issue with these engine settings, and show these notes."""

    settings: EngineSettings
    notes: tuple[str, ...]
    issue: Issue  # title and body as the engine may read them (clipped)
    config: RepoConfig
    config_found: bool


@dataclass(frozen=True)
class Wait:
    """Look again in ``seconds`` (``delay_minutes``), remembering what the issue had now."""

    seconds: int
    seen: Seen


Plan = Skip | TooLarge | Run | Wait


def decide(facts: Facts, settings: AppSettings, *, cheaper: bool = False) -> Plan:
    """The plan of one issue job (``cheaper``: the run after one killed at the hard time
    limit, with :data:`CHEAPER_SETTINGS`)."""
    cfg = facts.config.config
    reason = _skip_reason(facts)
    if reason is not None:
        return Skip(reason)
    command, reason = _check_trigger(facts)
    if reason is not None:
        return Skip(reason)
    if cfg.skip_label in facts.issue.labels:
        return Skip(f"the issue has the {cfg.skip_label!r} label")
    if command is None:  # an issue event; a `/spider` command is never held back
        held = before_installation(facts) or after_the_wait(facts)
        if held is not None:
            return held
    if facts.repo.size_kb > settings.max_repo_kb:
        return TooLarge(facts.repo.size_kb, settings.max_repo_kb, cfg.skip_label)
    engine, notes = engine_settings(facts.config, command, settings, cheaper=cheaper)
    body = facts.issue.body
    max_chars = settings.engine.max_issue_chars
    if len(body) > max_chars:  # before any model sees it (GitHub allows 65536)
        body = body[:max_chars]
        notes.append(f"The issue is long: only its first {max_chars} characters were read.")
    return Run(engine, tuple(notes), Issue(facts.issue.title[:MAX_TITLE_CHARS], body), cfg,
               facts.config.found)


def engine_settings(loaded: LoadedConfig, command: Command | None, settings: AppSettings,
                    *, cheaper: bool = False) -> tuple[EngineSettings, list[str]]:
    """The installation's engine settings with the repository's file, the ``/spider``
    command and the cheaper method laid over them, in that order; and the notes that say
    what was ignored or changed."""
    notes: list[str] = []
    if loaded.problem:
        notes.append(f"`{CONFIG_PATH}` was ignored because {loaded.problem}; "
                     "the defaults were used.")
    overrides = loaded.config.overrides()
    if overrides.get("selector") == "anthropic" and settings.engine.anthropic_api_key is None:
        overrides.pop("selector")
        notes.append("`selector: anthropic` needs a key this installation does not have; "
                     f"the `{settings.engine.selector_name}` selector was used.")
    if overrides.get("selector") == "llm" and settings.engine.llm_base_url is None:
        overrides.pop("selector")
        notes.append("`selector: llm` needs an LLM server this installation does not have; "
                     f"the `{settings.engine.selector_name}` selector was used.")
    if command is not None:
        overrides.update(command.overrides())
        notes.extend(f"`/spider`: {p}." for p in command.problems)
    if cheaper:
        overrides.update(CHEAPER_SETTINGS)
        notes.append("The first run did not finish in time; this one used a cheaper method "
                     "(keyword ranking only).")
    return settings.engine.model_copy(update=overrides), notes


def below_confidence(cfg: RepoConfig, confidence: float | None) -> Skip | None:
    """A Skip when the list's confidence is below the file's ``min_confidence``."""
    if cfg.min_confidence is None or confidence is None or confidence >= cfg.min_confidence:
        return None
    return Skip(f"confidence {confidence:.2f} is below min_confidence "
                f"{cfg.min_confidence:.2f} in {CONFIG_PATH}")


# --- a maintainer's first hour: no backfill, a delay that lets people triage first -------

# Who answers for the repository (GitHub's ``author_association`` of a comment): a comment
# by anyone else (a "+1", the author's own follow-up) does not answer an issue.
MAINTAINER_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})


def before_installation(facts: Facts) -> Skip | None:
    """A Skip for an issue opened before the app was installed on the repository (an old
    issue edited or reopened): the app never backfills; ``/spider`` still answers it."""
    opened, installed = facts.issue.created_at, facts.installed_at
    if opened is None or installed is None or opened >= installed:
        return None
    return Skip(f"the issue was opened before the app was installed here "
                f"({installed:%Y-%m-%d}); ask with /spider to have it answered")


def after_the_wait(facts: Facts) -> Plan | None:
    """With ``delay_minutes``: a :class:`Wait` on the first look; after it, a Skip when a
    maintainer labelled, assigned or answered the issue meanwhile; else None (run)."""
    minutes = facts.config.config.delay_minutes
    if facts.waited is None:
        if minutes <= 0 or facts.rerun:
            return None
        return Wait(minutes * 60, Seen(facts.issue.labels, facts.issue.assignees))
    reason = maintainer_triage(facts.issue, facts.waited, facts.comments)
    return Skip(reason) if reason is not None else None


def maintainer_triage(issue: IssueFacts, seen: Seen,
                      comments: tuple[CommentFacts, ...]) -> str | None:
    """How a maintainer has dealt with the issue since the job first looked, or None.

    A label or an assignee added since counts (only people with triage access can add
    them); a comment counts when its author is the repository's (``OWNER``, ``MEMBER``,
    ``COLLABORATOR``), is not the issue's author and is not a bot (this app included)."""
    added = sorted(issue.labels - seen.labels)
    if added:
        return "a maintainer labelled it " + ", ".join(f"`{lbl}`" for lbl in added)
    assigned = sorted(issue.assignees - seen.assignees)
    if assigned:
        return "assigned to " + ", ".join(f"@{login}" for login in assigned)
    author = issue.author.login if issue.author is not None else None
    for c in comments:
        if (c.association in MAINTAINER_ASSOCIATIONS and c.author is not None
                and c.author.login != author and not is_bot(c.author)):
            return f"answered by @{c.author.login}"
    return None


def _skip_reason(facts: Facts) -> str | None:
    """Why the repository, the issue or the file rule the job out, before its trigger."""
    if facts.repo.archived:
        return "the repository is archived"
    if facts.issue.is_pull_request:
        return "pull request"
    if facts.issue.locked:
        return "the issue is locked"
    if not facts.config.config.enabled:
        return "disabled in .github/spider.yml"
    return None


def _check_trigger(facts: Facts) -> tuple[Command | None, str | None]:
    """Re-check what triggered the job against the issue as it is now: the command to
    apply (a ``/spider`` comment), or the reason it no longer holds."""
    issue, cfg = facts.issue, facts.config.config
    if comment_id_of(facts.trigger) is not None:
        comment = facts.comment
        command = parse_command(comment.body) if comment is not None else None
        if comment is None or command is None:
            return None, "the comment is no longer a /spider command"
        if is_bot(comment.author):
            return None, "comment by a bot"
        if not may_rerun(comment.association, comment.author, issue.author):
            return None, "only the issue's author or repository members may run /spider"
        return command, None
    action = facts.trigger.split(".", 1)[1]
    if action not in cfg.triggers:
        return None, f"issues.{action} does not trigger a run here"
    if issue.state != "open":
        return None, "the issue is closed"
    if is_bot(issue.author):
        return None, "the issue was opened by a bot"
    length = len(f"{issue.title}\n\n{issue.body}".strip())
    if length < cfg.min_issue_length:
        return None, f"the issue is shorter than {cfg.min_issue_length} characters"
    return None, None


# --- from githubkit's models to the facts (pure: attribute reads only) --------------------


def account(user: Any) -> Account | None:
    """A githubkit ``SimpleUser`` (or None) as an :class:`Account`."""
    if user is None:
        return None
    return Account(login=str(user.login), type=str(user.type))


def repo_facts(repo: Any) -> RepoFacts:
    """A githubkit ``FullRepository`` as :class:`RepoFacts`."""
    return RepoFacts(archived=bool(repo.archived), size_kb=int(repo.size),
                     default_branch=repo.default_branch, html_url=repo.html_url)


def issue_facts(issue: Any) -> IssueFacts:
    """A githubkit ``Issue`` as :class:`IssueFacts`."""
    labels = frozenset(lbl if isinstance(lbl, str) else (lbl.name or "") for lbl in issue.labels)
    assignees = frozenset(str(a.login) for a in (issue.assignees or ()) if a is not None)
    return IssueFacts(title=issue.title, body=issue.body or "", state=str(issue.state),
                      locked=bool(issue.locked), is_pull_request=bool(issue.pull_request),
                      labels=labels, author=account(issue.user), assignees=assignees,
                      created_at=issue.created_at)


def comment_facts(comment: Any) -> CommentFacts:
    """A githubkit ``IssueComment`` as :class:`CommentFacts`."""
    return CommentFacts(body=comment.body, author=account(comment.user),
                        association=str(comment.author_association or "NONE"))
