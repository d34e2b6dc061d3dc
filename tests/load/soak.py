"""A soak: the whole app under steady traffic for many minutes while everything fails at
once, then an invariant check of what GitHub, Redis and the store hold.

    python -m tests.load.soak [--minutes 30] [--rate 1.5] [--sentinel] [--json FILE]

Loopback only, bounded in time (``--minutes`` of traffic, then at most ``--drain-timeout-s``
for the queues to drain) and in count (``--rate`` deliveries a second). It runs the real
bot (uvicorn), three Celery workers (two on the issue queue, one on the index and fix
queues), a private Redis with its fsynced append-only file (``--sentinel``: a primary, a
replica and three Sentinels instead, failed over once), a private PostgreSQL as the fix
store, the fake GitHub, and four small repositories: a tiny one written for the tests and
the source of three packages installed from PyPI (h11, packaging, markupsafe).

Traffic, all through the fake GitHub (so it records and can redeliver every delivery):
issues opened (some too short: an explicit skip; some by bots: ignored) and edited;
``/spider`` commands by members and by strangers; labels; pushes of new commits; pull
requests merged with "Fixes #N" (each delivered as ``pull_request.closed`` and
``issues.closed``: two fix jobs race for one record), and some closed unmerged; GitHub's
redeliveries (same guid) and duplicates; pings; and, posted straight at the bot as an
attacker would, deliveries with bad signatures.

Faults, on a schedule, in the same run: a random worker SIGKILLed every minute (restarted
3 s later, as a supervisor would), a random worker's pool process SIGKILLed every minute,
Redis SIGKILLed and restarted every seven minutes or so (at least once), PostgreSQL stopped
for 5 s right after a fix is delivered every six minutes or so (at least once), and GitHub
answering about 5% of all calls with a 5xx, a timeout (the change still happens, late), a
429 or a 403 secondary rate limit (both with ``retry-after``).

The check at the end prints one table (see :func:`table`) and exits 1 on any lost or
doubled item: a delivery never accepted, an accepted issue with no comment and no skip,
an issue with two comments, a merged fix not scored exactly once.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import httpx
import redis

from contract.jobs import FIX_QUEUE, INDEX_QUEUE, QUEUE
from spider_devkit.devstack import INSTALLATION_ID, DevStack
from spider_devkit.fake_github import Chaos, FakeDelivery, files_from_diff
from tests.e2e.helpers import command_payload, issue_payload
from tests.load.burst import _sample
from tests.load.jobs import queued_jobs, queues_empty, read_outcomes
from tests.worker.helpers import make_repo
from tests.worker.pg import PrivatePostgres

TINY = "acme/httpkit"
PACKAGES = ("h11", "packaging", "markupsafe")  # small, pure-Python (markupsafe: and C)
WORKER_QUEUES = {"worker": QUEUE, "worker2": QUEUE, "worker3": f"{INDEX_QUEUE},{FIX_QUEUE}"}
CHAOS_RATE = 0.05
WORKER_RESTART_S = 3.0  # a supervisor brings a killed worker back after this long
REDIS_DOWN_S = 2.0
PG_DOWN_S = 5.0
REDIS_EVERY_S = 420.0
PG_EVERY_S = 360.0
KILL_EVERY_S = 60.0
SAMPLE_OFFSET_S = 40.0  # memory samples between a kill's restart (at 23 s) and a pool kill
ENV = {
    "SPIDER_K": "3",
    "SPIDER_SELECTOR": "none",
    "SPIDER_FIRST_STAGE": "bm25",
    "SPIDER_LOG_JSON": "true",
    "SPIDER_LOG_LEVEL": "INFO",
    "SPIDER_TASK_SOFT_TIME_LIMIT_S": "20",
    "SPIDER_TASK_TIME_LIMIT_S": "25",
    "SPIDER_BROKER_VISIBILITY_TIMEOUT_S": "30",
    "SPIDER_BROKER_RESTORE_INTERVAL_S": "2",
    "SPIDER_LEASE_TTL_S": "5",
    "SPIDER_MAX_RETRIES": "6",
    "SPIDER_RETRY_BACKOFF_S": "0.5",
    "SPIDER_RETRY_BACKOFF_MAX_S": "4",
    "SPIDER_DEFER_DELAY_S": "0.5",
    "SPIDER_DEFER_DELAY_MAX_S": "3",
    "SPIDER_GITHUB_BACKOFF_S": "0.1",
    "SPIDER_GITHUB_TIMEOUT_S": "2",
    "SPIDER_GITHUB_MAX_INLINE_WAIT_S": "3",
    "SPIDER_REDELIVER_INTERVAL_S": "10",
    "SPIDER_LOST_JOB_AFTER_S": "15",
}
GIT_ENV = {"GIT_AUTHOR_NAME": "Soak", "GIT_AUTHOR_EMAIL": "soak@example.com",
           "GIT_COMMITTER_NAME": "Soak", "GIT_COMMITTER_EMAIL": "soak@example.com"}
PERMALINK = re.compile(r"/blob/[0-9a-f]{40}/([^#)\s]+)#L(\d+)-L(\d+)")
FUNCTION = re.compile(r"^\s*def ([A-Za-z_][A-Za-z0-9_]{3,})\(", re.MULTILINE)
COMMENTED = ("created", "updated", "unchanged")


@dataclass
class SoakConfig:
    """What to run: minutes of traffic, deliveries a second, and the fault schedule."""

    minutes: float = 30.0
    rate: float = 1.5  # deliveries a second, every kind together
    sentinel: bool = False
    seed: int = 38
    chaos_rate: float = CHAOS_RATE
    drain_timeout_s: float = 600.0


@dataclass
class Sent:
    """One delivery the soak had GitHub send: what it was about."""

    guid: str
    kind: str  # opened, short, by-bot, edited, command, stranger, labeled, push, merged, ...
    event: str
    repo: str | None = None
    number: int | None = None
    at: float = 0.0  # wall clock (the fake records calls by time.time())


@dataclass
class Sample:
    """Memory at one moment: each worker's RSS (main + pool processes), the bot's, Redis's."""

    t_s: float
    worker_rss_mb: dict[str, float]
    bot_rss_mb: float
    redis_used_mb: float | None

    @property
    def workers_mb(self) -> float:
        return round(sum(self.worker_rss_mb.values()), 1)


@dataclass
class SoakResult:
    """Everything the check counted; :func:`table` prints it."""

    config: dict[str, Any] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)
    traffic_s: float = 0.0
    sent: Counter[str] = field(default_factory=Counter)  # by kind
    deliveries: int = 0  # guids GitHub sent (good signatures)
    accepted: int = 0  # ... answered 2xx at some attempt
    never_accepted: list[str] = field(default_factory=list)
    first_refused: int = 0  # ... whose first attempt was not 2xx (Redis away: 503)
    attempts: int = 0
    redelivered: int = 0  # attempts that were redeliveries
    answers: Counter[str] = field(default_factory=Counter)  # every attempt: "202 queued", ...
    bad_signatures: Counter[str] = field(default_factory=Counter)  # their answers
    issues_accepted: int = 0
    issues_one_comment: int = 0
    issues_skipped: int = 0
    duplicate_comments: list[str] = field(default_factory=list)
    lost_issues: list[str] = field(default_factory=list)
    fixes_merged: int = 0
    fixes_once: int = 0
    fixes_twice: list[str] = field(default_factory=list)
    fixes_never: list[str] = field(default_factory=list)
    fix_outcomes: Counter[str] = field(default_factory=Counter)
    job_outcomes: Counter[str] = field(default_factory=Counter)  # issue jobs
    index_outcomes: Counter[str] = field(default_factory=Counter)
    failed_for_good: Counter[str] = field(default_factory=Counter)  # reason -> jobs
    jobs_unfinished: list[str] = field(default_factory=list)
    faults: Counter[str] = field(default_factory=Counter)
    chaos: Counter[str] = field(default_factory=Counter)
    github_calls: int = 0
    samples: list[Sample] = field(default_factory=list)
    drain_s: float | None = None
    latency_s: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def rss(self, which: str) -> Sample | None:
        """The start, middle or end memory sample of the traffic phase."""
        during = [s for s in self.samples if s.t_s <= self.traffic_s + 5]
        if not during:
            return None
        return {"start": during[0], "middle": during[len(during) // 2],
                "end": during[-1]}[which]

    def latency(self, q: float) -> float | None:
        if not self.latency_s:
            return None
        ordered = sorted(self.latency_s)
        return round(ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))], 2)

    def summary(self) -> dict[str, Any]:
        out = {k: (dict(v) if isinstance(v, Counter) else v) for k, v in vars(self).items()
               if k not in ("samples", "latency_s")}
        out["samples"] = [asdict(s) | {"workers_mb": s.workers_mb} for s in self.samples]
        out["latency_p50_s"], out["latency_p99_s"] = self.latency(0.5), self.latency(0.99)
        out["latency_n"] = len(self.latency_s)
        return out


# --- repositories --------------------------------------------------------------------


@dataclass
class Repo:
    """A repository the fake serves, its functions, and the numbers handed out."""

    name: str
    path: Path
    functions: list[tuple[str, str]]  # (path, name)
    next_issue: int = 1
    next_pull: int = 5000  # pull requests and issues share numbers on GitHub: keep apart
    pushes: int = 0
    open_issues: list[int] = field(default_factory=list)
    answered_unfixed: list[int] = field(default_factory=list)


def _git(path: Path, *args: str, stdin: str | None = None,
         env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=path, input=stdin, capture_output=True, text=True,
                          check=True, env={**os.environ, **GIT_ENV, **(env or {})}).stdout.strip()


def _real_repo(path: Path, package: str) -> None:
    """A git repository holding the source of an installed package (no caches, no binaries)."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"{package} is not installed")
    source = Path(spec.origin).parent
    shutil.copytree(source, path / package,
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "*.pyc"))
    _git(path, "init", "-q", "-b", "main")
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", f"{package} as installed")


def _functions(path: Path) -> list[tuple[str, str]]:
    found = []
    for file in sorted(path.rglob("*.py")):
        rel = file.relative_to(path).as_posix()
        if "/." in f"/{rel}":
            continue
        found.extend((rel, m.group(1)) for m in FUNCTION.finditer(file.read_text(errors="replace")))
    return found


def _commit(path: Path, parent: str, files: dict[str, str], message: str) -> str:
    """A commit on ``parent`` with ``files`` written, made without touching the work tree."""
    with tempfile.TemporaryDirectory(prefix="soak-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(path, "read-tree", parent, env=env)
        for rel, text in files.items():
            blob = _git(path, "hash-object", "-w", "--stdin", stdin=text)
            _git(path, "update-index", "--add", "--cacheinfo", f"100644,{blob},{rel}", env=env)
        tree = _git(path, "write-tree", env=env)
    return _git(path, "commit-tree", tree, "-p", parent, "-m", message)


# --- traffic -------------------------------------------------------------------------


class Traffic:
    """Has the fake GitHub send a steady mix of deliveries (see the module docstring)."""

    KINDS: ClassVar[dict[str, float]] = {  # relative weights; an issue job for about 45% of deliveries
        "opened": 3.0, "edited": 1.0, "command": 1.5, "stranger": 0.5, "labeled": 0.6,
        "push": 0.6, "merge": 0.6, "redeliver": 0.6, "duplicate": 0.5, "bad-signature": 0.4,
        "ping": 0.2,
    }

    def __init__(self, stack: DevStack, repos: list[Repo], rng: random.Random) -> None:
        self.stack, self.repos, self.rng = stack, repos, rng
        self.sent: dict[str, Sent] = {}
        self.kinds: Counter[str] = Counter()
        self.bad_signatures: Counter[str] = Counter()
        self.merged: list[tuple[str, int, int]] = []  # (repo, issue, pull) to be scored once
        self.lock = threading.Lock()  # one action at a time (the fault threads merge too)

    # sending

    def _send(self, kind: str, event: str, payload: dict[str, Any] | bytes,
              repo: str | None = None, number: int | None = None,
              guid: str | None = None) -> None:
        guid = guid or str(uuid.uuid4())
        if guid not in self.sent:
            self.sent[guid] = Sent(guid, kind, event, repo, number, time.time())
        self.kinds[kind] += 1
        with suppress(httpx.HTTPError):  # recorded as a failed attempt: redelivered later
            self.stack.fake.send_webhook(event, payload, guid=guid)

    def _issue(self, repo: Repo, kind: str) -> None:
        n = repo.next_issue
        repo.next_issue += 1
        path, name = self.rng.choice(repo.functions)
        if kind == "short":  # under min_issue_length: an explicit skip
            title, body = "Crash", ""
        else:
            title = f"{name} returns the wrong result for empty input"
            body = (f"When I call `{name}` (in {path}) with an empty value it raises instead "
                    "of returning a default. Seen on the latest release.")
        self.stack.fake.add_issue(repo.name, n, title, body)
        p = issue_payload(repo.name, n, title, body)
        if kind == "by-bot":
            p["issue"]["user"].update(login="renovate[bot]", type="Bot")
        else:
            repo.open_issues.append(n)
        self._send(kind, "issues", p, repo.name, n)

    def _existing(self) -> tuple[Repo, int] | None:
        choices = [(r, n) for r in self.repos for n in r.open_issues]
        return self.rng.choice(choices) if choices else None

    def act(self, kind: str) -> None:
        """One delivery (or a few, for a merge) of ``kind``."""
        with self.lock:
            self._act(kind)

    def _act(self, kind: str) -> None:
        rng, fake = self.rng, self.stack.fake
        repo = rng.choice(self.repos)
        if kind == "opened":
            roll = rng.random()
            self._issue(repo, "short" if roll < 0.1 else "by-bot" if roll < 0.15 else "opened")
            return
        if kind in ("edited", "labeled", "command", "stranger"):
            found = self._existing()
            if found is None:
                return self._issue(repo, "opened")
            r, n = found
            issue = fake.issues[(r.name, n)]
            if kind in ("edited", "labeled"):
                p = issue_payload(r.name, n, issue.title, issue.body or "", action=kind)
                return self._send(kind, "issues", p, r.name, n)
            member = kind == "command"
            c = fake.add_comment(r.name, n, "/spider k=2" if member else "/spider",
                                 user="maintainer" if member else "drive-by",
                                 association="MEMBER" if member else "NONE")
            p = command_payload(r.name, n, c.id, c.body,
                                association="MEMBER" if member else "NONE")
            return self._send(kind, "issue_comment", p, r.name, n)
        if kind == "push":
            return self._push(repo)
        if kind == "merge":
            if not self.merge(rng.random() < 0.15):
                self._issue(repo, "opened")
            return None
        if kind in ("redeliver", "duplicate"):
            earlier = [s for s in self.sent.values() if s.kind not in ("redeliver", "duplicate")]
            if not earlier:
                return None
            pick = rng.choice(earlier)
            attempts = fake.deliveries_of(pick.guid)
            if not attempts:
                return None
            self.kinds[kind] += 1
            if kind == "redeliver":  # POST /app/hook/deliveries/{id}/attempts
                fake.redeliver(attempts[-1].id)
            else:  # GitHub sending the same delivery twice
                with suppress(httpx.HTTPError):
                    fake.send_webhook(pick.event, attempts[-1].body, guid=pick.guid)
            return None
        if kind == "bad-signature":
            return self._bad_signature(repo)
        self._send("ping", "ping", _sample("ping"))
        return None

    def _bad_signature(self, repo: Repo) -> None:
        """Posted straight at the bot (an attacker is not GitHub): must be refused."""
        p = issue_payload(repo.name, 1, "forged", "forged body")
        body = json.dumps(p).encode()
        tampered = self.rng.random() < 0.5
        headers = {"content-type": "application/json", "x-github-event": "issues",
                   "x-github-delivery": str(uuid.uuid4()),
                   "x-hub-signature-256": "sha256=" + ("0" * 64 if not tampered else
                                                       _sign(self.stack.secret, body + b" "))}
        self.kinds["bad-signature"] += 1
        try:
            r = httpx.post(self.stack.bot_url + "/webhook", content=body, headers=headers,
                           timeout=10)
            self.bad_signatures[str(r.status_code)] += 1
        except httpx.HTTPError:
            self.bad_signatures["no answer"] += 1

    def _push(self, repo: Repo) -> None:
        repo.pushes += 1
        k = repo.pushes
        head = _git(repo.path, "rev-parse", "refs/heads/main")
        pkg = repo.functions[0][0].split("/")[0]
        text = (f"def soak_helper_{k}(value):\n    \"\"\"Helper {k} added by a push.\"\"\"\n"
                f"    return value or {k}\n")
        sha = _commit(repo.path, head, {f"{pkg}/soak_{k}.py": text}, f"push {k}")
        _git(repo.path, "update-ref", "refs/heads/main", sha, head)
        served = self.stack.fake.repos[repo.name]
        p = _sample("push")
        p["repository"].update(id=served.id, full_name=repo.name, name=repo.name.split("/")[1],
                               default_branch="main")
        p["ref"], p["before"], p["after"] = "refs/heads/main", head, sha
        p["installation"]["id"] = INSTALLATION_ID
        self._send("push", "push", p, repo.name)

    def merge(self, unmerged: bool = False) -> bool:
        """A pull request that fixes an answered issue, merged (or closed unmerged), delivered
        as ``pull_request.closed`` and ``issues.closed``; False when no issue is ready."""
        fake = self.stack.fake
        ready = [(r, n) for r in self.repos for n in r.open_issues
                 if (c := fake.bot_comments(r.name, n)) and PERMALINK.search(c[0].body)]
        if not ready:
            return False
        repo, n = self.rng.choice(ready)
        body = fake.bot_comments(repo.name, n)[0].body
        m = PERMALINK.search(body)
        assert m is not None
        rel, end = m.group(1), int(m.group(3))
        base = _git(repo.path, "rev-parse", "refs/heads/main")
        lines = _git(repo.path, "show", f"{base}:{rel}").split("\n")
        if end > len(lines):
            return False
        lines[end - 1] += "  # fixed"
        number = repo.next_pull
        repo.next_pull += 1
        message = f"Fix {lines[end - 1].strip()[:40]}"
        head = _commit(repo.path, base, {rel: "\n".join(lines) + "\n"}, message)
        diff = _git(repo.path, "diff", base, head) + "\n"
        fake.add_pull(repo.name, number, f"Fix #{n}", f"Fixes #{n}", base_sha=base,
                      head_sha=head, files=files_from_diff(diff), merged=not unmerged,
                      commits=[message], closing_issues=[n])
        pr = {"action": "closed", "number": number,
              "pull_request": {"number": number, "merged": not unmerged, "state": "closed"},
              "repository": {"full_name": repo.name, "name": repo.name.split("/")[1]},
              "installation": {"id": INSTALLATION_ID},
              "sender": {"login": "maintainer", "type": "User"}}
        self._send("merged" if not unmerged else "closed-unmerged", "pull_request", pr,
                   repo.name, n)
        if unmerged:
            return True
        self.merged.append((repo.name, n, number))
        repo.open_issues.remove(n)
        fake.issues[(repo.name, n)].state = "closed"
        issue = fake.issues[(repo.name, n)]
        closed = issue_payload(repo.name, n, issue.title, issue.body or "", action="closed")
        closed["issue"]["state"] = "closed"
        self._send("issue-closed", "issues", closed, repo.name, n)
        return True

    def run(self, until: float, rate: float, stop: threading.Event) -> None:
        """Deliveries at ``rate`` a second (Poisson-spaced) until ``until`` (monotonic)."""
        kinds, weights = list(self.KINDS), list(self.KINDS.values())
        next_at = time.monotonic()
        while not stop.is_set() and time.monotonic() < until:
            next_at += self.rng.expovariate(rate)
            time.sleep(max(0.0, next_at - time.monotonic()))
            self.act(self.rng.choices(kinds, weights)[0])


def _sign(secret: str, body: bytes) -> str:
    import hashlib
    import hmac

    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


# --- faults --------------------------------------------------------------------------


def schedule(traffic_s: float) -> dict[str, list[float]]:
    """When each fault strikes, in seconds from the start of traffic: a whole worker every
    minute (from 20 s), a pool process every minute (from 50 s), Redis about every seven
    minutes and PostgreSQL about every six (each at least once, spread over the run)."""
    def every(first: float, step: float) -> list[float]:
        return [t for t in _arange(first, traffic_s - 5, step)]

    def spread(step: float, phase: float) -> list[float]:
        n = max(1, round(traffic_s / step))
        return [round(traffic_s * (i + phase) / n, 1) for i in range(n)]

    return {"worker": every(20.0, KILL_EVERY_S), "pool": every(50.0, KILL_EVERY_S),
            "redis": spread(REDIS_EVERY_S, 0.4), "postgres": spread(PG_EVERY_S, 0.65)}


def _arange(start: float, stop: float, step: float) -> Iterator[float]:
    t = start
    while t < stop:
        yield t
        t += step


class Faults:
    """Runs the fault schedule, one thread per kind of fault."""

    def __init__(self, stack: DevStack, traffic: Traffic, pg: PrivatePostgres,
                 failover: Any, rng: random.Random) -> None:
        self.stack, self.traffic, self.pg, self.failover = stack, traffic, pg, failover
        self.rng = rng
        self.counts: Counter[str] = Counter()
        self.notes: list[str] = []
        self._workers = threading.Lock()  # a worker is killed or restarted by one thread

    def _whole_worker(self) -> None:
        with self._workers:
            name = self.rng.choice(self.stack.worker_names)
            self.stack.kill_worker(name)
        time.sleep(WORKER_RESTART_S)
        with self._workers:
            self.stack.start_worker(name)
        self.counts["worker SIGKILLed"] += 1

    def _pool(self) -> None:
        with self._workers:
            name = self.rng.choice(self.stack.worker_names)
            if self.stack.kill_worker(name, pool_only=True):
                self.counts["pool process SIGKILLed"] += 1

    def _redis(self) -> None:
        if self.failover is None:
            self.stack.restart_redis(down_s=REDIS_DOWN_S)
            self.counts["Redis SIGKILLed and restarted"] += 1
        elif not self.counts["Redis failed over"]:
            self.failover.kill_primary()
            self.failover.wait_for_failover(timeout_s=60)
            self.counts["Redis failed over"] += 1
        else:
            self.notes.append("a Sentinel set fails over once: later Redis faults skipped")

    def _postgres(self) -> None:
        self.traffic.act("merge")  # a fix delivered: its scoring starts as the store goes
        time.sleep(0.3)
        self.pg.stop()
        time.sleep(PG_DOWN_S)
        self.pg.start()
        self.counts["PostgreSQL stopped and restarted"] += 1

    def run(self, start: float, when: dict[str, list[float]], stop: threading.Event) -> list[threading.Thread]:
        actions: dict[str, Callable[[], None]] = {
            "worker": self._whole_worker, "pool": self._pool, "redis": self._redis,
            "postgres": self._postgres}

        def loop(kind: str, times: list[float]) -> None:
            for t in times:
                if stop.wait(max(0.0, start + t - time.monotonic())):
                    return
                try:
                    actions[kind]()
                except (OSError, subprocess.SubprocessError, RuntimeError, TimeoutError,
                        KeyError, redis.RedisError) as exc:  # reported, the run goes on
                    self.notes.append(f"{kind} fault at {t:.0f} s failed: {exc!r}")

        threads = [threading.Thread(target=loop, args=(k, v), name=f"fault-{k}", daemon=True)
                   for k, v in when.items()]
        for t in threads:
            t.start()
        return threads


# --- measuring -----------------------------------------------------------------------


def _rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return round(total / 1024, 1)


def sample(stack: DevStack, t_s: float) -> Sample:
    """Memory now: each worker's tree, the bot, Redis's ``used_memory``."""
    workers = {n: _rss_mb(stack.pids(n)) for n in stack.worker_names}
    used: float | None = None
    try:
        client = stack.redis_client()
        try:
            used = round(int(client.info("memory")["used_memory"]) / 2**20, 1)
        finally:
            client.close()
    except redis.RedisError:
        used = None
    return Sample(round(t_s, 1), workers, _rss_mb(stack.pids("bot")), used)


def _queued(stack: DevStack, guids: list[str]) -> dict[str, tuple[str, bool]]:
    """Task id -> (guid, index job?) of every job an accepted attempt queued."""
    out: dict[str, tuple[str, bool]] = {}
    for g in guids:
        for a in stack.fake.deliveries_of(g):
            if a.ok:
                for job in queued_jobs(g, a.answer or {}):
                    out[job.task_id] = (g, job.index)
    return out


def drain(stack: DevStack, traffic: Traffic, timeout_s: float) -> tuple[float | None, dict[str, dict[str, Any]], dict[str, tuple[str, bool]]]:
    """Wait until every delivery is accepted (or its redeliveries are used up), every job
    queued has ended and the queues are empty; (seconds it took or None, outcomes, jobs)."""
    started = time.monotonic()
    deadline = started + timeout_s
    guids = list(traffic.sent)
    outcomes: dict[str, dict[str, Any]] = {}
    queued: dict[str, tuple[str, bool]] = {}
    while time.monotonic() < deadline:
        try:
            client = stack.redis_client()
            try:
                accepted = all(any(a.ok for a in stack.fake.deliveries_of(g)) for g in guids)
                queued = _queued(stack, guids)
                outcomes = read_outcomes(client, list(queued))
                if accepted and len(outcomes) == len(queued) and queues_empty(client):
                    return time.monotonic() - started, outcomes, queued
            finally:
                client.close()
        except redis.RedisError:
            pass
        time.sleep(1.0)
    return None, outcomes, queued


# --- the check -----------------------------------------------------------------------


def check(stack: DevStack, traffic: Traffic, outcomes: dict[str, dict[str, Any]],
          queued: dict[str, tuple[str, bool]], store_url: str, result: SoakResult) -> None:
    """Count every invariant from the fake's records, Redis's results and the store."""
    fake = stack.fake
    result.sent = traffic.kinds
    result.bad_signatures = traffic.bad_signatures
    sent = traffic.sent
    result.deliveries = len(sent)
    attempts: list[FakeDelivery] = [a for g in sent for a in fake.deliveries_of(g)]
    result.attempts = len(attempts)
    result.redelivered = sum(1 for a in attempts if a.redelivery)
    for a in attempts:
        result.answers[f"{a.status_code} {(a.answer or {}).get('status', '')}".strip()] += 1
    for g, s in sent.items():
        tries = fake.deliveries_of(g)
        if tries and not tries[0].ok:
            result.first_refused += 1
        if any(a.ok for a in tries):
            result.accepted += 1
        else:
            result.never_accepted.append(f"{s.kind} {s.repo}#{s.number} {g}")
    if any(k != "401" for k in traffic.bad_signatures):
        result.problems.append(f"bad signatures not all refused: {dict(traffic.bad_signatures)}")

    # issue jobs: every accepted issue ends in exactly one comment or an explicit skip
    by_issue: dict[tuple[str, int], list[dict[str, Any]]] = {}
    fix_jobs: list[dict[str, Any]] = []
    for task_id, (guid, index) in queued.items():
        s = sent[guid]
        outcome = outcomes.get(task_id)
        if outcome is None:
            result.jobs_unfinished.append(f"{s.kind} {s.repo}#{s.number} {task_id}")
            continue
        status = str(outcome.get("status"))
        if status == "failed":
            result.failed_for_good[f"{s.kind}: {str(outcome.get('reason', ''))[:120]}"] += 1
        if index:
            result.index_outcomes[status] += 1
        elif s.event == "pull_request" or s.kind == "issue-closed":
            result.fix_outcomes[status] += 1
            fix_jobs.append(outcome)
        else:
            result.job_outcomes[status] += 1
            by_issue.setdefault((str(s.repo), int(s.number or 0)), []).append(outcome)
    for (repo, n), outs in sorted(by_issue.items()):
        result.issues_accepted += 1
        comments = fake.bot_comments(repo, n)
        statuses = {str(o.get("status")) for o in outs}
        if len(comments) > 1:
            result.duplicate_comments.append(f"{repo}#{n}: {len(comments)} comments")
        elif len(comments) == 1 and statuses & set(COMMENTED):
            result.issues_one_comment += 1
        elif not comments and statuses == {"skipped"}:
            result.issues_skipped += 1
        else:
            result.lost_issues.append(f"{repo}#{n}: {len(comments)} comment(s), jobs {sorted(statuses)}")

    # merged fixes: each scored exactly once in the store
    from worker.store import Store

    store = Store(store_url, auto_upgrade=False)
    try:
        rows = Counter((f.repo, f.issue_number, f.pull_number) for f in store.fixes())
    finally:
        store.close()
    result.fixes_merged = len(traffic.merged)
    for key in traffic.merged:
        n = rows.get(key, 0)
        if n == 1:
            result.fixes_once += 1
        elif n == 0:
            result.fixes_never.append(f"{key[0]}#{key[1]} by #{key[2]}")
        else:
            result.fixes_twice.append(f"{key[0]}#{key[1]} by #{key[2]}: {n} records")

    # webhook -> comment: from sending issues.opened to the comment's creation
    creations: dict[str, float] = {}
    for c in fake.requests("POST"):
        if c.status == 201 and c.path.endswith("/comments") and c.path not in creations:
            creations[c.path] = c.at
    for s in sent.values():
        if s.kind == "opened":
            at = creations.get(f"/repos/{s.repo}/issues/{s.number}/comments")
            if at is not None and at >= s.at:
                result.latency_s.append(at - s.at)
    result.chaos = Counter(fake.chaos_counts)
    result.github_calls = len(fake.requests())

    p = result.problems
    if result.never_accepted:
        p.append(f"{len(result.never_accepted)} deliveries never accepted: {result.never_accepted[:5]}")
    if result.jobs_unfinished:
        p.append(f"{len(result.jobs_unfinished)} jobs never ended: {result.jobs_unfinished[:5]}")
    if result.lost_issues:
        p.append(f"{len(result.lost_issues)} lost issues: {result.lost_issues[:5]}")
    if result.duplicate_comments:
        p.append(f"{len(result.duplicate_comments)} duplicated: {result.duplicate_comments[:5]}")
    if result.fixes_never or result.fixes_twice:
        p.append(f"fixes never scored {result.fixes_never[:5]}, twice {result.fixes_twice[:5]}")
    if result.drain_s is None:
        p.append("the queues did not drain in time")


def table(result: SoakResult) -> str:
    """The invariant table, one metric a row (Markdown)."""
    def mb(which: str) -> str:
        s = result.rss(which)
        return "n/a" if s is None else f"{s.workers_mb} MB (bot {s.bot_rss_mb} MB) at {s.t_s:.0f} s"

    redis_mb = [s.redis_used_mb for s in result.samples if s.redis_used_mb is not None]
    rows = [
        ("traffic", f"{result.traffic_s / 60:.1f} min at {result.config.get('rate')} deliveries/s"),
        ("deliveries sent / accepted / refused at first / redelivered",
         f"{result.deliveries} / {result.accepted} / {result.first_refused} / "
         f"{result.redelivered} ({result.attempts} attempts)"),
        ("deliveries never accepted", str(len(result.never_accepted))),
        ("bad signatures refused", f"{result.bad_signatures.get('401', 0)} of "
                                   f"{sum(result.bad_signatures.values())}"),
        ("answered duplicate", str(result.answers.get("202 duplicate", 0))),
        ("issues accepted", str(result.issues_accepted)),
        ("issues with exactly one comment", str(result.issues_one_comment)),
        ("issues explicitly skipped", str(result.issues_skipped)),
        ("duplicate comments", str(len(result.duplicate_comments))),
        ("lost issues (accepted, no comment, no skip)", str(len(result.lost_issues))),
        ("merged fixes scored once / twice / never",
         f"{result.fixes_once} / {len(result.fixes_twice)} / {len(result.fixes_never)} "
         f"(of {result.fixes_merged})"),
        ("jobs: issue / index / fix", f"{dict(result.job_outcomes)} / "
                                      f"{dict(result.index_outcomes)} / {dict(result.fix_outcomes)}"),
        ("jobs failed for good", (f"{sum(result.failed_for_good.values())}: "
                                  f"{dict(result.failed_for_good)}") if result.failed_for_good
         else "0"),
        ("jobs never ended", str(len(result.jobs_unfinished))),
        ("faults", ", ".join(f"{k} {v}" for k, v in sorted(result.faults.items()))),
        ("GitHub failures injected", f"{sum(result.chaos.values())} of {result.github_calls} "
                                     f"calls: {dict(sorted(result.chaos.items()))}"),
        ("worker RSS (3 workers) start", mb("start")),
        ("worker RSS middle", mb("middle")),
        ("worker RSS end", mb("end")),
        ("Redis used memory start / end", f"{redis_mb[0]} / {redis_mb[-1]} MB" if redis_mb
         else "n/a"),
        ("queues drained after traffic stopped", "did not drain" if result.drain_s is None
         else f"{result.drain_s:.1f} s"),
        ("webhook → comment p50 / p99", f"{result.latency(0.5)} s / {result.latency(0.99)} s "
                                         f"({len(result.latency_s)} issues)"),
    ]
    lines = ["| metric | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in rows]
    return "\n".join(lines) + "\n"


# --- the run -------------------------------------------------------------------------


@contextmanager
def _redis_for(workdir: Path, sentinel: bool) -> Iterator[tuple[str | None, Any]]:
    if not sentinel:
        yield None, None
        return
    from spider_devkit.sentinel import RedisFailoverSet

    with RedisFailoverSet(workdir / "redis-set") as rs:
        yield rs.url, rs


def run_soak(workdir: Path, config: SoakConfig) -> SoakResult:
    """Start everything, run traffic and faults for ``config.minutes``, drain, check."""
    rng = random.Random(config.seed)
    result = SoakResult(config=asdict(config))
    result.machine = {"cpus": os.cpu_count(), "load_avg_1m_at_start": round(os.getloadavg()[0], 2)}
    repos_dir = workdir / "repos"
    make_repo(repos_dir / TINY)
    names = [TINY]
    for package in PACKAGES:
        name = f"acme/{package}"
        _real_repo(repos_dir / name, package)
        names.append(name)
    traffic_s = config.minutes * 60
    with ExitStack() as cleanup:
        pg = PrivatePostgres()
        cleanup.callback(pg.close)
        pg.start()
        redis_url, failover = cleanup.enter_context(_redis_for(workdir, config.sentinel))
        env = {**ENV, "SPIDER_DATABASE_URL": pg.url}
        if failover is not None:
            from spider_devkit.sentinel import MASTER

            env["SPIDER_REDIS_SENTINEL_MASTER"] = MASTER
        stack = cleanup.enter_context(DevStack(
            workdir / "stack", redis_url=redis_url, env=env, workers=len(WORKER_QUEUES),
            persistent_redis=True, worker_queues=WORKER_QUEUES,
            git_url_template=str(repos_dir / "{owner}" / "{name}")))
        repos = []
        for name in names:
            stack.add_repo(name, repos_dir / name)
            repos.append(Repo(name, repos_dir / name, _functions(repos_dir / name)))
        traffic = Traffic(stack, repos, rng)
        stack.fake.set_chaos(Chaos(rate=config.chaos_rate, seed=config.seed))
        faults = Faults(stack, traffic, pg, failover, random.Random(config.seed + 1))
        stop = threading.Event()
        start = time.monotonic()
        sampler = threading.Thread(target=_sampler, args=(stack, start, traffic_s, stop, result),
                                   daemon=True)
        sampler.start()
        fault_threads = faults.run(start, schedule(traffic_s), stop)
        traffic.run(start + traffic_s, config.rate, stop)
        result.traffic_s = round(time.monotonic() - start, 1)
        stop.set()
        for t in [*fault_threads, sampler]:
            t.join(timeout=120)
        stack.fake.set_chaos(None)  # GitHub heals; what was failed must still end well
        result.drain_s, outcomes, queued = drain(stack, traffic, config.drain_timeout_s)
        result.samples.append(sample(stack, time.monotonic() - start))
        result.faults = faults.counts
        check(stack, traffic, outcomes, queued, pg.url, result)
        result.problems.extend(faults.notes)
    return result


def _sampler(stack: DevStack, start: float, traffic_s: float, stop: threading.Event,
             result: SoakResult) -> None:
    for t in _arange(SAMPLE_OFFSET_S, traffic_s + 0.1, KILL_EVERY_S):
        if stop.wait(max(0.0, start + t - time.monotonic())):
            break
        result.samples.append(sample(stack, time.monotonic() - start))
    if not stop.is_set():
        stop.wait(max(0.0, start + traffic_s - time.monotonic()))
    result.samples.append(sample(stack, time.monotonic() - start))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.load.soak",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0, help="minutes of traffic")
    parser.add_argument("--rate", type=float, default=1.5, help="deliveries a second")
    parser.add_argument("--sentinel", action="store_true",
                        help="Redis as a primary, a replica and three Sentinels (failed over once)")
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--drain-timeout-s", type=float, default=600.0)
    parser.add_argument("--workdir", type=Path, help="keep logs and state here")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args(argv)
    config = SoakConfig(minutes=args.minutes, rate=args.rate, sentinel=args.sentinel,
                        seed=args.seed, drain_timeout_s=args.drain_timeout_s)
    with tempfile.TemporaryDirectory(prefix="spider-soak-") as tmp:
        result = run_soak(args.workdir or Path(tmp), config)
    result.machine["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    if args.json:
        args.json.write_text(json.dumps(result.summary(), indent=1, default=str))
    print(table(result), end="")
    print(f"machine: {result.machine}")
    print("problems: " + ("; ".join(result.problems) if result.problems else "none"))
    return 1 if result.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
