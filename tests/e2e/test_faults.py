"""Faults with real processes: two Celery workers, a Redis that keeps an fsynced append-only
file, uvicorn serving the bot, the fake GitHub. Workers are SIGKILLed mid-index, Redis is
killed and restarted with jobs queued, GitHub fails in every way it does; each time the
issue ends with exactly one comment, or none and a log line saying the job gave up.

The engine is kept cheap (BM25, no selector, K=3) and the timeouts short, so the Redis
transport hands a dead worker's job to the other after 18 s rather than an hour.
"""

from __future__ import annotations

import re
import shutil
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from spider_devkit.devstack import DevStack
from tests.hostile import many_files_repo
from tests.worker.helpers import make_repo

from .helpers import (
    assert_logs_hold_no_secret,
    command_payload,
    issue_payload,
    records_of,
    wait_for_record,
)

pytestmark = pytest.mark.slow

REPO = "acme/httpkit"
K = 3
TITLE = "Header values containing a colon are cut off"
BODY = ("parse_header splits the header line at every colon, so `Host: example.com:8080` loses "
        "the port, and Session.read_headers returns the wrong value.")
VISIBILITY_S = 18
GITHUB_ATTEMPTS = 2
MAX_RETRIES = 3
ENV = {
    "SPIDER_K": str(K),
    "SPIDER_SELECTOR": "none",
    "SPIDER_FIRST_STAGE": "bm25",
    "SPIDER_LOG_JSON": "true",
    "SPIDER_TASK_SOFT_TIME_LIMIT_S": "12",
    "SPIDER_TASK_TIME_LIMIT_S": "15",
    "SPIDER_BROKER_VISIBILITY_TIMEOUT_S": str(VISIBILITY_S),
    "SPIDER_BROKER_RESTORE_INTERVAL_S": "1",
    "SPIDER_LEASE_TTL_S": "3",
    "SPIDER_MAX_RETRIES": str(MAX_RETRIES),
    "SPIDER_RETRY_BACKOFF_S": "0.5",
    "SPIDER_RETRY_BACKOFF_MAX_S": "2",
    "SPIDER_DEFER_DELAY_S": "0.5",
    "SPIDER_DEFER_DELAY_MAX_S": "2",
    "SPIDER_GITHUB_ATTEMPTS": str(GITHUB_ATTEMPTS),
    "SPIDER_GITHUB_BACKOFF_S": "0.1",
    "SPIDER_GITHUB_TIMEOUT_S": "2",
    "SPIDER_GITHUB_MAX_INLINE_WAIT_S": "3",
}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    workdir = tmp_path_factory.mktemp("faults")
    make_repo(workdir / "repos" / REPO)
    with DevStack(workdir, env=ENV, workers=2, persistent_redis=True) as s:
        s.add_repo(REPO, workdir / "repos" / REPO)
        yield s


def open_issue(stack: DevStack, number: int, repo: str = REPO) -> str:
    """File the issue on the fake and deliver ``issues.opened``; return the task id."""
    stack.fake.add_issue(repo, number, TITLE, BODY)
    resp = stack.deliver("issues", issue_payload(repo, number, TITLE, BODY))
    assert resp.status_code == 202 and resp.json()["status"] == "queued", resp.text
    return str(resp.json()["task_id"])


def created(stack: DevStack, number: int, repo: str = REPO) -> list[Any]:
    """The successful comment creations on an issue (a lost answer is still a creation)."""
    return [c for c in stack.fake.requests("POST", path=f"/repos/{repo}/issues/{number}/comments")
            if c.status == 201]


def assert_one_full_comment(stack: DevStack, number: int, repo: str = REPO) -> None:
    (comment,) = stack.fake.bot_comments(repo, number)
    links = re.findall(rf"\(https://github\.com/{repo}/blob/[0-9a-f]{{40}}/[^)]+\)", comment.body)
    assert len(links) == K and comment.body.rstrip().endswith("</sub>")  # complete, never partial


def serve_big_repo(stack: DevStack, name: str, files: int = 3000) -> str:
    """A repository of ``files`` small modules: indexing it takes a few seconds, long enough
    to kill a worker in the middle. A fresh one per test (graphs are cached by commit)."""
    repo = f"acme/{name}"
    built = many_files_repo(stack.workdir / "build" / name, files)
    path = stack.workdir / "repos" / repo
    shutil.move(str(built), path)
    stack.add_repo(repo, path)
    return repo


def mid_index(stack: DevStack, delivery: str) -> str:
    """Wait until a worker has fetched the job's repository (indexing starts next); return
    which worker."""
    name, _ = wait_for_record(stack, stack.worker_names, lambda r: r.get("delivery_id") == delivery
                              and r.get("msg") == "mirror fetched")
    return name


def messages(stack: DevStack, worker: str, delivery: str) -> list[str]:
    return [str(r.get("msg")) for r in records_of(stack, worker, delivery)]


def test_two_events_for_one_issue_at_once_make_one_comment(stack: DevStack) -> None:
    number = 1
    stack.fake.add_issue(REPO, number, TITLE, BODY)
    command = stack.fake.add_comment(REPO, number, "/spider k=2", association="MEMBER")
    answers: list[Any] = []
    deliveries = [("issues", issue_payload(REPO, number, TITLE, BODY)),
                  ("issue_comment", command_payload(REPO, number, command.id, command.body))]
    threads = [threading.Thread(target=lambda e=e, p=p: answers.append(stack.deliver(e, p)))
               for e, p in deliveries]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(a.json()["status"] for a in answers) == ["queued", "queued"]
    outcomes = sorted(stack.result(a.json()["task_id"])["status"] for a in answers)
    assert outcomes[0] == "created" and outcomes[1] in ("unchanged", "updated"), outcomes
    assert len(stack.fake.bot_comments(REPO, number)) == 1
    assert len(created(stack, number)) == 1


def test_sigkill_of_a_whole_worker_mid_index(stack: DevStack) -> None:
    """The worker and its pool process die at once (a lost machine): Redis still holds the
    job as unacknowledged, and the other worker takes it once the visibility timeout ends."""
    repo = serve_big_repo(stack, "killed")
    task = open_issue(stack, 1, repo)
    victim = mid_index(stack, task)
    stack.kill_worker(victim)
    killed = time.monotonic()
    assert "job done" not in messages(stack, victim, task)  # it died indexing
    outcome = stack.result(task, timeout=VISIBILITY_S + 90)
    assert outcome["status"] == "created", outcome
    print(f"\nwhole worker killed: comment {time.monotonic() - killed:.1f} s later")
    survivor = next(n for n in stack.worker_names if n != victim)
    assert "job done" in messages(stack, survivor, task)
    assert_one_full_comment(stack, 1, repo)
    assert len(created(stack, 1, repo)) == 1
    stack.start_worker(victim)


def test_sigkill_of_a_pool_process_mid_index(stack: DevStack) -> None:
    """Only the pool process dies (out of memory): its worker requeues the job at once."""
    repo = serve_big_repo(stack, "oom")
    task = open_issue(stack, 1, repo)
    victim = mid_index(stack, task)
    assert stack.kill_worker(victim, pool_only=True)
    killed = time.monotonic()
    outcome = stack.result(task, timeout=90)
    assert outcome["status"] == "created", outcome
    print(f"\npool process killed: comment {time.monotonic() - killed:.1f} s later")
    done = [n for n in stack.worker_names if "job done" in messages(stack, n, task)]
    assert len(done) == 1
    assert_one_full_comment(stack, 1, repo)
    assert len(created(stack, 1, repo)) == 1


def gave_up(stack: DevStack, task: str) -> list[dict[str, Any]]:
    return [r for n in stack.worker_names for r in records_of(stack, n, task)
            if r.get("msg") == "job failed after retries" and r.get("level") == "ERROR"]


@pytest.mark.parametrize(
    ("number", "method", "path", "status", "headers"),
    [
        (20, "GET", "/issues/{n}$", 502, {}),
        (21, "GET", "/issues/{n}$", None, {}),  # the request times out
        (22, "GET", "/issues/{n}$", 429, {}),  # a rate limit without retry-after
        (23, "POST", "/issues/{n}/comments$", 503, {}),
    ],
    ids=["5xx", "timeout", "429-without-retry-after", "5xx-on-create"],
)
def test_github_failing_for_good_ends_in_a_clean_give_up(
    stack: DevStack, number: int, method: str, path: str, status: int | None,
    headers: dict[str, str]
) -> None:
    stack.fake.inject(method, "^/repos/" + REPO + path.format(n=number), status, times=1000,
                      headers=headers, delay_s=4.0 if status is None else 0.0)
    task = open_issue(stack, number)
    outcome = stack.result(task, timeout=120)
    assert outcome["status"] == "failed", outcome
    if status is None:
        time.sleep(4.5)  # the fake records a request when it answers, after the delay
    calls = [c for c in stack.fake.requests(method) if re.search(path.format(n=number), c.path)]
    # bounded: a rate limit longer than the inline wait goes back to the queue at once;
    # other failures are tried GITHUB_ATTEMPTS times per run (a create too, each time after
    # looking for the comment again); a run, 1 + MAX_RETRIES times
    per_run = 1 if status == 429 else GITHUB_ATTEMPTS
    assert len(calls) == per_run * (1 + MAX_RETRIES)
    assert gave_up(stack, task), "no log line says the job gave up"
    assert stack.fake.bot_comments(REPO, number) == []  # nothing, never a partial comment


@pytest.mark.parametrize(
    ("number", "status", "headers", "wait_s"),
    [
        (30, 503, {}, 0),
        (31, None, {}, 0),  # one timeout
        (32, 429, {"retry-after": "2"}, 2),
        (33, 403, {"retry-after": "1"}, 1),  # a secondary rate limit
        (34, 403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "RESET"}, 1),  # now + 4
    ],
    ids=["5xx", "timeout", "429-retry-after", "403-secondary", "403-primary-reset"],
)
def test_github_failing_once_is_survived_with_one_comment(
    stack: DevStack, number: int, status: int | None, headers: dict[str, str], wait_s: float
) -> None:
    headers = {k: v.replace("RESET", str(int(time.time()) + 4)) for k, v in headers.items()}
    stack.fake.inject("GET", f"^/repos/{REPO}/issues/{number}$", status, headers=headers,
                      delay_s=4.0 if status is None else 0.0,
                      body={"message": "API rate limit exceeded"} if status == 403 else None)
    task = open_issue(stack, number)
    assert stack.result(task, timeout=120)["status"] == "created"
    if status is None:
        time.sleep(4.5)  # the fake records a request when it answers, after the delay
    gets = sorted(stack.fake.requests("GET", path=f"/repos/{REPO}/issues/{number}"),
                  key=lambda c: c.at)  # by arrival
    assert len(gets) == 2
    assert gets[1].at - gets[0].at >= wait_s
    assert_one_full_comment(stack, number)


def test_a_lost_answer_to_the_create_and_a_failing_edit_never_duplicate(stack: DevStack) -> None:
    number = 40
    stack.fake.inject("POST", f"^/repos/{REPO}/issues/{number}/comments$", 502, apply=True)
    assert stack.result(open_issue(stack, number))["status"] in ("created", "unchanged")
    assert_one_full_comment(stack, number)
    assert len(created(stack, number)) == 0  # GitHub created it; its answer was lost
    ours = stack.fake.bot_comments(REPO, number)[0]
    before = ours.body
    # A re-run (/spider k=2) whose edit fails for good: the old comment stays whole.
    stack.fake.inject("PATCH", r"^/repos/.*/issues/comments/\d+$", 500, times=1000)
    command = stack.fake.add_comment(REPO, number, "/spider k=2", association="MEMBER")
    resp = stack.deliver("issue_comment", command_payload(REPO, number, command.id, command.body))
    assert resp.json()["status"] == "queued"
    task = resp.json()["task_id"]
    assert stack.result(task, timeout=120)["status"] == "failed"
    assert gave_up(stack, task)
    assert [c.body for c in stack.fake.bot_comments(REPO, number)] == [before]
    patches = stack.fake.requests("PATCH", path=f"/repos/{REPO}/issues/comments/{ours.id}")
    assert len(patches) == GITHUB_ATTEMPTS * (1 + MAX_RETRIES)


def wait_for_comments(stack: DevStack, numbers: list[int], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not all(stack.fake.bot_comments(REPO, n) for n in numbers):
        assert time.monotonic() < deadline, [n for n in numbers
                                             if not stack.fake.bot_comments(REPO, n)]
        time.sleep(0.2)


def test_redis_restart_with_jobs_queued_loses_none_and_runs_none_twice(stack: DevStack) -> None:
    """Six jobs, some running and the rest queued, when Redis is SIGKILLed and restarted.
    With the append-only file fsynced on every write every job survives, and each issue
    ends with one comment: a job whose acknowledgement was lost may run again, and then
    finds its comment and edits it."""
    numbers = list(range(50, 56))
    tasks = [open_issue(stack, n) for n in numbers]
    started = time.monotonic()
    stack.restart_redis(down_s=1.0)
    wait_for_comments(stack, numbers, timeout_s=VISIBILITY_S + 120)
    print(f"\nRedis killed, 1 s down: all {len(numbers)} comments "
          f"{time.monotonic() - started:.1f} s after the kill")
    for t in tasks:  # outcomes reached while Redis was away are stored once it is back
        assert stack.result(t, timeout=60)["status"] in ("created", "updated", "unchanged")
    time.sleep(VISIBILITY_S + 5)  # a job whose acknowledgement was lost runs again by now
    reruns = {n: len(stack.fake.requests("GET", path=f"/repos/{REPO}/issues/{n}")) - 1
              for n in numbers}
    print(f"jobs run again after the restart: {sum(reruns.values())}")
    # Only a job in flight at the kill can lose its acknowledgement (prefetch 1, acks late):
    # at most one per worker process runs again; a queued job never does.
    in_flight = stack.workers * stack.worker_concurrency
    assert len([n for n, r in reruns.items() if r > 0]) <= in_flight, reruns
    for n in numbers:
        assert_one_full_comment(stack, n)
        assert len(created(stack, n)) == 1
    # the bot and the workers carry on
    assert stack.result(open_issue(stack, 60))["status"] == "created"


def test_logs_hold_no_secret(stack: DevStack) -> None:
    """After every fault above (tracebacks, retries, lost connections included)."""
    assert_logs_hold_no_secret(stack)


@pytest.fixture(autouse=True)
def _clean_injections(stack: DevStack) -> Iterator[None]:
    yield
    stack.fake._injections.clear()


def test_a_create_github_carries_out_after_the_client_timed_out_makes_one_comment(
        stack: DevStack) -> None:
    """GitHub is slow to create the comment: the client times out (2 s) and GitHub creates
    it a second later all the same. Looking for it again at once finds nothing and posts a
    second one; the look waits until GitHub can no longer be working on the lost create."""
    number = 70
    stack.fake.inject("POST", f"^/repos/{REPO}/issues/{number}/comments$", None, delay_s=3.0)
    assert stack.result(open_issue(stack, number), timeout=120)["status"] in ("created",
                                                                              "unchanged")
    time.sleep(1.5)  # the late create has landed by now
    assert_one_full_comment(stack, number)
    assert len(created(stack, number)) == 1
