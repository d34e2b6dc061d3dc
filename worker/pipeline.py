"""One job, start to end: re-read the issue, decide, fetch, index, locate, render, publish.

Everything the job touches comes in through :class:`worker.deps.Deps`, so tests can replace GitHub,
git or the engine. The job is idempotent: it holds the issue's lock, finds its one
comment by the hidden marker, and edits it (or leaves it alone when nothing changed).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from contract import index_state
from contract.commands import Command, parse_command
from contract.jobs import IndexJob, IssueJob, comment_id_of
from contract.metrics import RECORDER
from contract.policy import is_bot, may_rerun
from spider.comment.render import (
    build_could_not_finish_view,
    build_too_large_view,
    build_view,
    render,
)
from spider.models import Issue
from spider.settings import EngineSettings
from worker import locks
from worker.comments import find_ours, publish
from worker.deps import Deps
from worker.errors import RepositoryTooLarge
from worker.github import GitHubClient
from worker.outcome import Outcome
from worker.repo_config import CONFIG_PATH, RepoConfig, load_config

log = logging.getLogger(__name__)

ISSUE_LOCK_WAIT_S = 5.0  # a second job on the same issue waits its turn later, not here
MAX_TITLE_CHARS = 256  # GitHub's own limit on issue titles

# What a run retried after the hard time limit uses instead (see worker.tasks): no
# embeddings (on a cold index embedding is most of the time: MiniLM embeds ~30 functions/s
# on two cores), no selector calls (no model, no network waits), and a smaller pool for
# the ranking. The comment says the cheaper method was used.
CHEAPER_SETTINGS: dict[str, Any] = {"first_stage": "bm25", "selector": "none", "pool": 100}


class Skip(Exception):
    """The job should end without a comment, for this reason."""


def run_job(job: IssueJob, deps: Deps, *, cheaper: bool = False,
            after_index: bool = False) -> Outcome:
    """Run one job in a slot of its installation and of its repository, under the issue's
    lock. Skip becomes a ``skipped`` outcome; a slot or lock held by others raises
    NotYourTurn (Throttled, Busy) and nothing has happened yet. ``cheaper``: the run
    after one that hit the hard time limit (:data:`CHEAPER_SETTINGS`). ``after_index``:
    the run again of a job answered from a partial index, once the full index is there
    (it never asks for another run)."""
    s = deps.settings
    ttl = s.lease_ttl_s
    started = time.perf_counter()
    try:
        with locks.slot(deps.redis, locks.installation_slots_name(job.installation_id),
                        limit=s.max_jobs_per_installation, ttl_s=ttl), \
                locks.slot(deps.redis, locks.repo_slots_name(job.repo),
                           limit=s.max_jobs_per_repo, ttl_s=ttl), \
                locks.held(deps.redis, locks.issue_lock_name(job.repo, job.issue_number),
                           ttl_s=ttl, wait_s=ISSUE_LOCK_WAIT_S):
            outcome = _run(job, deps, started, cheaper, after_index)
    except Skip as skip:
        log.info("job skipped", extra={"reason": str(skip)})
        return Outcome(status="skipped", reason=str(skip))
    log.info("job done", extra={"status": outcome.status, "comment_id": outcome.comment_id,
                                "sha": outcome.sha, "timings": outcome.timings})
    return outcome


def _run(job: IssueJob, deps: Deps, started: float, cheaper: bool = False,
         after_index: bool = False) -> Outcome:
    s = deps.settings
    owner, name = job.owner, job.name
    timings: dict[str, float] = {}
    with deps.github(job.installation_id) as gh:
        repo = gh.repository(owner, name)
        if repo.archived:
            raise Skip("the repository is archived")
        issue = gh.issue(owner, name, job.issue_number)
        if issue.pull_request:
            raise Skip("pull request")
        if issue.locked:
            raise Skip("the issue is locked")
        loaded = load_config(gh, owner, name, repo.default_branch)
        cfg = loaded.config
        if not cfg.enabled:
            raise Skip("disabled in .github/spider.yml")
        command = _check_trigger(gh, job, issue, cfg)
        labels = {lbl if isinstance(lbl, str) else (lbl.name or "") for lbl in issue.labels}
        if cfg.skip_label in labels:
            raise Skip(f"the issue has the {cfg.skip_label!r} label")

        notes: list[str] = []
        if loaded.problem:
            notes.append(f"`{CONFIG_PATH}` was ignored because {loaded.problem}; "
                         "the defaults were used.")
        overrides = cfg.overrides()
        if overrides.get("selector") == "anthropic" and s.engine.anthropic_api_key is None:
            overrides.pop("selector")
            notes.append("`selector: anthropic` needs a key this installation does not have; "
                         f"the `{s.engine.selector}` selector was used.")
        if command is not None:
            overrides.update(command.overrides())
            notes.extend(f"`/spider`: {p}." for p in command.problems)
        if cheaper:
            overrides.update(CHEAPER_SETTINGS)
            notes.append("The first run did not finish in time; this one used a cheaper method "
                         "(keyword ranking only).")
        settings = s.engine.model_copy(update=overrides)
        body_text = issue.body or ""
        if len(body_text) > s.engine.max_issue_chars:  # before any model sees it (GitHub allows 65536)
            body_text = body_text[: s.engine.max_issue_chars]
            notes.append(f"The issue is long: only its first {s.engine.max_issue_chars} characters "
                         "were read.")

        if repo.size > s.max_repo_kb:  # GitHub's own figure: nothing fetched yet
            return _too_large(gh, deps, job, cfg.skip_label, size_kb=repo.size,
                              limit_kb=s.max_repo_kb)
        try:
            with locks.held(deps.redis, locks.repo_lock_name(job.repo),
                            ttl_s=s.lease_ttl_s, wait_s=s.lock_wait_s):
                t0 = time.perf_counter()
                fetched_at = index_state.now_us(deps.redis)
                checkout = deps.mirrors.fetch(job.repo, repo.default_branch, gh.token)
                files = deps.engine.source_files(checkout, settings)
                if files > s.max_source_files:
                    raise _TooManyFiles(files)
                t1 = time.perf_counter()
                index, partial = _index_for_issue(deps, checkout, settings)
                t2 = time.perf_counter()
                if not partial:  # every function embedded: the head is indexed
                    _record_indexed(deps, job.repo, checkout.sha, fetched_at, index)
        except RepositoryTooLarge as exc:  # the fetched mirror is larger than GitHub said
            return _too_large(gh, deps, job, cfg.skip_label, size_kb=exc.size_kb,
                              limit_kb=exc.limit_kb)
        except _TooManyFiles as exc:
            return _too_large(gh, deps, job, cfg.skip_label, files=exc.files,
                              limit_files=s.max_source_files)
        if partial:  # the engine's cold path: embed only the cheap rankers' best candidates
            settings = settings.model_copy(update={"cold_pool": s.issue_cold_pool})
        loc = deps.engine.locate(index, Issue(issue.title[:MAX_TITLE_CHARS], body_text), settings)
        t3 = time.perf_counter()
        updates = False
        RECORDER.count("spider_answers", "partial" if loc.settings.get("partial_index") else "full")
        if loc.settings.get("partial_index"):
            updates = _ask_for_the_full_index(deps, job, after_index)
        if (cfg.min_confidence is not None and loc.confidence is not None
                and loc.confidence < cfg.min_confidence):
            raise Skip(f"confidence {loc.confidence:.2f} is below min_confidence "
                       f"{cfg.min_confidence:.2f} in {CONFIG_PATH}")
        timings.update(fetch=t1 - t0, index=t2 - t1)
        timings["total"] = t3 - started
        RECORDER.observe("spider_fetch_seconds", t1 - t0)
        RECORDER.observe("spider_index_seconds", t2 - t1)
        RECORDER.observe("spider_query_seconds", t3 - t2)
        view = build_view(
            loc,
            html_url=repo.html_url,
            branch=repo.default_branch,
            notes=notes,
            timings=timings,
            config_found=loaded.found,
            skip_label=cfg.skip_label,
            app_name=s.app_name,
            shown=cfg.shown,
            partial_updates=updates,
        )
        body = render(view, s.template_dir)
        status, comment_id = publish(gh, deps.policy, job, body, s.github_app_id)
        record_comment(deps, job, comment_id, checkout.sha, loc, issue.title, body_text)
    return Outcome(status=status, comment_id=comment_id, sha=checkout.sha, body=body,
                   timings={k: round(v, 3) for k, v in timings.items()})


def _index_for_issue(deps: Deps, checkout: Any, settings: EngineSettings) -> tuple[Any, bool]:
    """The index to rank with and whether it is partial (too many functions not embedded
    yet: ``SPIDER_ISSUE_EMBED_MAX``); with ``SPIDER_ISSUE_COLD_POOL=0`` always complete."""
    if deps.settings.issue_cold_pool <= 0:
        return deps.engine.index(checkout, settings), False
    return deps.engine.index_for_issue(checkout, settings,
                                       embed_max=deps.settings.issue_embed_max)


def _record_indexed(deps: Deps, repo: str, sha: str, fetched_at: int, index: Any) -> None:
    """Record the head an issue job indexed in full (as an index job would), so a push or an
    installation event for it finds nothing left to do. Best effort."""
    try:
        functions = int((getattr(index, "stats", None) or {}).get("functions", 0))
        index_state.record_indexed(deps.redis, repo, sha, fetched_at, functions)
    except Exception as exc:
        log.warning("indexed head not recorded", extra={"error": type(exc).__name__})


def _ask_for_the_full_index(deps: Deps, job: IssueJob, after_index: bool) -> bool:
    """After an answer from a partial index: queue the repository's full index (unless one
    waits already) and, once, this job's run again after it. True when that run is due, so
    the comment may say it will be updated."""
    if deps.queue_index is None:
        return False
    rerun = not after_index
    try:
        if rerun:  # before queueing: the index job hands the reruns back when it ends
            index_state.add_rerun(deps.redis, job.repo, job.issue_number,
                                  {**job.as_kwargs(), "after_index": True})
        deps.queue_index(IndexJob(job.installation_id, job.repo, job.delivery_id,
                                  reason="issue"))
    except Exception as exc:  # Redis or the broker away: the comment goes out all the same
        log.warning("full index not queued", extra={"error": f"{type(exc).__name__}: {exc}"[:300]})
        return False
    log.info("answered from a partial index: full index queued", extra={"rerun": rerun})
    return rerun


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


def _check_trigger(gh: GitHubClient, job: IssueJob, issue: Any, cfg: RepoConfig) -> Command | None:
    """Re-check what triggered the job against the issue as it is now; Skip if it no longer holds."""
    comment_id = comment_id_of(job.trigger)
    if comment_id is not None:
        comment = gh.comment(job.owner, job.name, comment_id)
        command = parse_command(comment.body)
        if command is None:
            raise Skip("the comment is no longer a /spider command")
        if is_bot(comment.user):
            raise Skip("comment by a bot")
        if not may_rerun(str(comment.author_association or "NONE"), comment.user, issue.user):
            raise Skip("only the issue's author or repository members may run /spider")
        return command
    action = job.trigger.split(".", 1)[1]
    if action not in cfg.triggers:
        raise Skip(f"issues.{action} does not trigger a run here")
    if issue.state != "open":
        raise Skip("the issue is closed")
    if is_bot(issue.user):
        raise Skip("the issue was opened by a bot")
    length = len(f"{issue.title}\n\n{issue.body or ''}".strip())
    if length < cfg.min_issue_length:
        raise Skip(f"the issue is shorter than {cfg.min_issue_length} characters")
    return None


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
