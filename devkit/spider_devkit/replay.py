"""``spider-bot-replay``: push one webhook payload through the real bot → Redis → worker path
against a local repository, and print the Markdown comment that would be posted.

Nothing talks to GitHub: a fake GitHub API on 127.0.0.1 serves the repository's metadata,
its ``.github/spider.yml`` and the issue from the payload, and records the comment. The
bot (uvicorn) and the worker (Celery) run as real subprocesses with a private Redis.

    spider-bot-replay tests/samples/issues_opened/payload.json --repo .
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from spider_devkit.devstack import INSTALLATION_ID, DevStack

STACK_OWNED = frozenset({
    "SPIDER_REDIS_URL", "SPIDER_WEBHOOK_SECRET", "SPIDER_GITHUB_APP_ID", "SPIDER_GITHUB_PRIVATE_KEY",
    "SPIDER_GITHUB_PRIVATE_KEY_PATH", "SPIDER_GITHUB_API_URL", "SPIDER_GIT_URL_TEMPLATE",
    "SPIDER_CACHE_DIR",
})  # set by the replay's own stack; inheriting them would point it at real services


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="spider-bot-replay", description=__doc__.split("\n\n")[0])
    p.add_argument("payload", type=Path, help="a webhook payload (JSON), e.g. from tests/samples/")
    p.add_argument("--repo", type=Path, default=Path("."),
                   help="local git repository standing in for the payload's repository")
    p.add_argument("--event", choices=["issues", "issue_comment"],
                   help="the X-GitHub-Event (default: guessed from the payload)")
    p.add_argument("--redis-url", help="use this Redis instead of starting a private redis-server")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for the worker")
    p.add_argument("--workdir", type=Path, help="keep logs here (default: a temporary folder)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="extra SPIDER_* setting for the worker, e.g. --set SPIDER_SELECTOR=none")
    return p.parse_args(argv)


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


def main(argv: list[str] | None = None) -> int:
    """Run the replay; exit 0 with the Markdown on stdout, 1 if nothing would be posted."""
    args = _parse_args(argv)
    payload = json.loads(args.payload.read_text())
    repo = args.repo.resolve()
    if not (repo / ".git").exists() and not (repo / "HEAD").is_file():
        print(f"error: {repo} is not a git repository", file=sys.stderr)
        return 2
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="spider-replay-"))
    # The engine's settings come from the environment as usual; the stack's own do not.
    extra = {k: v for k, v in os.environ.items()
             if k.startswith("SPIDER_") and k not in STACK_OWNED}
    extra.update(item.split("=", 1) for item in args.set)
    extra.setdefault("SPIDER_LOG_JSON", "false")
    cache = Path(os.environ.get("SPIDER_CACHE_DIR") or Path.home() / ".cache" / "spider")
    try:
        with DevStack(workdir, git_url_template=str(repo), redis_url=args.redis_url,
                      cache_dir=cache, env=extra) as stack:
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
            print(posted[-1].body, end="")
            return 0
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
