"""Redis down while signed deliveries arrive: nothing is lost once it is back.

    python -m tests.load.outage [--deliveries 50] [--outage-s 60] [--interval-s 20] [--json]

It starts the dev stack (a private redis-server with its fsynced append-only file, uvicorn
serving the bot, two Celery workers, the fake GitHub), files the issues of the burst's
mix (tests/load/burst.py: issues opened, edited, labeled, opened by bots; ``/spider``
commands by members and strangers; plain comments; pings, pushes; some deliveries sent
twice with the same guid) and has the fake GitHub deliver them one after another, spread
over the outage: a fifth before Redis is SIGKILLed, most while it is down (the bot answers
503), the rest after it is back. GitHub never retries a failed delivery; the workers'
redelivery job (worker/redeliver.py, every ``--interval-s``) asks the fake to redeliver
each failed one, which it does with the same guid.

It then waits (at most ``--timeout-s`` after Redis is back) until every delivery has a 2xx
answer and every job queued has ended (each waited for under the Celery task id the bot
answered: an index job's is ``index:<repo>:<guid>``, tests/load/jobs.py), and checks: every
delivery accepted, every issue job ``created``/``updated``/``unchanged``/``skipped``, every
index job ``indexed``/``skipped``, every issue at most one comment (exactly one where a job
commented), no comment created twice. Bounded in time and count,
loopback only. The engine is kept cheap (BM25, no selector, K=3).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from spider_devkit.devstack import DevStack
from tests.load.burst import ENV, REPOS, Delivery, drain, plan, scrape_metrics
from tests.load.jobs import QueuedJob, queued_jobs
from tests.worker.helpers import make_repo

MIN_GAP_S = 0.05  # between two deliveries, whatever the outage length


@dataclass
class OutageResult:
    """What the outage run measured."""

    deliveries: int = 0
    guids: int = 0
    outage_s: float = 0.0
    first_answers: Counter[str] = field(default_factory=Counter)  # "202", "503", ...
    refused: int = 0  # guids whose first attempt was not 2xx
    accepted: int = 0  # guids with a 2xx attempt in the end
    redeliveries: int = 0  # attempts the fake sent as redeliveries
    jobs: int = 0  # issue and index jobs queued, each under the task id the bot answered
    outcomes: Counter[str] = field(default_factory=Counter)  # issue jobs'
    index_outcomes: Counter[str] = field(default_factory=Counter)  # index jobs' (push, install)
    all_done_after_back_s: float | None = None
    duplicates: int = 0  # comments created beyond one per issue
    problems: list[str] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        out = {k: (dict(v) if isinstance(v, Counter) else v) for k, v in vars(self).items()}
        out["accepted_pct"] = round(100 * self.accepted / self.guids, 1) if self.guids else 0
        return out


def _deliver_spread(stack: DevStack, plan_: list[Delivery], outage_s: float,
                    result: OutageResult) -> float:
    """Deliver ``plan_`` evenly over 1.5 x ``outage_s``, Redis down from 0.2 x to 1.2 x of
    it; returns when Redis came back (monotonic)."""
    assert stack.redis_server is not None
    span = 1.5 * outage_s
    gap = max(MIN_GAP_S, span / max(1, len(plan_)))
    start = time.monotonic()
    kill_at, back_at = start + 0.2 * outage_s, start + 1.2 * outage_s
    state = {"down": False, "back": 0.0}

    def outage() -> None:
        time.sleep(max(0.0, kill_at - time.monotonic()))
        stack.redis_server.kill()  # type: ignore[union-attr]
        state["down"] = True
        time.sleep(max(0.0, back_at - time.monotonic()))
        stack.redis_server.start()  # type: ignore[union-attr]
        state["back"] = time.monotonic()

    killer = threading.Thread(target=outage, daemon=True)
    killer.start()
    for i, d in enumerate(plan_):
        time.sleep(max(0.0, start + i * gap - time.monotonic()))
        try:
            status = str(stack.fake.send_webhook(d.event, d.payload, guid=d.delivery_id).status_code)
        except httpx.HTTPError:
            status = "no answer"
        result.first_answers[status] += 1
    killer.join(timeout=outage_s * 2 + 60)
    result.outage_s = round(state["back"] - kill_at, 1) if state["back"] else outage_s
    return state["back"] or time.monotonic()


def run_outage(workdir: Path, *, deliveries: int = 50, outage_s: float = 60.0,
               interval_s: float = 20.0, timeout_s: float = 600.0,
               workers: int = 2) -> OutageResult:
    """Start the stack, deliver through the outage, wait for redelivery, check; the figures."""
    result = OutageResult(deliveries=deliveries)
    for repo in REPOS:
        make_repo(workdir / "repos" / repo)
    env = {**ENV, "SPIDER_REDELIVER_INTERVAL_S": str(interval_s),
           "SPIDER_LOG_LEVEL": "INFO", "SPIDER_LEASE_TTL_S": "5"}
    with DevStack(workdir, env=env, workers=workers, persistent_redis=True) as stack:
        for repo in REPOS:
            stack.add_repo(repo, workdir / "repos" / repo)
        plan_ = plan(stack, deliveries)
        guids = sorted({d.delivery_id for d in plan_})
        result.guids = len(guids)
        back = _deliver_spread(stack, plan_, outage_s, result)
        deadline = back + timeout_s
        refused = {g for g in guids if not stack.fake.deliveries_of(g)[0].ok}
        result.refused = len(refused)
        while time.monotonic() < deadline:  # every guid answered 2xx at last
            if all(any(a.ok for a in stack.fake.deliveries_of(g)) for g in guids):
                break
            time.sleep(1.0)
        queued = {job.task_id: job for g in guids for a in stack.fake.deliveries_of(g) if a.ok
                  for job in queued_jobs(g, a.answer or {})}
        outcomes = drain(stack, {t: job.delivery_id for t, job in queued.items()},
                         max(1.0, deadline - time.monotonic()))
        result.all_done_after_back_s = round(time.monotonic() - back, 1)
        _check(stack, guids, queued, outcomes, result)
        result.metrics = {k: v for k, v in scrape_metrics(stack).items()
                          if "jobs_total" in k or "deliveries_total" in k}
        text = httpx.get(stack.bot_url + "/metrics", timeout=10).text
        for line in text.splitlines():
            if line.startswith("spider_redeliveries_total"):
                name, value = line.rsplit(" ", 1)
                result.metrics[name] = float(value)
    return result


def _check(stack: DevStack, guids: list[str], queued: dict[str, QueuedJob],
           outcomes: dict[str, dict[str, Any]], result: OutageResult) -> None:
    """Record what went wrong: ``queued`` and ``outcomes`` are keyed by task id."""
    result.accepted = sum(1 for g in guids if any(a.ok for a in stack.fake.deliveries_of(g)))
    result.redeliveries = sum(1 for d in stack.fake.deliveries if d.redelivery)
    result.jobs = len(queued)
    if result.accepted != len(guids):
        result.problems.append(f"{len(guids) - result.accepted} deliveries never accepted")
    missing = set(queued) - set(outcomes)
    if missing:
        result.problems.append(f"{len(missing)} job(s) never ended: {sorted(missing)}")
    for task_id, outcome in outcomes.items():
        counts = result.index_outcomes if queued[task_id].index else result.outcomes
        counts[outcome["status"]] += 1
        if outcome["status"] not in queued[task_id].done:
            result.problems.append(f"job {task_id}: {outcome}")
    for (repo, n) in list(stack.fake.issues):
        ours = stack.fake.bot_comments(repo, n)
        posts = [c for c in stack.fake.requests("POST", path=f"/repos/{repo}/issues/{n}/comments")
                 if c.status == 201]
        if len(ours) > 1 or len(posts) > 1:
            result.duplicates += max(len(ours), len(posts)) - 1
            result.problems.append(f"{repo}#{n}: {len(ours)} comments, {len(posts)} created")
    commented = {o.get("comment_id") for t, o in outcomes.items()
                 if not queued[t].index and o.get("status") in ("created", "updated", "unchanged")}
    if None in commented:
        result.problems.append("a job that commented has no comment id")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deliveries", type=int, default=50)
    parser.add_argument("--outage-s", type=float, default=60.0)
    parser.add_argument("--interval-s", type=float, default=20.0,
                        help="the redelivery job's interval (the default is 300)")
    parser.add_argument("--timeout-s", type=float, default=600.0,
                        help="how long after Redis is back everything must be done")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="spider-outage-") as tmp:
        result = run_outage(Path(tmp), deliveries=args.deliveries, outage_s=args.outage_s,
                            interval_s=args.interval_s, timeout_s=args.timeout_s)
    summary = result.summary()
    summary["machine"] = {"cpus": os.cpu_count()}
    print(json.dumps(summary, indent=None if args.json else 1))
    return 0 if not result.problems else 1


if __name__ == "__main__":
    raise SystemExit(main())
