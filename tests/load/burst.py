"""A burst of signed webhook deliveries against the real stack on 127.0.0.1, and a check
that every accepted job ended in exactly one comment or an explicit skip.

    python -m tests.load.burst [--deliveries 1000] [--workers 2] [--senders 16] [--json]

It starts the dev stack (a private redis-server, uvicorn serving the bot, N Celery worker
processes, the fake GitHub), serves four small repositories, files their issues on the
fake, then sends the deliveries from ``--senders`` threads at once: a mix of issues opened,
edited, labeled, opened by bots; ``/spider`` commands by members and by strangers; plain
comments; comments on pull requests; pings, pushes, installations; and every third
``issues.opened`` delivered twice with the same delivery id. It prints the bot's accepted
deliveries per second and its p50/p99 answer time, how long the workers took to drain the
jobs, and the outcome of every job (from the jobs' results and from the bot's /metrics).

The engine is kept cheap (BM25 first stage, no selector, K=3): this measures the app's
plumbing, not the engine. Timings depend on the machine; correctness does not.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import os
import random
import statistics
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis

from bot.signature import sign
from spider_devkit.devstack import INSTALLATION_ID, DevStack
from tests.load.jobs import (
    DONE,
    RESULT_PREFIX,
    finished,
    queued_jobs,
    queues_empty,
    read_outcomes,
)
from tests.worker.helpers import git, make_repo

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
REPOS = ("acme/alpha", "acme/beta", "acme/gamma", "acme/delta")
TITLE = "Header values containing a colon are cut off"
BODY = ("parse_header splits the header line at every colon, so `Host: example.com:8080` loses "
        "the port, and Session.read_headers returns the wrong value.")
ENV = {
    "SPIDER_K": "3",
    "SPIDER_SELECTOR": "none",
    "SPIDER_FIRST_STAGE": "bm25",
    "SPIDER_LOG_JSON": "true",
    "SPIDER_LOG_LEVEL": "WARNING",  # a thousand deliveries: keep the logs small
    "SPIDER_DEFER_DELAY_S": "0.5",
    "SPIDER_DEFER_DELAY_MAX_S": "2",
    "SPIDER_RETRY_BACKOFF_S": "0.5",
    "SPIDER_RETRY_BACKOFF_MAX_S": "2",
    "SPIDER_GITHUB_BACKOFF_S": "0.1",
}


@dataclass
class Delivery:
    """One webhook delivery: event name, delivery id, payload, and what it is."""

    event: str
    delivery_id: str
    payload: dict[str, Any]
    kind: str
    issue: tuple[str, int] | None = None


@dataclass
class Result:
    """What the burst measured."""

    deliveries: int = 0
    answers: Counter[str] = field(default_factory=Counter)  # "202 queued", "200 acknowledged"
    latencies_ms: list[float] = field(default_factory=list)
    send_seconds: float = 0.0
    drain_seconds: float = 0.0
    outcomes: Counter[str] = field(default_factory=Counter)
    reruns: Counter[str] = field(default_factory=Counter)  # issue jobs run again after an index
    metrics: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    machine: dict[str, Any] = field(default_factory=dict)

    @property
    def accepted(self) -> int:
        return sum(n for answer, n in self.answers.items() if answer[0] == "2")

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies_ms)
        return {
            "deliveries": self.deliveries,
            "accepted": self.accepted,
            "accepted_per_s": round(self.accepted / self.send_seconds, 1),
            "latency_ms_p50": round(statistics.median(lat), 1),
            "latency_ms_p99": round(lat[max(0, int(len(lat) * 0.99) - 1)], 1),
            "latency_ms_max": round(lat[-1], 1),
            "send_seconds": round(self.send_seconds, 2),
            "jobs": sum(self.outcomes.values()),
            "drain_seconds": round(self.drain_seconds, 1),
            "answers": dict(sorted(self.answers.items())),
            "outcomes": dict(sorted(self.outcomes.items())),
            "reruns": dict(sorted(self.reruns.items())),
            "metrics": self.metrics,
            "problems": self.problems,
            "machine": self.machine,
        }


def _sample(name: str) -> dict[str, Any]:
    return copy.deepcopy(json.loads((SAMPLES / name / "payload.json").read_text()))


def _about(p: dict[str, Any], repo: str, number: int) -> dict[str, Any]:
    p["repository"]["full_name"] = repo
    p["repository"]["name"] = repo.split("/")[1]
    p["installation"]["id"] = INSTALLATION_ID
    p["issue"]["number"] = number
    return p


def _push(stack: DevStack, repo: str) -> dict[str, Any]:
    """A push of a served repository's head to its default branch (an index job)."""
    served = stack.fake.repos[repo]
    p = _sample("push")
    p["repository"].update(id=served.id, full_name=repo, name=repo.split("/")[1],
                           default_branch=served.default_branch)
    p["ref"] = f"refs/heads/{served.default_branch}"
    p["after"] = git(served.path, "rev-parse", "HEAD")
    p["installation"]["id"] = INSTALLATION_ID
    return p


def _installation(stack: DevStack) -> dict[str, Any]:
    """The app installed on every served repository (an index job each)."""
    p = _sample("installation_created")
    p["installation"]["id"] = INSTALLATION_ID
    p["repositories"] = [
        {"id": r.id, "node_id": f"R_{r.id}", "name": r.full_name.split("/")[1],
         "full_name": r.full_name, "private": False}
        for r in (stack.fake.repos[name] for name in REPOS)
    ]
    return p


def plan(stack: DevStack, total: int, seed: int = 5) -> list[Delivery]:
    """``total`` deliveries of every kind, in a random order; issues and comments are filed
    on the fake GitHub first, as they would exist on GitHub."""
    rng = random.Random(seed)
    out: list[Delivery] = []
    per_repo = max(1, total // 40)  # 1000 deliveries: 25 issues a repository, 100 in all
    issues = [(repo, n) for repo in REPOS for n in range(1, per_repo + 1)]
    for repo, n in issues:
        short = n % 10 == 0  # too short for the default min_issue_length: skipped
        stack.fake.add_issue(repo, n, "Crash" if short else TITLE, "" if short else BODY)

    def issue_event(kind: str, repo: str, n: int, action: str, **issue: Any) -> Delivery:
        p = _about(_sample("issues_opened"), repo, n)
        p["action"] = action
        p["issue"].update(issue)
        return Delivery("issues", str(uuid.uuid4()), p, kind, (repo, n))

    def comment_event(kind: str, repo: str, n: int, body: str, association: str,
                      login: str, pull: bool = False) -> Delivery:
        c = stack.fake.add_comment(repo, n, body, user=login, association=association)
        p = _about(_sample("issue_comment_command"), repo, n)
        p["comment"].update(id=c.id, body=body, author_association=association)
        p["comment"]["user"]["login"] = login
        p["sender"]["login"] = login
        if pull:
            p["issue"]["pull_request"] = _sample("issue_comment_pull_request")["issue"]["pull_request"]
        return Delivery("issue_comment", str(uuid.uuid4()), p, kind, (repo, n))

    for repo, n in issues:
        opened = issue_event("opened", repo, n, "opened")
        out.append(opened)
        if n % 3 == 0:  # GitHub redelivers: the same delivery id again
            out.append(Delivery(opened.event, opened.delivery_id, opened.payload, "duplicate",
                                opened.issue))
    makers = [
        lambda repo, n: comment_event("command", repo, n, "/spider k=2", "MEMBER", "maintainer"),
        lambda repo, n: comment_event("stranger", repo, n, "/spider", "NONE", "drive-by"),
        lambda repo, n: comment_event("plain", repo, n, "Same here on 0.1.0", "NONE", "someone"),
        lambda repo, n: comment_event("pull", repo, n, "/spider", "MEMBER", "maintainer", True),
        lambda repo, n: issue_event("edited", repo, n, "edited"),
        lambda repo, n: issue_event("labeled", repo, n, "labeled"),
        lambda repo, n: issue_event("by-bot", repo, n, "opened",
                                    user={**_sample("issues_opened")["issue"]["user"],
                                          "login": "renovate[bot]", "type": "Bot"}),
        lambda repo, n: issue_event("locked", repo, n, "opened", locked=True),
    ]
    weights = [8, 4, 10, 4, 6, 10, 4, 4]
    # pushes and installations name the served repositories and the fake's installation,
    # so their index jobs can succeed (the samples name a repository the fake does not
    # serve); pushes take the repositories in turn, leaving the seeded mix as it was
    pushed = itertools.cycle(REPOS)
    others: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("ping", lambda: _sample("ping")),
        ("push", lambda: _push(stack, next(pushed))),
        ("installation", lambda: _installation(stack)),
    ]
    while len(out) < total:
        if rng.random() < 0.15:
            event, payload = rng.choice(others)
            out.append(Delivery(event, str(uuid.uuid4()), payload(), event))
        else:
            repo, n = rng.choice(issues)
            out.append(rng.choices(makers, weights)[0](repo, n))
    rng.shuffle(out)
    return out[:total]


def send(stack: DevStack, deliveries: list[Delivery], senders: int,
         result: Result) -> dict[str, str]:
    """POST every delivery from ``senders`` threads; returns task id -> issue of the issue
    jobs (keyed by the task id the bot answered, tests/load/jobs.py)."""
    queue = list(reversed(deliveries))
    lock = threading.Lock()
    tasks: dict[str, str] = {}

    def run() -> None:
        with httpx.Client(base_url=stack.bot_url, timeout=30) as client:
            while True:
                with lock:
                    if not queue:
                        return
                    d = queue.pop()
                body = json.dumps(d.payload).encode()
                headers = {"content-type": "application/json", "x-github-event": d.event,
                           "x-github-delivery": d.delivery_id,
                           "x-hub-signature-256": sign(stack.secret, body),
                           "user-agent": "GitHub-Hookshot/burst"}
                started = time.perf_counter()
                resp = client.post("/webhook", content=body, headers=headers)
                ms = 1000 * (time.perf_counter() - started)
                answer = resp.json().get("status", "error") if resp.status_code < 500 else "5xx"
                with lock:
                    result.latencies_ms.append(ms)
                    if d.issue is None and answer in ("queued", "coalesced"):
                        answer = f"index {answer}"  # pushes, installations: index jobs
                    result.answers[f"{resp.status_code} {answer}"] += 1
                    if d.issue is not None:  # index jobs are counted, not drained
                        for job in queued_jobs(d.delivery_id, resp.json()):
                            tasks[job.task_id] = f"{d.issue[0]}#{d.issue[1]}"

    threads = [threading.Thread(target=run) for _ in range(senders)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    result.send_seconds = time.perf_counter() - started
    return tasks


def drain(stack: DevStack, tasks: dict[str, str], timeout_s: float) -> dict[str, dict[str, Any]]:
    """Wait until every job has an outcome; return them by task id."""
    client = stack.redis_client()
    outcomes: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout_s
    while True:
        outcomes.update(read_outcomes(client, [t for t in tasks if t not in outcomes]))
        if len(outcomes) == len(tasks) or time.monotonic() > deadline:
            client.close()
            return outcomes
        time.sleep(0.25)


RERUN_SUFFIX = ":indexed"  # an issue job run again after its index (worker.tasks._run_again)


def settle(stack: DevStack, timeout_s: float) -> dict[str, dict[str, Any]] | None:
    """After the delivered jobs ended, wait until no job is left (the index jobs the issue
    jobs asked for, and the issue jobs those ran again once the index was recorded): two
    empty looks in a row. Return the reruns' outcomes by task id, or None on timeout."""
    client = stack.redis_client()
    deadline = time.monotonic() + timeout_s
    try:
        empty_looks = 0
        while empty_looks < 2:
            if time.monotonic() > deadline:
                return None
            empty_looks = empty_looks + 1 if queues_empty(client) else 0
            time.sleep(0.5)
        reruns: dict[str, dict[str, Any]] = {}
        for key in client.scan_iter(match=f"{RESULT_PREFIX}*{RERUN_SUFFIX}", count=500):
            name = key.decode() if isinstance(key, bytes) else key
            reruns[name[len(RESULT_PREFIX):]] = finished(client.get(key)) or {
                "status": "failed", "reason": "no result stored"}
        return reruns
    finally:
        client.close()


def check(stack: DevStack, deliveries: list[Delivery], tasks: dict[str, str],
          outcomes: dict[str, dict[str, Any]], reruns: dict[str, dict[str, Any]] | None,
          result: Result) -> None:
    """Every accepted job ended in one comment or an explicit skip; record what went wrong."""
    problems = result.problems
    if result.answers.get("5xx") or any(a.startswith("5") for a in result.answers):
        problems.append(f"5xx answers: {dict(result.answers)}")
    missing = set(tasks) - set(outcomes)
    if missing:
        problems.append(f"{len(missing)} job(s) never ended")
    if reruns is None:
        problems.append("jobs still queued or running after the delivered ones ended")
    for task, outcome in (reruns or {}).items():
        result.reruns[outcome["status"]] += 1
        if outcome["status"] not in DONE:
            problems.append(f"rerun {task}: {outcome}")
    commented: set[str] = set()
    for task, outcome in outcomes.items():
        result.outcomes[outcome["status"]] += 1
        if outcome["status"] not in DONE:
            problems.append(f"job {task} on {tasks[task]}: {outcome}")
        elif outcome["status"] != "skipped":
            commented.add(tasks[task])
    for repo in REPOS:
        for (r, n), _issue in list(stack.fake.issues.items()):
            if r != repo:
                continue
            key = f"{r}#{n}"
            ours = stack.fake.bot_comments(r, n)
            posts = [c for c in stack.fake.requests("POST", path=f"/repos/{r}/issues/{n}/comments")
                     if c.status == 201]
            want = 1 if key in commented else 0
            if len(ours) != want or len(posts) != want:
                problems.append(f"{key}: {len(ours)} comment(s), {len(posts)} created, want {want}")
    duplicates = [d for d in deliveries if d.kind == "duplicate"]
    if result.answers.get("202 duplicate", 0) != len(duplicates):
        problems.append(f"{len(duplicates)} redeliveries, {result.answers.get('202 duplicate', 0)} "
                        "answered duplicate")


def scrape_metrics(stack: DevStack) -> dict[str, float]:
    """The bot's /metrics: jobs by outcome, GitHub calls by status, duration counts."""
    text = httpx.get(stack.bot_url + "/metrics", timeout=10).text
    wanted = ("spider_jobs_total", "spider_github_calls_total", "spider_index_seconds_count",
              "spider_query_seconds_count", "spider_fetch_seconds_count",
              "spider_webhook_deliveries_total")
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(wanted):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def run_burst(workdir: Path, *, deliveries: int = 1000, workers: int = 2, senders: int = 16,
              drain_timeout_s: float = 600, env: dict[str, str] | None = None) -> Result:
    """Start the stack, send the burst, wait for the jobs, check them; return the figures."""
    result = Result(deliveries=deliveries)
    result.machine = {"cpus": os.cpu_count(), "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
                      "workers": workers, "senders": senders}
    for repo in REPOS:
        make_repo(workdir / "repos" / repo)
    with DevStack(workdir, env={**ENV, **(env or {})}, workers=workers) as stack:
        for repo in REPOS:
            stack.add_repo(repo, workdir / "repos" / repo)
        burst = plan(stack, deliveries)
        tasks = send(stack, burst, senders, result)
        started = time.perf_counter()
        outcomes = drain(stack, tasks, drain_timeout_s)
        result.drain_seconds = time.perf_counter() - started
        reruns = settle(stack, drain_timeout_s)
        check(stack, burst, tasks, outcomes, reruns, result)
        result.metrics = scrape_metrics(stack)
        _redis_ok(stack)
    return result


def _redis_ok(stack: DevStack) -> None:
    client: redis.Redis = stack.redis_client()
    try:
        client.ping()
    finally:
        client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.load.burst", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deliveries", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2, help="Celery worker processes")
    parser.add_argument("--senders", type=int, default=16, help="concurrent HTTP clients")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--workdir", type=Path, help="keep logs and state here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="spider-burst-") as tmp:
        workdir = args.workdir or Path(tmp)
        result = run_burst(workdir, deliveries=args.deliveries, workers=args.workers,
                           senders=args.senders)
    s = result.summary()
    if args.json:
        print(json.dumps(s, indent=2))
    else:
        print(f"{s['deliveries']} deliveries, {s['accepted']} accepted in {s['send_seconds']} s: "
              f"{s['accepted_per_s']} accepted deliveries/s")
        print(f"webhook answer time: p50 {s['latency_ms_p50']} ms, p99 {s['latency_ms_p99']} ms, "
              f"max {s['latency_ms_max']} ms ({args.senders} concurrent senders)")
        print(f"{s['jobs']} jobs drained by {args.workers} workers in {s['drain_seconds']} s "
              f"after the burst: {s['outcomes']}; run again after an index: {s['reruns']}")
        print(f"answers: {s['answers']}")
        print(f"machine: {s['machine']}")
        print("problems: " + ("; ".join(s["problems"]) if s["problems"] else "none"))
    return 1 if result.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
