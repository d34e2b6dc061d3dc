"""History backtest: turn a repository's own fix commits into a benchmark dataset.

A commit qualifies when it is not a merge, its message references an issue (``#123``,
``GH-123``) or says fix/bug, and the precise patch rule maps it onto between 1 and
``max_functions`` functions of its parent's graph. The query is the commit message with
trailers, issue numbers, issue/PR links and commit hashes removed; the repository state is
the parent commit; the ground truth is the set of changed functions. Any language the
graph parses works: the mapping only needs function line ranges.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from spider.commit_messages import FIX_WORD, ISSUE_REF, SQUASH_PR_SUFFIX, clean_message
from spider.errors import NoSourceFiles, SpiderError
from spider.eval.dataset import Instance
from spider.graph.model import CodeGraph
from spider.patch import (
    literal_globs,
    parse_patch,
    patch_ground_truth,
    patch_paths,
)
from spider.settings import EngineSettings
from spider.source import GitSource, SourceTree, git

log = logging.getLogger(__name__)

GraphBuilder = Callable[[SourceTree, EngineSettings], CodeGraph]

DEFAULT_MAX_INSTANCES = 100
DEFAULT_MAX_FUNCTIONS = 5  # a fix touching more functions is a refactor, not a localization
DEFAULT_MAX_FILES = 20  # skip huge diffs before parsing anything
DEFAULT_SCAN_LIMIT = 5000  # commits examined at most, so a long history ends in bounded time
MIN_QUERY_CHARS = 12  # after cleaning, shorter messages say nothing to search with
RECORD_SEP = "\x1e"
FIELD_SEP = "\x00"


@dataclass(frozen=True)
class Commit:
    """One commit of ``git log``."""

    sha: str
    parents: tuple[str, ...]
    date: str
    message: str


def is_fix_message(message: str) -> bool:
    """Whether a commit message references an issue or says fix/bug.

    A ``(#123)`` closing the subject line is the pull-request number a squash merge
    appends, not an issue reference, so it does not count on its own.
    """
    subject, _, body = message.strip().partition("\n")
    subject = SQUASH_PR_SUFFIX.sub("", subject)
    text = f"{subject}\n{body}"
    return bool(ISSUE_REF.search(text) or FIX_WORD.search(text))


def iter_commits(
    repo: Path, rev: str = "HEAD", since: str | None = None, limit: int = DEFAULT_SCAN_LIMIT
) -> Iterator[Commit]:
    """Non-merge commits reachable from ``rev``, newest first."""
    args = [
        "log",
        "--no-merges",
        f"--max-count={limit}",
        "--format=%H%x00%P%x00%aI%x00%B%x1e",  # git expands %x00/%x1e: argv holds no NUL
    ]
    if since:
        args.append(f"--since={since}")
    args.append(rev)
    raw = git(args, repo).decode("utf-8", "replace")
    for rec in raw.split(RECORD_SEP):
        rec = rec.strip("\n")
        if not rec:
            continue
        parts = rec.split(FIELD_SEP, 3)
        if len(parts) < 4:
            continue
        sha, parents, date, message = parts
        yield Commit(sha.strip(), tuple(parents.split()), date, message)


def commit_patch(repo: Path, commit: Commit) -> str:
    """The commit's diff against its parent, renames detected (old paths kept)."""
    out = git(
        ["diff", "-M", "--no-color", "--no-ext-diff", "-U3", commit.parents[0], commit.sha],
        repo,
    )
    return out.decode("utf-8", "replace")


def _repo_label(repo: Path) -> str:
    """``owner/name`` for a local path: ``.../owner+name/repo`` or ``local/<dir>``."""
    parts = [p for p in repo.resolve().parts if p not in ("/", "repo", ".git")]
    last = parts[-1] if parts else "repo"
    last = last.removesuffix(".git")
    if "+" in last:
        owner, _, name = last.partition("+")
        return f"{owner}/{name}"
    return f"local/{last}"


def mine_history(
    repo: str | Path,
    settings: EngineSettings,
    *,
    max_instances: int = DEFAULT_MAX_INSTANCES,
    max_functions: int = DEFAULT_MAX_FUNCTIONS,
    max_files: int = DEFAULT_MAX_FILES,
    since: str | None = None,
    rev: str = "HEAD",
    scan_limit: int = DEFAULT_SCAN_LIMIT,
    repo_name: str | None = None,
    graph_builder: GraphBuilder | None = None,
) -> list[Instance]:
    """Fix commits of ``repo`` as benchmark instances (newest first).

    ``graph_builder`` defaults to :func:`spider.graph.build_graph`.

    Long because its signature carries the miner's filters; the body is one pass over the
    commits.
    """
    if graph_builder is None:
        from spider.graph import build_graph

        graph_builder = build_graph

    path = Path(repo)
    label = repo_name or _repo_label(path)
    out: list[Instance] = []
    for commit in iter_commits(path, rev, since, scan_limit):
        if len(out) >= max_instances:
            break
        if len(commit.parents) != 1 or not is_fix_message(commit.message):
            continue
        query = clean_message(commit.message)
        if len(query) < MIN_QUERY_CHARS:
            continue
        try:
            patch = commit_patch(path, commit)
            files = parse_patch(patch)
            paths = patch_paths(files)
            if not paths or len(files) > max_files:
                continue
            source = GitSource(path, commit.parents[0])
            narrow = settings.model_copy(update={"include": literal_globs(paths)})
            graph = graph_builder(source, narrow)

            def read_old(ps: list[str], source: GitSource = source) -> dict[str, str]:
                return {p: b.decode("utf-8", "replace") for p, b in source.read_many(ps)}

            truth = patch_ground_truth(patch, graph, "precise", read_old=read_old)
        except NoSourceFiles:  # only tests, docs or unsupported files changed: normal
            continue
        except SpiderError as exc:
            log.warning("skipping %s: %s", commit.sha[:12], exc)
            continue
        if not 1 <= len(truth) <= max_functions:
            continue
        out.append(
            Instance(
                instance_id=f"{label.replace('/', '__')}-{commit.sha[:12]}",
                repo=label,
                base_commit=commit.parents[0],
                problem_statement=query,
                edit_functions=truth,
                patch=patch,
                extra={
                    "fix_commit": commit.sha,
                    "created_at": commit.date,
                    "mined_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                },
            )
        )
    return out
