"""Webhook -> comment latency through the dev stack (real bot, Celery workers, Redis, the
fake GitHub, the real engine), on a real repository, loopback only:

    python -m tests.load.latency --source /work/.mirror/psf+requests/repo [--samples 10]
        [--phases cold,warm,pushed] [--behind 20] [--set SPIDER_ENCODER=onnx-int8] [--json]

``--source`` is a local git repository (a bare mirror is fine); it is cloned (hard links)
into a work directory and served as ``acme/<name>`` from there, its default branch set
``--behind`` first-parent commits before the source's head. The deployment is the one
docs/install.md recommends: one worker on ``-Q spider`` (issues), one on
``-Q spider-index,spider-fixes``. Phases, in this order:

- ``cold``: never indexed, empty cache, the workers started and ready and the ONNX graphs
  exported (as a deployed image's are). One issue: the time to its first comment (from a
  partial index), then until the full index is recorded and the comment edited.
- ``warm``: the repository indexed at its head; ``--samples`` issues, one at a time.
- ``pushed``: indexed at an older commit: for each sample the branch moves one commit
  forward, the push is delivered, then the issue at once (the index job runs meanwhile).

Each latency is from the moment the delivery is sent to the moment the comment is on the
fake GitHub. p50 is printed, and p90 with 10 samples or more.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from contract import index_state
from spider_devkit.devstack import INSTALLATION_ID, DevStack
from tests.e2e.helpers import issue_payload, new_delivery

ISSUES = {  # a plausible issue per repository (the text only matters for the ranking)
    "requests": ("iter_content(decode_unicode=True) returns bytes",
                 "When I call `r.iter_content(decode_unicode=True)` on a response without an "
                 "encoding I get bytes back instead of str. `Response.text` works. I expected "
                 "`stream_decode_response_unicode` to fall back to the apparent encoding."),
    "sympy": ("simplify() of a power of a sum with sqrt returns a wrong result",
              "`simplify((sqrt(2) + 1)**2 - 2*sqrt(2))` gives a different value than "
              "`nsimplify` and `expand`; I think `powsimp` or `radsimp` mishandles the "
              "rational exponent. Traceback in `sympy/simplify/simplify.py`."),
}
DEFAULT_ISSUE = ("The main function crashes on empty input",
                 "Calling it with an empty string raises IndexError instead of a clear error.")
POLL_S = 0.02


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def summary(values: list[float]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(values), "p50_s": round(statistics.median(values), 2),
                           "samples_s": [round(v, 2) for v in values]}
    if len(values) >= 10:
        out["p90_s"] = round(percentile(values, 0.9), 2)
    return out


class Bench:
    """The stack, the served repository and the issue numbers handed out so far."""

    def __init__(self, stack: DevStack, repo: str, path: Path, issue: tuple[str, str]) -> None:
        self.stack, self.repo, self.path, self.issue = stack, repo, path, issue
        self.number = 0

    def head(self) -> str:
        return _git(self.path, "rev-parse", "refs/heads/main")

    def move_to(self, sha: str) -> None:
        _git(self.path, "update-ref", "refs/heads/main", sha)

    def push(self) -> str:
        payload = json.loads((Path(__file__).resolve().parents[1] / "samples" / "push"
                              / "payload.json").read_text())
        payload["repository"].update(full_name=self.repo, name=self.repo.split("/")[1],
                                     default_branch="main")
        payload["installation"]["id"] = INSTALLATION_ID
        payload["after"] = self.head()
        resp = self.stack.deliver("push", payload)
        return str(resp.json().get("task_id", ""))

    def issue_latency(self, timeout_s: float) -> tuple[float, str, int]:
        """Open an issue; seconds until its comment is on the fake; (s, delivery, number)."""
        self.number += 1
        title, body = self.issue
        self.stack.fake.add_issue(self.repo, self.number, title, body)
        delivery = new_delivery()
        t0 = time.perf_counter()
        resp = self.stack.deliver("issues", issue_payload(self.repo, self.number, title, body),
                                  delivery_id=delivery)
        if resp.json().get("status") != "queued":
            raise RuntimeError(f"issue not queued: {resp.text}")
        deadline = time.monotonic() + timeout_s
        while not self.stack.fake.bot_comments(self.repo, self.number):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no comment in {timeout_s} s:\n{self.stack.log_tail('worker')}")
            time.sleep(POLL_S)
        return time.perf_counter() - t0, delivery, self.number

    def wait_indexed(self, sha: str, timeout_s: float) -> float:
        t0 = time.perf_counter()
        client = self.stack.redis_client()
        try:
            while True:
                done = index_state.indexed(client, self.repo)
                if done is not None and done.sha == sha:
                    return time.perf_counter() - t0
                if time.perf_counter() - t0 > timeout_s:
                    raise TimeoutError(f"{sha[:12]} not indexed in {timeout_s} s:\n"
                                       f"{self.stack.log_tail('worker2')}")
                time.sleep(0.1)
        finally:
            client.close()


def run(source: Path, workdir: Path, *, samples: int, phases: list[str], behind: int,
        extra_env: dict[str, str], timeout_s: float) -> dict[str, Any]:
    name = source.name if source.name != "repo" else source.parent.name.split("+")[-1]
    repo = f"acme/{name}"
    path = workdir / "repos" / "acme" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        _git(workdir, "clone", "--bare", "--quiet", "--local", str(source), str(path))
    tip = _git(path, "rev-parse", "HEAD")
    history = _git(path, "rev-list", "--first-parent", f"--max-count={behind + 1}", tip).split()
    history.reverse()  # oldest first: history[0] is `behind` commits before the tip
    _git(path, "update-ref", "refs/heads/main", history[0])
    _git(path, "symbolic-ref", "HEAD", "refs/heads/main")
    env = {"SPIDER_LOG_JSON": "true", **extra_env}
    if "SPIDER_ONNX_DIR" not in env:  # exported ahead, as the image does when it is built
        env["SPIDER_ONNX_DIR"] = str(workdir / "onnx")
        subprocess.run([sys.executable, "-m", "spider.cli", "model", "export"], check=True,
                       env={**os.environ, **env}, capture_output=True)
    out: dict[str, Any] = {"repo": str(source), "env": extra_env, "cpus": os.cpu_count(),
                           "load_before": os.getloadavg()[0]}
    with DevStack(workdir, env=env, workers=2,
                  worker_queues={"worker": "spider", "worker2": "spider-index,spider-fixes"}) as stack:
        stack.add_repo(repo, path)
        stack.wait_workers_ready(timeout_s)  # a deployed worker starts before the issue comes
        bench = Bench(stack, repo, path, ISSUES.get(name, DEFAULT_ISSUE))
        if "cold" in phases:
            first, _, number = bench.issue_latency(timeout_s)
            body = stack.fake.bot_comments(repo, number)[0].body
            print(f"cold: first comment after {first:.2f} s (partial: "
                  f"{'Made from a partial index' in body})", file=sys.stderr, flush=True)
            t1 = time.perf_counter()
            index_s = bench.wait_indexed(bench.head(), timeout_s)
            deadline = time.monotonic() + timeout_s
            while "partial index" in stack.fake.bot_comments(repo, number)[0].body:
                if time.monotonic() > deadline:
                    raise TimeoutError("the partial comment was never updated")
                time.sleep(0.1)
            out["cold"] = {"first_comment_s": round(first, 2),
                           "partial": "Made from a partial index" in body,
                           "full_index_after_s": round(index_s, 2),
                           "comment_updated_after_s": round(time.perf_counter() - t1, 2)}
        else:  # index the head first (what an installation would have done)
            bench.push()
            bench.wait_indexed(bench.head(), timeout_s)
        if "warm" in phases:
            out["warm"] = summary([bench.issue_latency(timeout_s)[0] for _ in range(samples)])
        if "pushed" in phases:
            times: list[float] = []
            for sha in history[1 : samples + 1]:
                bench.move_to(sha)
                bench.push()
                times.append(bench.issue_latency(timeout_s)[0])
                bench.wait_indexed(sha, timeout_s)
            out["pushed"] = summary(times)
        jobs = [r.get("timings") for r in stack.log_records("worker") if r.get("msg") == "job done"]
        out["issue_job_timings"] = jobs[-3:]
    out["load_after"] = os.getloadavg()[0]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.load.latency", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, required=True, help="a local git repository")
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--phases", default="cold,warm,pushed")
    parser.add_argument("--behind", type=int, default=20, help="commits behind the source's head")
    parser.add_argument("--set", action="append", default=[], metavar="SPIDER_X=V",
                        help="an engine or app setting for bot and workers")
    parser.add_argument("--timeout-s", type=float, default=900)
    parser.add_argument("--workdir", type=Path, help="keep logs and state here")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    extra = dict(kv.split("=", 1) for kv in args.set)
    phases = [p for p in args.phases.split(",") if p]
    with tempfile.TemporaryDirectory(prefix="spider-latency-") as tmp:
        workdir = args.workdir or Path(tmp)
        result = run(args.source.resolve(), workdir, samples=args.samples, phases=phases,
                     behind=max(args.behind, args.samples), extra_env=extra,
                     timeout_s=args.timeout_s)
    print(json.dumps(result, indent=None if args.json else 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
