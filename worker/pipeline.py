"""One issue job, start to end: read, decide, fetch, index, locate, render, publish.

A thin shell around the pure decision of ``worker.plan``: it reads the repository, the
issue, ``.github/spider.yml`` and the triggering comment; :func:`worker.plan.decide` says
whether to skip, to say the repository is too large, or to run and with which settings;
then this module fetches, indexes and locates, renders the comment and publishes it with
the one-comment protocol (``worker.comments``). Everything it touches comes in through
:class:`worker.deps.Deps`. The job is idempotent: it holds the issue's lock, finds its one
comment by the hidden marker, and edits it (or leaves it alone when nothing changed).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from contract import index_state, installs
from contract.jobs import IndexJob, IssueJob, comment_id_of
from contract.metrics import RECORDER
from spider.comment.render import (
    build_could_not_finish_view,
    build_too_large_view,
    build_view,
    render,
)
from spider.settings import COLD_FULL_RATIO, EngineSettings
from worker import locks, plan
from worker.comments import find_ours, publish
from worker.deps import Deps
from worker.errors import Delayed, GitHubRefused, RepositoryTooLarge
from worker.github import GitHubClient
from worker.mirror import Checkout
from worker.outcome import Outcome
from worker.repo_config import load_config

if TYPE_CHECKING:
    from spider import Index

log = logging.getLogger(__name__)

ISSUE_LOCK_WAIT_S = 5.0  # a second job on the same issue waits its turn later, not here


def run_job(job: IssueJob, deps: Deps, *, cheaper: bool = False,
            after_index: bool = False, waited: dict[str, Any] | None = None,
            llm_pass: bool = False, listed: list[str] | None = None) -> Outcome:
    """Run one job in a slot of its installation and of its repository, under the issue's
    lock. A slot or lock held by others raises NotYourTurn (Throttled, Busy) and nothing
    has happened yet. ``cheaper``: the run after one that hit the hard time limit
    (:data:`worker.plan.CHEAPER_SETTINGS`). ``after_index``: the run again of a job
    answered from a partial index, once the full index is there (it never asks for
    another run). ``waited``: the job has waited ``delay_minutes`` (``due``: until when,
    epoch seconds) and what the issue had before (:class:`worker.plan.Seen`); before it is
    due the job raises :class:`Delayed` again at once, reading nothing. ``llm_pass``: the
    run after a first answer that lets the configured LLM read the list (its roles are
    off in every other run, so no answer waits for a model); the comment is edited only
    when the LLM finished. ``listed``: with ``after_index``, the ids a first answer ranked
    without the repository's history listed; the comment is edited only when the list
    ranked with it differs."""
    s = deps.settings
    if waited is not None and float(waited.get("due", 0)) > time.time():
        raise Delayed(_hop(deps, float(waited["due"]) - time.time()), {"waited": waited})
    ttl = s.lease_ttl_s
    started = time.perf_counter()
    with locks.slot(deps.redis, locks.installation_slots_name(job.installation_id),
                    limit=s.max_jobs_per_installation, ttl_s=ttl), \
            locks.slot(deps.redis, locks.repo_slots_name(job.repo),
                       limit=s.max_jobs_per_repo, ttl_s=ttl), \
            locks.held(deps.redis, locks.issue_lock_name(job.repo, job.issue_number),
                       ttl_s=ttl, wait_s=ISSUE_LOCK_WAIT_S):
        outcome = _run(job, deps, started, cheaper, after_index, waited, llm_pass, listed)
    if outcome.status == "skipped":
        log.info("job skipped", extra={"reason": outcome.reason})
    else:
        log.info("job done", extra={"status": outcome.status, "comment_id": outcome.comment_id,
                                    "sha": outcome.sha, "timings": outcome.timings})
    return outcome


def _run(job: IssueJob, deps: Deps, started: float, cheaper: bool = False,
         after_index: bool = False, waited: dict[str, Any] | None = None,
         llm_pass: bool = False, listed: list[str] | None = None) -> Outcome:
    """Read the facts, decide, and do what the plan says."""
    with deps.github(job.installation_id) as gh:
        seen = plan.Seen.from_dict(waited) if waited is not None else None
        facts = read_facts(gh, job, seen=seen, installed_at=_installed_at(deps, gh, job),
                           rerun=cheaper or after_index)
        decision = plan.decide(facts, deps.settings, cheaper=cheaper)
        if isinstance(decision, plan.Skip):
            return Outcome(status="skipped", reason=decision.reason)
        if isinstance(decision, plan.Wait):
            due = time.time() + decision.seconds
            log.info("job waits for the repository's delay", extra={"in_s": decision.seconds})
            raise Delayed(_hop(deps, decision.seconds),
                          {"waited": {**decision.seen.as_dict(), "due": due}})
        if isinstance(decision, plan.TooLarge):
            return _too_large(gh, deps, job, decision.skip_label, size_kb=decision.size_kb,
                              limit_kb=decision.limit_kb)
        return _answer(gh, deps, job, facts, decision, started, after_index, llm_pass, listed)


def read_facts(gh: GitHubClient, job: IssueJob, *, seen: plan.Seen | None = None,
               installed_at: datetime | None = None, rerun: bool = False) -> plan.Facts:
    """What :func:`worker.plan.decide` needs, read from GitHub as it is now: the
    repository, the issue, ``.github/spider.yml``, (for ``/spider``) the comment, and
    (after a ``delay_minutes`` wait, ``seen``) every comment of the issue."""
    repo = gh.repository(job.owner, job.name)
    issue = gh.issue(job.owner, job.name, job.issue_number)
    loaded = load_config(gh, job.owner, job.name, repo.default_branch)
    comment_id = comment_id_of(job.trigger)
    comment = gh.comment(job.owner, job.name, comment_id) if comment_id is not None else None
    comments: tuple[plan.CommentFacts, ...] = ()
    if seen is not None:
        comments = tuple(plan.comment_facts(c)
                         for c in gh.comments(job.owner, job.name, job.issue_number))
    return plan.Facts(trigger=job.trigger, repo=plan.repo_facts(repo),
                      issue=plan.issue_facts(issue), config=loaded,
                      comment=plan.comment_facts(comment) if comment is not None else None,
                      installed_at=installed_at, waited=seen, comments=comments, rerun=rerun)


def _hop(deps: Deps, seconds: float) -> float:
    """One leg of a wait: at most half the broker's visibility timeout, or Redis would
    hand the waiting message out again (a longer wait is several legs)."""
    return max(1.0, min(seconds, deps.settings.visibility_timeout_s / 2))


def _installed_at(deps: Deps, gh: GitHubClient, job: IssueJob) -> datetime | None:
    """When the app came to the repository (the later of the installation's creation and
    the repository's addition), for the no-backfill rule; None when GitHub will not say
    (logged; a transient failure is raised, and the job retried). Only an edited or
    reopened issue can be older: an ``opened`` event, or a ``/spider`` command, needs no
    look."""
    if job.trigger not in ("issues.edited", "issues.reopened"):
        return None
    created = installs.installation_created_at(deps.redis, job.installation_id)
    if created is None:
        try:
            created = gh.installation_created_at()
        except GitHubRefused as exc:  # e.g. a GitHub without the route: no rule, no failure
            log.warning("installation time unknown", extra={"error": str(exc)[:300]})
            return None
        installs.remember_installation_created(deps.redis, job.installation_id, created)
    added = installs.repo_added_at(deps.redis, job.repo)
    return max(created, added) if added is not None else created


def _answer(gh: GitHubClient, deps: Deps, job: IssueJob, facts: plan.Facts, run: plan.Run,
            started: float, after_index: bool, llm_pass: bool = False,
            listed: list[str] | None = None) -> Outcome:
    """Fetch and index the default branch, locate the issue, render and publish; a first
    answer with LLM roles configured queues the LLM pass, which edits the comment."""
    s = deps.settings
    llm_roles = run.settings.active_llm_roles
    if llm_pass and not llm_roles:  # the repository turned it off since, or /spider did
        return Outcome(status="skipped", reason="no LLM role is on for this issue now")
    try:
        done = _fetch_and_index(gh, deps, job, facts.repo.default_branch, run.settings)
    except RepositoryTooLarge as exc:  # the fetched mirror is larger than GitHub said
        return _too_large(gh, deps, job, run.config.skip_label, size_kb=exc.size_kb,
                          limit_kb=exc.limit_kb)
    except _TooManyFiles as exc:
        return _too_large(gh, deps, job, run.config.skip_label, files=exc.files,
                          limit_files=s.max_source_files)
    settings = run.settings
    if llm_roles and not llm_pass:  # the first answer never waits for a model
        settings = first_answer_settings(settings)
    if done.partial:  # the engine's cold path: embed only the cheap rankers' best candidates
        settings = settings.model_copy(update={"cold_pool": s.issue_cold_pool})
    loc = deps.engine.locate(done.index, run.issue, settings)
    located_at = time.perf_counter()
    if llm_pass:
        kept = llm_pass_outcome(loc)
        RECORDER.count("spider_llm_passes", "kept" if kept else "edited")
        if kept is not None:
            log.warning("LLM pass left the list standing", extra={"reason": kept})
            return Outcome(status="skipped", reason=f"LLM pass: {kept}")
    if after_index and listed is not None and not loc.settings.partial \
            and [h.id for h in loc.hits] == listed:
        log.info("history left the list as it was: comment not edited")
        return Outcome(status="unchanged", reason="history left the list as it was",
                       sha=done.checkout.sha)
    updates = False
    RECORDER.count("spider_answers", "partial" if loc.settings.partial else "full")
    if loc.settings.partial:
        updates = _ask_for_the_full_index(deps, job, after_index)
    elif done.checkout.history_pending:  # ranked without history: the index job brings it
        _ask_for_the_full_index(deps, job, after_index, listed=[h.id for h in loc.hits])
    quiet = plan.below_confidence(run.config, loc.confidence)
    if quiet is not None:
        return Outcome(status="skipped", reason=quiet.reason)
    timings = {"fetch": done.fetch_s, "index": done.index_s, "total": located_at - started}
    RECORDER.observe("spider_fetch_seconds", done.fetch_s)
    RECORDER.observe("spider_index_seconds", done.index_s)
    RECORDER.observe("spider_query_seconds", located_at - done.indexed_at)
    view = build_view(
        loc,
        html_url=facts.repo.html_url,
        branch=facts.repo.default_branch,
        notes=list(run.notes),
        timings=timings,
        config_found=run.config_found,
        skip_label=run.config.skip_label,
        app_name=s.app_name,
        shown=run.config.shown,
        partial_updates=updates,
        llm_pending=settings.llm_model_name if _llm_later(deps, llm_roles, llm_pass, loc) else None,
    )
    body = render(view, s.template_dir)
    status, comment_id = publish(gh, deps.policy, job, body, s.github_app_id)
    record_comment(deps, job, comment_id, done.checkout.sha, loc, facts.issue.title,
                   run.issue.body)
    if _llm_later(deps, llm_roles, llm_pass, loc):
        _queue_llm_pass(deps, job)
    return Outcome(status=status, comment_id=comment_id, sha=done.checkout.sha, body=body,
                   timings={k: round(v, 3) for k, v in timings.items()})


@dataclass(frozen=True)
class _Indexed:
    """A fetched head and its index (``partial``: not every function embedded yet)."""

    checkout: Checkout
    index: Index
    partial: bool
    fetch_s: float
    index_s: float
    indexed_at: float  # time.perf_counter() when the index was ready


def _fetch_and_index(gh: GitHubClient, deps: Deps, job: IssueJob, branch: str,
                     settings: EngineSettings) -> _Indexed:
    """Fetch the branch head and index it, under the repository's lock; raise
    RepositoryTooLarge or _TooManyFiles when it is above a limit."""
    s = deps.settings
    with locks.held(deps.redis, locks.repo_lock_name(job.repo),
                    ttl_s=s.lease_ttl_s, wait_s=s.lock_wait_s):
        t0 = time.perf_counter()
        fetched_at = index_state.now_us(deps.redis)
        # never wait for the history window: the index job fetches it (history_pending)
        checkout = deps.mirrors.fetch(job.repo, branch, gh.token, history=False)
        files = deps.engine.source_files(checkout, settings)
        if files > s.max_source_files:
            raise _TooManyFiles(files)
        t1 = time.perf_counter()
        index, partial = _index_for_issue(deps, checkout, settings)
        t2 = time.perf_counter()
        if not partial and not checkout.history_pending:  # the head is indexed, history too
            _record_indexed(deps, job.repo, checkout.sha, fetched_at, index)
    return _Indexed(checkout, index, partial, t1 - t0, t2 - t1, t2)


def _index_for_issue(deps: Deps, checkout: Checkout,
                     settings: EngineSettings) -> tuple[Index, bool]:
    """The index to rank with and whether it is partial (too many functions not embedded
    yet: ``SPIDER_ISSUE_EMBED_MAX``); with ``SPIDER_ISSUE_COLD_POOL=0`` always complete."""
    pool = deps.settings.issue_cold_pool
    if pool <= 0:
        return deps.engine.index(checkout, settings), False
    # as many missing as a pool (nearly) costs the same as all of them: embed them all
    embed_max = max(deps.settings.issue_embed_max, int(pool * COLD_FULL_RATIO))
    return deps.engine.index_for_issue(checkout, settings, embed_max=embed_max)


def _record_indexed(deps: Deps, repo: str, sha: str, fetched_at: int, index: Index) -> None:
    """Record the head an issue job indexed in full (as an index job would), so a push or an
    installation event for it finds nothing left to do. Best effort."""
    try:
        functions = int((getattr(index, "stats", None) or {}).get("functions", 0))
        index_state.record_indexed(deps.redis, repo, sha, fetched_at, functions)
    except Exception as exc:
        log.warning("indexed head not recorded", extra={"error": type(exc).__name__})


def _ask_for_the_full_index(deps: Deps, job: IssueJob, after_index: bool,
                            listed: list[str] | None = None) -> bool:
    """After an answer from a partial index (or one ranked before the history window was
    fetched: ``listed``, the ids it listed): queue the repository's full index (unless one
    waits already) and, once, this job's run again after it. True when that run is due, so
    the comment may say it will be updated."""
    if deps.queue_index is None:
        return False
    rerun = not after_index
    again: dict[str, Any] = {**job.as_kwargs(), "after_index": True}
    if listed is not None:
        again["listed"] = listed
    try:
        if rerun:  # before queueing: the index job hands the reruns back when it ends
            index_state.add_rerun(deps.redis, job.repo, job.issue_number, again)
        deps.queue_index(IndexJob(job.installation_id, job.repo, job.delivery_id,
                                  reason="issue"))
    except Exception as exc:  # Redis or the broker away: the comment goes out all the same
        log.warning("full index not queued", extra={"error": f"{type(exc).__name__}: {exc}"[:300]})
        return False
    log.info("answered from a partial index: full index queued", extra={"rerun": rerun})
    return rerun


def first_answer_settings(settings: EngineSettings) -> EngineSettings:
    """``settings`` with every LLM role off, an LLM selector named explicitly included
    (the offline one answers first; the LLM pass runs the one asked for)."""
    update: dict[str, Any] = {"llm_roles": ()}
    if settings.selector in ("llm", "anthropic"):
        update["selector"] = "auto"
    return settings.model_copy(update=update)


def llm_pass_outcome(loc: Any) -> str | None:
    """Why an LLM pass leaves the comment as it is (None: it finished and the comment is
    edited): the pass did not run, or stopped before any of its roles acted."""
    record = getattr(loc, "llm", None)
    if record is None:
        return "no LLM ran"
    acted = record.read > 0 or (getattr(loc, "selector_calls", 0) > 0
                                and getattr(loc, "selector_failures", 0) == 0)
    if record.failure is not None and not acted:
        return f"did not finish ({record.failure})"
    return None


def _llm_later(deps: Deps, roles: tuple[str, ...], llm_pass: bool, loc: Any) -> bool:
    """Whether this answer is followed by an LLM pass: a role is on, this is a first
    answer, the index was complete (a partial answer's run after indexing does it), and
    the worker can queue one."""
    return bool(roles) and not llm_pass and not loc.settings.partial \
        and deps.queue_llm is not None


def _queue_llm_pass(deps: Deps, job: IssueJob) -> None:
    """Queue the issue's LLM pass after its first answer. Best effort: without it the
    first answer stands, and `/spider` runs everything again."""
    if deps.queue_llm is None:
        return
    try:
        deps.queue_llm(job)
    except Exception as exc:
        log.warning("LLM pass not queued", extra={"error": f"{type(exc).__name__}: {exc}"[:300]})
        return
    log.info("LLM pass queued", extra={"issue": job.issue_number})


def record_comment(deps: Deps, job: IssueJob, comment_id: int, sha: str, loc: Any,
                   title: str, body: str) -> None:
    """Record what the comment listed, for scoring its fix later. Never fails the job: a
    database away is logged, and the scoring job reads the comment back from GitHub."""
    if deps.store is None:
        return
    from worker.store import CommentRecord

    ids = [h.id for h in loc.hits]
    try:
        deps.store.record_comment(CommentRecord(job.repo, job.issue_number, comment_id, sha,
                                                len(ids), ids, title, body))
    except Exception as exc:
        log.warning("comment not recorded", extra={"error": f"{type(exc).__name__}: {exc}"[:300]})


class _TooManyFiles(Exception):
    """The checkout has more source files than ``SPIDER_MAX_SOURCE_FILES`` (said politely)."""

    def __init__(self, files: int) -> None:
        super().__init__(f"{files} source files")
        self.files = files


def _too_large(gh: GitHubClient, deps: Deps, job: IssueJob, skip_label: str,
               **sizes: int) -> Outcome:
    """Say politely, in the issue's one comment, that the repository is above a limit
    (``size_kb``/``limit_kb`` or ``files``/``limit_files``); nothing is indexed."""
    s = deps.settings
    log.warning("repository too large", extra=sizes)
    view = build_too_large_view(app_name=s.app_name, skip_label=skip_label, **sizes)
    body = render(view, s.template_dir)
    _, comment_id = publish(gh, deps.policy, job, body, s.github_app_id)
    return Outcome(status="too_large", reason=", ".join(f"{k}={v}" for k, v in sizes.items()),
                   comment_id=comment_id, body=body)


def could_not_finish(job: IssueJob, deps: Deps) -> Outcome:
    """Say politely, in the issue's one comment, that the job ran out of time twice (the
    hard time limit, as usual and then cheaper). An existing comment of ours is left as it
    is: an older list is more use than this note."""
    s = deps.settings
    with locks.held(deps.redis, locks.issue_lock_name(job.repo, job.issue_number),
                    ttl_s=s.lease_ttl_s, wait_s=ISSUE_LOCK_WAIT_S), \
            deps.github(job.installation_id) as gh:
        repo = gh.repository(job.owner, job.name)
        cfg = load_config(gh, job.owner, job.name, repo.default_branch).config
        ours = find_ours(gh.comments(job.owner, job.name, job.issue_number), s.github_app_id)
        if ours is not None:
            return Outcome(status="timed_out", reason="out of time twice; the comment stays",
                           comment_id=ours.id)
        view = build_could_not_finish_view(app_name=s.app_name, skip_label=cfg.skip_label,
                                           limit_s=s.task_time_limit_s)
        body = render(view, s.template_dir)
        _, comment_id = publish(gh, deps.policy, job, body, s.github_app_id)
    log.warning("job could not finish: said so in the comment", extra={"comment_id": comment_id})
    return Outcome(status="timed_out", reason="out of time twice", comment_id=comment_id,
                   body=body)
