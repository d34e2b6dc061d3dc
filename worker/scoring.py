"""A merged fix, scored: which functions did it change, and had our comment listed them?

One scoring job (``contract.jobs.FixJob``): re-read the pull request; find the issues it
closes (closing keywords in its title, body and commit messages, plus GraphQL's
``closingIssuesReferences`` where the token allows); keep those our comment answered; map
the pull request's hunks to the functions of the graph at its base commit with the rule
``spider bench`` uses (``spider.match_fix``); compare with the
comment's list by id (a listed function renamed or moved since the comment's commit is
matched by its body's hash); record it once; add one line to the comment.

Everything is read again from GitHub (ids in, state re-read); the database is written
before the comment is edited, so a retry after a failed edit finds the record and only
edits. The database being away raises ``StoreUnavailable``: the task retries later.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

import spider
from contract.jobs import FixJob
from contract.metrics import RECORDER
from spider.comment.markdown import Markdown, code
from spider.comment.render import MARKER, with_fix_line
from spider.models import ordinal
from worker import comments, locks
from worker.closing import closed_issues
from worker.deps import Deps
from worker.errors import GitHubRefused
from worker.github import GitHubClient
from worker.outcome import Outcome
from worker.store import CommentRecord, ScoredFix, Store

log = logging.getLogger(__name__)

MAX_NAMES_IN_LINE = 5  # the comment's fix line names at most this many functions
_LIST_LINE = re.compile(
    r"^\s*(?P<rank>[0-9]+)\. \[(?P<fence>`+) ?(?P<name>.*?) ?(?P=fence)\]"
    r"\((?P<url>https?://[^)\s]+/blob/(?P<sha>[0-9a-f]{40}|[0-9a-f]{64})/(?P<path>[^#)\s]+)#L[0-9-L]+)\)"
)


@dataclass(frozen=True)
class Score:
    """How one fix compares with one comment's list."""

    changed: list[str]  # graph ids at the base commit, sorted
    ranks: dict[str, int]  # changed id -> 1-based rank in the list (listed ones only)
    moved: dict[str, str]  # listed id -> changed id it was matched to by its code
    k: int

    @property
    def first_rank(self) -> int | None:
        """Rank of the best-ranked listed function the fix changed (None: none)."""
        return min(self.ranks.values(), default=None)

    @property
    def recall(self) -> float | None:
        """Recall@K: the share of changed functions the list held (None: none changed)."""
        if not self.changed:
            return None
        return sum(1 for c in self.changed if self.ranks.get(c, self.k + 1) <= self.k) / len(self.changed)

    @property
    def outcome(self) -> str:
        """``hit``, ``miss`` or ``no_function_changed``."""
        if not self.changed:
            return "no_function_changed"
        return "hit" if self.ranks else "miss"


# --- pure pieces -------------------------------------------------------------------------


def compare(listed: Sequence[str], k: int, changed: Iterable[str],
            moved: dict[str, str] | None = None) -> Score:
    """Score a list against the changed functions; ``moved`` maps listed ids that no longer
    exist at the base commit to the changed function with the same code."""
    changed_set = set(changed)
    moved = dict(moved or {})
    ranks: dict[str, int] = {}
    for rank, lid in enumerate(listed, start=1):
        target = lid if lid in changed_set else moved.get(lid)
        if target in changed_set and target not in ranks:
            ranks[target] = rank
    return Score(sorted(changed_set), ranks, {k_: v for k_, v in moved.items()
                                              if v in ranks}, k)


def short_name(node_id: str) -> str:
    """The qualified name of a graph id (``path:Class.method`` -> ``Class.method``)."""
    return node_id.split(":", 1)[-1] or node_id


def fix_line(pull_number: int, score: Score) -> Markdown:
    """The comment's line about a fix, e.g. "The fix in #12 changed `Session.send`
    (listed 2nd) and `merge_setting` (not listed)." Names are code spans (inert)."""
    listed_first = sorted(score.changed, key=lambda c: (score.ranks.get(c, 10**6), c))
    parts = []
    for cid in listed_first[:MAX_NAMES_IN_LINE]:
        rank = score.ranks.get(cid)
        where = f"listed {ordinal(rank)}" if rank is not None else "not listed"
        parts.append(f"{code(short_name(cid))} ({where})")
    more = len(listed_first) - MAX_NAMES_IN_LINE
    if more > 0:
        parts.append(f"{more} more")
    joined = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return Markdown(f"The fix in #{int(pull_number)} changed {joined}.")


def patch_of(files: Iterable[Any]) -> str:
    """A git-style unified diff from the REST files of a pull request (``filename``,
    ``previous_filename``, ``status``, ``patch``); files without a patch are left out."""
    out = []
    for f in files:
        patch = getattr(f, "patch", None)
        if not patch:
            continue
        new = f.filename
        old = getattr(f, "previous_filename", None) or new
        a = "/dev/null" if f.status == "added" else f"a/{old}"
        b = "/dev/null" if f.status == "removed" else f"b/{new}"
        out.append(f"diff --git a/{old} b/{new}\n--- {a}\n+++ {b}\n{patch.rstrip(chr(10))}\n")
    return "".join(out)


def parse_comment(body: str) -> tuple[str, list[str]] | None:
    """The commit and listed ids of one of our comments read back from its Markdown (when
    the database had no record of it): each numbered line's permalink gives the path and
    commit, its code span the qualified name. None when it is not such a comment."""
    if not body.startswith(MARKER):
        return None
    sha, ids = None, []
    for line in body.splitlines():
        m = _LIST_LINE.match(line)
        if not m or m.group("name").endswith("…"):
            continue
        sha = sha or m.group("sha")
        ids.append(f"{unquote(m.group('path'))}:{m.group('name')}")
    return (sha, ids) if sha and ids else None


# --- the job -----------------------------------------------------------------------------


def score_fix(job: FixJob, deps: Deps, store: Store) -> Outcome:
    """Run one scoring job (see the module docstring)."""
    with deps.github(job.installation_id) as gh:
        if job.pull_number is not None:
            return _score_pull(gh, deps, store, job, job.pull_number, only=None)
        assert job.issue_number is not None
        answered = _comment_of(gh, deps, store, job, job.issue_number)
        if answered is None:
            return Outcome("skipped", "the app did not answer this issue")
        pulls = gh.closing_pull_numbers(job.owner, job.name, job.issue_number)
        if not pulls:
            return Outcome("skipped", "no merged pull request known to have closed it "
                                         "(the pull_request event scores keyword closes)")
        out = Outcome("scored")
        for number in pulls:
            res = _score_pull(gh, deps, store, job, number, only=job.issue_number)
            out.fixes.extend(res.fixes)
        return out


def _score_pull(gh: GitHubClient, deps: Deps, store: Store, job: FixJob, number: int,
                only: int | None) -> Outcome:
    owner, name = job.owner, job.name
    pr = gh.pull_request(owner, name, number)
    if not pr.merged:
        return Outcome("skipped", "the pull request was closed without being merged")
    host = urlparse(pr.html_url).netloc or "github.com"
    texts = [pr.title, pr.body or "", *gh.pull_commit_messages(owner, name, number)]
    issues = closed_issues(texts, job.repo, host=host)
    graphql = gh.closing_issue_numbers(owner, name, number)
    for n in graphql or []:
        if n not in issues:
            issues.append(n)
    if only is not None:
        issues = [n for n in issues if n == only] or [only]
    if not issues:
        return Outcome("skipped", "the pull request closes no issue")
    answered = [(n, c) for n in issues if (c := _comment_of(gh, deps, store, job, n))]
    if not answered:
        return Outcome("skipped", "the app answered none of the issues it closes")
    files = gh.pull_files(owner, name, number)
    if len(files) > deps.settings.fix_max_files:
        return Outcome("skipped", f"{len(files)} files changed, above "
                                     f"SPIDER_FIX_MAX_FILES={deps.settings.fix_max_files}")
    patch = patch_of(files)
    base = pr.base.sha
    out = Outcome("scored")
    for issue_number, comment in answered:
        fix = store.fix(job.repo, issue_number, number)
        if fix is None:
            score = _score(gh, deps, job.repo, base, patch, comment)
            fix = ScoredFix(
                repo=job.repo, issue_number=issue_number, pull_number=number,
                comment_commit=comment.commit_sha, base_commit=base, k=comment.k,
                listed_ids=list(comment.listed_ids), changed_functions=score.changed,
                moved=score.moved, first_rank=score.first_rank, recall_at_k=score.recall,
                outcome=score.outcome,
                problem_statement=f"{comment.issue_title}\n{comment.issue_body}".strip(),
                patch=patch,
            )
            if store.record_fix(fix):
                RECORDER.count("spider_fixes", fix.outcome)
                log.info("fix scored", extra={"issue": issue_number, "pull": number,
                                              "outcome": fix.outcome, "rank": fix.first_rank})
            else:  # another worker recorded it meanwhile: that record wins
                fix = store.fix(job.repo, issue_number, number) or fix
        out.fixes.append({"issue": issue_number, "pull": number, "outcome": fix.outcome,
                             "first_rank": fix.first_rank, "recall_at_k": fix.recall_at_k})
        if fix.outcome != "no_function_changed":
            score = compare(fix.listed_ids, fix.k, fix.changed_functions, fix.moved)
            _edit_comment(gh, job, comment.comment_id, fix_line(number, score))
    return out


def _comment_of(gh: GitHubClient, deps: Deps, store: Store, job: FixJob,
                issue_number: int) -> CommentRecord | None:
    """Our comment on the issue: the database's record, else read back from GitHub."""
    rec = store.comment(job.repo, issue_number)
    if rec is not None:
        return rec
    try:
        ours = comments.find_ours(gh.comments(job.owner, job.name, issue_number), deps.settings.github_app_id)
    except GitHubRefused as exc:  # not an issue (404), or gone
        log.info("no comment to score", extra={"issue": issue_number, "error": str(exc)})
        return None
    parsed = parse_comment(ours.body or "") if ours is not None else None
    if ours is None or parsed is None:
        return None
    sha, ids = parsed
    issue = gh.issue(job.owner, job.name, issue_number)
    log.info("comment read back from GitHub (no record)", extra={"issue": issue_number})
    return CommentRecord(job.repo, issue_number, ours.id, sha, len(ids), ids,
                         issue.title, issue.body or "")


def _score(gh: GitHubClient, deps: Deps, repo: str, base: str, patch: str,
           comment: CommentRecord) -> Score:
    """Changed functions at ``base`` and the comparison with the comment's list."""
    s = deps.settings
    if not spider.fix_paths(patch):
        return compare(comment.listed_ids, comment.k, [])
    with locks.held(deps.redis, locks.repo_lock_name(repo), ttl_s=s.lease_ttl_s,
                    wait_s=s.lock_wait_s):
        base_co = deps.mirrors.fetch_commit(repo, base, gh.token)
        then_co = (deps.mirrors.fetch_commit(repo, comment.commit_sha, gh.token)
                   if comment.commit_sha and comment.commit_sha != base else base_co)
    fix = spider.match_fix(spider.open_source(base_co.git_dir, base), patch,
                           comment.listed_ids, s.engine,
                           listed_at=spider.open_source(then_co.git_dir, then_co.sha))
    return compare(comment.listed_ids, comment.k, fix.changed, fix.moved)


def _edit_comment(gh: GitHubClient, job: FixJob, comment_id: int, line: Markdown) -> None:
    """Put the fix line in our comment, in place (nothing sent when it is already there)."""
    if comments.amend(gh, job.owner, job.name, comment_id,
                      lambda body: with_fix_line(body, line)):
        log.info("comment updated with the fix", extra={"comment_id": comment_id})
