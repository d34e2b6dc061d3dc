"""End to end (real bot, Celery worker, Redis, fake GitHub, the real engine): index jobs
never go before a waiting issue job, and an issue on a never-indexed repository is
answered from a partial index, then the full index runs and the comment is edited."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contract import index_state
from spider_devkit.devstack import INSTALLATION_ID, DevStack
from tests.worker.helpers import git, make_repo

from .helpers import issue_payload, new_delivery, wait_for_record

pytestmark = pytest.mark.slow

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
TITLE = "Header values containing a colon are cut off"
BODY = ("parse_header splits the header line at every colon, so `Host: example.com:8080` loses "
        "the port. Session.read_headers then returns the wrong value.")
ENV = {"SPIDER_K": "3", "SPIDER_SELECTOR": "none", "SPIDER_LOG_JSON": "true",
       "SPIDER_GITHUB_BACKOFF_S": "0.2", "SPIDER_RETRY_BACKOFF_S": "1"}


def push_payload(repo: str, path: Path) -> dict[str, Any]:
    p = copy.deepcopy(json.loads((SAMPLES / "push" / "payload.json").read_text()))
    p["repository"].update(full_name=repo, name=repo.split("/")[1], default_branch="main")
    p["installation"]["id"] = INSTALLATION_ID
    p["after"] = git(path, "rev-parse", "HEAD")
    return p


def _count(stack: DevStack, msg: str) -> int:
    return sum(r.get("msg") == msg for r in stack.log_records("worker"))


def _wait_until(done: Callable[[], bool], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError("the worker did not get there")
        time.sleep(0.1)


def test_a_waiting_issue_job_goes_before_a_burst_of_index_jobs(tmp_path: Path) -> None:
    """Jobs queued while no worker runs; then one worker process on every queue starts.
    Its first job is the issue's, though five index jobs were queued before it."""
    with DevStack(tmp_path, env=ENV, workers=0) as stack:
        index_tasks = []
        for i in range(5):
            repo = f"acme/lib{i}"
            make_repo(tmp_path / "repos" / repo)
            stack.add_repo(repo, tmp_path / "repos" / repo)
            resp = stack.deliver("push", push_payload(repo, tmp_path / "repos" / repo))
            assert resp.json()["status"] == "queued", resp.text
            index_tasks.append(resp.json()["task_id"])
        make_repo(tmp_path / "repos" / "acme/httpkit")
        stack.add_repo("acme/httpkit", tmp_path / "repos" / "acme/httpkit")
        stack.fake.add_issue("acme/httpkit", 1, TITLE, BODY)
        resp = stack.deliver("issues", issue_payload("acme/httpkit", 1, TITLE, BODY))
        issue_task = resp.json()["task_id"]
        stack.start_worker("worker")
        assert stack.result(issue_task)["status"] == "created"
        for task_id in index_tasks:
            assert stack.result(task_id)["status"] == "indexed"
        # the answer on the new repository ranked from its head alone and queued its history
        # window as one more index job (queued last), which then runs the issue job again:
        # wait for both
        _wait_until(lambda: _count(stack, "repository indexed") >= 6
                    and _count(stack, "job done") >= 2)
        done = [r for r in stack.log_records("worker")
                if r.get("msg") in ("job done", "repository indexed")]
        assert done[0]["msg"] == "job done", done
        # the five pushes and the history window: all after the answer, none before
        assert [r["msg"] for r in done] == (["job done"] + ["repository indexed"] * 6
                                            + ["job done"]), done
        fetched = [r["repo"] for r in stack.log_records("worker") if r.get("msg") == "mirror fetched"]
        assert fetched[0] == "acme/httpkit", fetched
        assert sorted(set(fetched)) == ["acme/httpkit"] + [f"acme/lib{i}" for i in range(5)]


def test_a_cold_repository_is_answered_from_a_partial_index_then_indexed(tmp_path: Path) -> None:
    repo = "acme/httpkit"
    path = tmp_path / "repos" / repo
    make_repo(path)
    env = {**ENV, "SPIDER_ISSUE_EMBED_MAX": "3", "SPIDER_ISSUE_COLD_POOL": "2"}  # 8 functions
    with DevStack(tmp_path, env=env) as stack:
        stack.add_repo(repo, path)
        stack.fake.add_issue(repo, 1, TITLE, BODY)
        delivery = new_delivery()
        resp = stack.deliver("issues", issue_payload(repo, 1, TITLE, BODY), delivery_id=delivery)
        first = stack.result(resp.json()["task_id"])
        assert first["status"] == "created", first
        (comment,) = stack.fake.bot_comments(repo, 1)
        assert "Made from a partial index (the repository is being indexed: 2 of" in comment.body
        assert "this comment is updated once indexing completes" in comment.body
        indexed = stack.result(f"index:{repo}:{delivery}")
        assert indexed["status"] == "indexed" and indexed["sha"] == git(path, "rev-parse", "HEAD")
        assert index_state.indexed(stack.redis_client(), repo).sha == indexed["sha"]
        again = stack.result(f"{delivery}:indexed")
        assert again["status"] == "updated" and again["comment_id"] == comment.id
        (comment,) = stack.fake.bot_comments(repo, 1)
        assert "partial index" not in comment.body
        # a push now: indexed at an older commit, the next issue embeds only what changed
        (path / "httpkit" / "extra.py").write_text("def extra_header(line):\n    return line\n")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", "more")
        stack.fake.add_issue(repo, 2, TITLE, BODY)
        t0 = time.monotonic()
        resp = stack.deliver("issues", issue_payload(repo, 2, TITLE, BODY))
        second = stack.result(resp.json()["task_id"])
        assert second["status"] == "created" and time.monotonic() - t0 < 60
        assert "partial index" not in stack.fake.bot_comments(repo, 2)[0].body
        wait_for_record(stack, ["worker"], lambda r: r.get("msg") == "job done", 5)
