"""``spider-bot-replay``: push one webhook payload through the real bot → Redis → worker path
against a local repository, and print the Markdown comment that would be posted.

Nothing talks to GitHub: a fake GitHub API on 127.0.0.1 serves the repository's metadata,
its ``.github/spider.yml`` and the issue from the payload, and records the comment. The
bot (uvicorn) and the worker (Celery) run as real subprocesses with a private Redis.

    spider-bot-replay tests/samples/issues_opened/payload.json --repo .

The fix loop too: ``--fix-patch FILE`` then merges a pull request ("Fixes #N") whose files
are that diff (against the repository's branch head), the worker scores it, edits the
comment, and ``spider-bot report`` prints the table (``--report-html`` adds the plots):

    spider-bot-replay payload.json --repo . --fix-patch fix.diff --report-html report.html

And a repository's history from SWE-bench-shaped rows: each row becomes an issue
(``problem_statement``) answered at ``base_commit``, then a merged pull request whose files
are the row's gold ``patch``, scored through the same path:

    spider-bot-replay --dataset /work/shared/bench/swe-bench-lite-dev.jsonl \
        --only-repo psf/requests --report-html requests.html
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from spider_devkit.devstack import INSTALLATION_ID, DevStack
from spider_devkit.fake_github import files_from_diff

STACK_OWNED = frozenset({
    "SPIDER_REDIS_URL", "SPIDER_WEBHOOK_SECRET", "SPIDER_GITHUB_APP_ID", "SPIDER_GITHUB_PRIVATE_KEY",
    "SPIDER_GITHUB_PRIVATE_KEY_PATH", "SPIDER_GITHUB_API_URL", "SPIDER_GIT_URL_TEMPLATE",
    "SPIDER_CACHE_DIR", "SPIDER_DATABASE_URL",
})  # set by the replay's own stack; inheriting them would point it at real services


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="spider-bot-replay", description=__doc__.split("\n\n")[0])
    p.add_argument("payload", type=Path, nargs="?",
                   help="a webhook payload (JSON), e.g. from tests/samples/ (not with --dataset)")
    p.add_argument("--repo", type=Path, default=Path("."),
                   help="local git repository standing in for the payload's repository")
    p.add_argument("--event", choices=["issues", "issue_comment"],
                   help="the X-GitHub-Event (default: guessed from the payload)")
    p.add_argument("--redis-url", help="use this Redis instead of starting a private redis-server")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for the worker")
    p.add_argument("--workdir", type=Path, help="keep logs here (default: a temporary folder)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="extra SPIDER_* setting for the worker, e.g. --set SPIDER_SELECTOR=none")
    fix = p.add_argument_group("the fix loop")
    fix.add_argument("--fix-patch", type=Path,
                     help="after the comment, merge a pull request with this diff and score it")
    fix.add_argument("--dataset", type=Path,
                     help="SWE-bench-shaped JSONL: replay each row as issue, comment, merged fix")
    fix.add_argument("--only-repo", action="append", default=[], metavar="OWNER/NAME",
                     help="only the dataset rows of this repository (repeatable)")
    fix.add_argument("--limit", type=int, help="at most this many dataset rows")
    fix.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"),
                     help="where {owner}+{name}/repo git mirrors of the dataset's repositories are")
    fix.add_argument("--database-url",
                     help="record into this database (default: SQLite in the work folder)")
    fix.add_argument("--report-html", type=Path, help="write the report with its plots here")
    fix.add_argument("--export", type=Path, help="write the scored fixes as bench JSONL here")
    args = p.parse_args(argv)
    if (args.payload is None) == (args.dataset is None):
        p.error("give a payload, or --dataset")
    return args


def _git_branch(repo: Path) -> str:
    out = subprocess.run(["git", "symbolic-ref", "--short", "HEAD"], cwd=repo, check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


def prepare(stack: DevStack, payload: dict[str, Any], repo: Path) -> str:
    """Load the payload's repository, issue and comment into the fake GitHub; the event name."""
    full_name = payload["repository"]["full_name"]
    stack.fake.add_repo(full_name, repo, _git_branch(repo))
    payload.setdefault("installation", {})["id"] = INSTALLATION_ID
    issue = payload["issue"]
    user = issue.get("user") or {}
    stack.fake.add_issue(
        full_name, int(issue["number"]), issue.get("title", ""), issue.get("body"),
        user=user.get("login", "octocat"), user_type=user.get("type", "User"),
        labels=[lbl["name"] for lbl in issue.get("labels", []) if isinstance(lbl, dict)],
        state=issue.get("state", "open"), locked=bool(issue.get("locked")),
        pull_request="pull_request" in issue,
    )
    if "comment" in payload:
        c = payload["comment"]
        stack.fake.add_comment(full_name, int(issue["number"]), c.get("body", ""),
                               user=(c.get("user") or {}).get("login", "maintainer"),
                               association=c.get("author_association", "NONE"),
                               comment_id=int(c["id"]))
        return "issue_comment"
    return "issues"


def merge_fix(stack: DevStack, repo: str, issue: int, pull: int, patch: str, base_sha: str,
              timeout: float) -> dict[str, Any]:
    """Merge a pull request "Fixes #issue" with ``patch`` into the fake GitHub, deliver its
    ``pull_request`` event and wait for the scoring job; its outcome."""
    title = f"Fix #{issue}"
    stack.fake.add_pull(repo, pull, title, f"Fixes #{issue}.", base_sha=base_sha,
                        files=files_from_diff(patch), commits=[title])
    payload = {"action": "closed", "number": pull,
               "pull_request": {"number": pull, "merged": True, "state": "closed"},
               "repository": {"full_name": repo}, "installation": {"id": INSTALLATION_ID},
               "sender": {"login": "maintainer", "type": "User"}}
    answer = stack.deliver("pull_request", payload)
    if answer.status_code >= 300 or answer.json().get("status") != "queued":
        raise RuntimeError(f"the bot did not queue the fix: {answer.status_code} {answer.text}")
    return stack.result(answer.json()["task_id"], timeout=timeout)


def report(database_url: str, html: Path | None, export: Path | None) -> str:
    """``spider-bot report`` over the replay's database: the Markdown table."""
    from worker import report as rp
    from worker.store import Store

    store = Store(database_url)
    try:
        fixes = store.fixes()
        table = rp.rows(store.comments(), fixes)
        if html is not None:
            rp.write_html(html, table, fixes)
        if export is not None:
            rp.write_export(export, fixes)
        return rp.table_markdown(table)
    finally:
        store.close()


@contextmanager
def _stack(args: argparse.Namespace, repo_template: str, workdir: Path,
           db_url: str) -> Iterator[DevStack]:
    # The engine's settings come from the environment as usual; the stack's own do not.
    extra = {k: v for k, v in os.environ.items()
             if k.startswith("SPIDER_") and k not in STACK_OWNED}
    extra.update(item.split("=", 1) for item in args.set)
    extra.setdefault("SPIDER_LOG_JSON", "false")
    extra["SPIDER_DATABASE_URL"] = db_url
    cache = Path(os.environ.get("SPIDER_CACHE_DIR") or Path.home() / ".cache" / "spider")
    with DevStack(workdir, git_url_template=repo_template, redis_url=args.redis_url,
                  cache_dir=cache, env=extra) as stack:
        yield stack


def _git(cwd: Path, *argv: str) -> str:
    return subprocess.run(["git", *argv], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def replay_dataset(args: argparse.Namespace, workdir: Path, db_url: str) -> int:
    """Each row: an issue answered at its base commit, then its gold patch merged as a fix."""
    from spider.eval.dataset import read_dataset, select_instances

    rows = select_instances(read_dataset(args.dataset), repos=args.only_repo or None,
                            limit=args.limit)
    rows = [r for r in rows if r.patch]
    if not rows:
        print("error: no dataset row with a patch matches", file=sys.stderr)
        return 2
    # one bare repository per dataset repository, borrowing the mirror's objects; its
    # default branch is moved to each row's base commit before the row's issue is opened
    for repo in dict.fromkeys(r.repo for r in rows):
        owner, name = repo.split("/")
        mirror = args.mirrors / f"{owner}+{name}" / "repo"
        objects = mirror / "objects" if (mirror / "objects").is_dir() else mirror / ".git" / "objects"
        if not objects.is_dir():
            print(f"error: no mirror of {repo} at {mirror}", file=sys.stderr)
            return 2
        bare = workdir / "repos" / owner / name
        bare.mkdir(parents=True, exist_ok=True)
        _git(bare, "init", "-q", "--bare", "-b", "main")
        (bare / "objects" / "info" / "alternates").write_text(str(objects.resolve()) + "\n")
    failures = 0
    with _stack(args, str(workdir / "repos" / "{owner}" / "{name}"), workdir, db_url) as stack:
        for number, row in enumerate(rows, start=1):
            owner, name = row.repo.split("/")
            bare = workdir / "repos" / owner / name
            _git(bare, "update-ref", "refs/heads/main", row.base_commit)
            stack.fake.add_repo(row.repo, bare, "main")
            title, _, body = row.problem_statement.strip().partition("\n")
            stack.fake.add_issue(row.repo, number, title.strip()[:256] or row.instance_id,
                                 body.strip())
            payload = {"action": "opened", "issue": {"number": number, "state": "open",
                                                     "user": {"login": "reporter"}},
                       "repository": {"full_name": row.repo},
                       "installation": {"id": INSTALLATION_ID},
                       "sender": {"login": "reporter", "type": "User"}}
            answer = stack.deliver("issues", payload)
            if answer.status_code >= 300 or answer.json().get("status") != "queued":
                print(f"{row.instance_id}: bot answered {answer.status_code}", file=sys.stderr)
                failures += 1
                continue
            outcome = stack.result(answer.json()["task_id"], timeout=args.timeout)
            print(f"{row.instance_id}: comment {outcome['status']} at {outcome.get('sha')}",
                  file=sys.stderr)
            if outcome["status"] not in ("created", "updated", "unchanged"):
                failures += 1
                continue
            scored = merge_fix(stack, row.repo, number, 1000 + number, row.patch or "",
                               row.base_commit, args.timeout)
            print(f"{row.instance_id}: fix {scored['status']} {scored.get('recorded')}",
                  file=sys.stderr)
    print(report(db_url, args.report_html, args.export), end="")
    if args.report_html:
        print(f"HTML report: {args.report_html}", file=sys.stderr)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    """Run the replay; exit 0 with the Markdown on stdout, 1 if nothing would be posted."""
    args = _parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="spider-replay-"))
    db_url = args.database_url or f"sqlite:///{workdir.resolve() / 'spider-bot.db'}"
    if args.dataset is not None:
        try:
            return replay_dataset(args, workdir, db_url)
        finally:
            if args.workdir is None:
                shutil.rmtree(workdir, ignore_errors=True)
    payload = json.loads(args.payload.read_text())
    repo = args.repo.resolve()
    if not (repo / ".git").exists() and not (repo / "HEAD").is_file():
        print(f"error: {repo} is not a git repository", file=sys.stderr)
        return 2
    try:
        with _stack(args, str(repo), workdir, db_url) as stack:
            event = prepare(stack, payload, repo)
            answer = stack.deliver(args.event or event, payload)
            print(f"bot answered {answer.status_code}: {answer.text}", file=sys.stderr)
            status = answer.json().get("status") if answer.status_code < 300 else None
            if status != "queued":
                return 1
            outcome = stack.result(answer.json()["task_id"], timeout=args.timeout)
            posted = stack.fake.bot_comments(payload["repository"]["full_name"],
                                             int(payload["issue"]["number"]))
            if not posted:
                print(f"worker: {outcome['status']}: {outcome.get('reason')}", file=sys.stderr)
                return 1
            print(f"worker: comment {outcome['status']} at {outcome['sha']}", file=sys.stderr)
            if args.fix_patch is not None:
                full_name = payload["repository"]["full_name"]
                scored = merge_fix(stack, full_name, int(payload["issue"]["number"]),
                                   int(payload["issue"]["number"]) + 1000,
                                   args.fix_patch.read_text(), str(outcome["sha"]), args.timeout)
                print(f"worker: fix {scored['status']} {scored.get('recorded')}", file=sys.stderr)
                posted = stack.fake.bot_comments(full_name, int(payload["issue"]["number"]))
                print(posted[-1].body, end="")
                print("\n---\n" + report(db_url, args.report_html, args.export), end="")
                return 0
            print(posted[-1].body, end="")
            return 0
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
