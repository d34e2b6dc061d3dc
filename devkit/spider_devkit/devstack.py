"""The whole app on loopback, for the replay command and the end-to-end tests.

Real parts: a ``redis-server`` of its own (or a given Redis), the bot served by uvicorn
(subprocess), one or more Celery workers (subprocesses), and the fake GitHub API (in this
process, so its recorded state can be read directly). Repositories are fetched from local
git paths. A fresh RSA key plays the app's private key; the fake checks JWTs against it.

For fault tests the stack can kill a worker (its pool process, or all of it), start it
again, and kill and restart its Redis on the same port and data directory (with
``persistent=True`` Redis keeps an append-only file, fsynced on every write).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from spider_devkit.fake_github import FakeGitHub

APP_ID = 4242
INSTALLATION_ID = 77
START_TIMEOUT_S = 60.0  # uvicorn and a Celery worker start in seconds even on 2 slow cores
RSA_BITS = 2048  # GitHub App keys are 2048-bit RSA
LISTEN_BACKLOG = 512  # load tests open many connections at once


def free_socket() -> socket.socket:
    """A listening TCP socket on a free loopback port (handed to uvicorn with ``--fd``)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # uvicorn takes an inherited fd for a Unix socket and so never turns Nagle off; accepted
    # connections inherit this instead (without it every answer waits ~40 ms for an ACK)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(LISTEN_BACKLOG)
    return sock


def free_port() -> int:
    """A loopback port free right now (for redis-server, which cannot take a socket)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def app_key_pair() -> tuple[str, str]:
    """A new (private PEM, public PEM) pair standing in for the GitHub App's key."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


class RedisServer:
    """A private ``redis-server`` on a free loopback port.

    Without ``persistent`` it keeps nothing on disk. With it, it runs as docs/reliability.md
    asks of a production Redis: an append-only file fsynced on every write, and no eviction.
    """

    def __init__(self, data_dir: Path, *, persistent: bool = False) -> None:
        self.data_dir = Path(data_dir)
        self.persistent = persistent
        self.url = ""
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> RedisServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.start()
        return self

    def argv(self) -> list[str]:
        """The command line (persistence settings included)."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed: pass a Redis URL instead")
        durable = (["--appendonly", "yes", "--appendfsync", "always", "--save", ""]
                   if self.persistent else ["--save", "", "--appendonly", "no"])
        return [binary, "--port", str(self.port), "--bind", "127.0.0.1", *durable,
                "--maxmemory-policy", "noeviction", "--dir", str(self.data_dir)]

    def start(self) -> None:
        """Start (again) on the same port and data directory; wait until it answers."""
        log = open(self.data_dir / "redis.log", "ab")  # noqa: SIM115 - owned by the process
        self._proc = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        log.close()
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            while True:
                try:
                    client.ping()
                    return
                except (redis.ConnectionError, redis.BusyLoadingError):
                    if self._proc.poll() is not None or time.monotonic() > deadline:
                        self.__exit__()
                        raise RuntimeError("redis-server did not start") from None
                    time.sleep(0.05)
        finally:
            client.close()

    def kill(self) -> None:
        """SIGKILL it, as a crash would: nothing is flushed on the way out."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(timeout=10)
        self._proc = None

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=5)
        self._proc = None


@dataclass
class DevStack:
    """Start with ``with DevStack(workdir) as stack:``; see the module docstring."""

    workdir: Path
    git_url_template: str = ""  # default: <workdir>/repos/{owner}/{name}
    redis_url: str | None = None  # None: start a private redis-server
    cache_dir: Path | None = None  # default: <workdir>/cache
    env: Mapping[str, str] = field(default_factory=dict)  # extra SPIDER_* for bot and worker
    worker_concurrency: int = 1
    workers: int = 1  # worker processes ("worker", "worker2", ...), each with its own log
    persistent_redis: bool = False  # the private Redis keeps an fsynced append-only file
    token_style: str = "ghs"  # the fake's installation tokens: "ghs" or "v1" (see FakeGitHub)
    celery_app: str = "worker.celery_app"  # the workers' -A (a test's module may wrap it)
    worker_queues: Mapping[str, str] = field(default_factory=dict)  # name -> its -Q (default: all)

    def __post_init__(self) -> None:
        self.workdir = Path(self.workdir).resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.secret = secrets.token_hex(20)
        private, public = app_key_pair()
        self._private_key = private
        self.fake = FakeGitHub(app_id=APP_ID, public_key_pem=public,
                               installation_id=INSTALLATION_ID, token_style=self.token_style)
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._stack = contextlib.ExitStack()
        self.redis_server: RedisServer | None = None
        self.bot_url = ""

    @property
    def worker_names(self) -> list[str]:
        """Names of the worker processes (and of their logs, ``<name>.log``)."""
        return ["worker" if i == 0 else f"worker{i + 1}" for i in range(self.workers)]

    @property
    def private_key(self) -> str:
        """The app's private key the processes were given (tests look for it in logs)."""
        return self._private_key

    # --- lifecycle ---

    def __enter__(self) -> DevStack:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        if self.redis_url is None:
            self.redis_url = self._start_redis()
        api_url = self._stack.enter_context(self.fake.serve())
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPIDER_")}
        env.update({
            "SPIDER_REDIS_URL": self.redis_url,
            "SPIDER_WEBHOOK_SECRET": self.secret,
            "SPIDER_GITHUB_APP_ID": str(APP_ID),
            "SPIDER_GITHUB_PRIVATE_KEY": self._private_key,
            "SPIDER_GITHUB_API_URL": api_url,
            "SPIDER_GIT_URL_TEMPLATE": self.git_url_template
            or str(self.workdir / "repos" / "{owner}" / "{name}"),
            "SPIDER_CACHE_DIR": str(self.cache_dir or self.workdir / "cache"),
            "PYTHONUNBUFFERED": "1",
        })
        env.update(self.env)
        self.process_env = env
        sock = free_socket()
        self.bot_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        # the app's webhook as registered on GitHub: deliveries go through the fake, which
        # records them (and can redeliver them) as GitHub does
        self.fake.webhook_url = self.bot_url + "/webhook"
        self.fake.webhook_secret = self.secret
        self._spawn("bot", [sys.executable, "-m", "uvicorn", "bot.app:app", "--fd",
                            str(sock.fileno()), "--log-level", "warning", "--no-access-log"],
                    pass_fds=(sock.fileno(),))
        sock.close()
        for name in self.worker_names:
            self.start_worker(name)
        self._wait_http(self.bot_url + "/healthz", "bot")

    def start_worker(self, name: str = "worker") -> None:
        """Start (or start again) the worker process ``name`` (on the queues
        ``worker_queues[name]`` names, else on every queue)."""
        queues = self.worker_queues.get(name)
        self._spawn(name, [sys.executable, "-m", "celery", "-A", self.celery_app, "worker",
                           *(["-Q", queues] if queues else []),
                           "--pool", "prefork", "--concurrency", str(self.worker_concurrency),
                           "--without-gossip", "--without-mingle", "--without-heartbeat",
                           "--loglevel", "INFO", "--hostname", f"{name}-{uuid.uuid4().hex[:6]}@%h"])

    def kill_worker(self, name: str = "worker", *, pool_only: bool = False) -> list[int]:
        """SIGKILL a worker: all of it (as a lost machine), or only its pool processes (as the
        out-of-memory killer would). Returns the pids killed."""
        proc = self._procs[name]
        if pool_only:
            pids = _children(proc.pid)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            return pids
        self._procs.pop(name)
        pids = [proc.pid, *_children(proc.pid)]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        return pids

    def pids(self, name: str) -> list[int]:
        """The running process ``name`` (bot, a worker) and its direct children (a worker's
        pool processes); empty when it is not running."""
        proc = self._procs.get(name)
        if proc is None or proc.poll() is not None:
            return []
        return [proc.pid, *_children(proc.pid)]

    def restart_redis(self, down_s: float = 1.0) -> None:
        """SIGKILL the stack's Redis and start it again after ``down_s`` seconds."""
        if self.redis_server is None:
            raise RuntimeError("the stack does not own its Redis")
        self.redis_server.kill()
        time.sleep(down_s)
        self.redis_server.start()

    def _start_redis(self) -> str:
        self.redis_server = self._stack.enter_context(
            RedisServer(self.workdir / "redis", persistent=self.persistent_redis))
        return self.redis_server.url

    def _spawn(self, name: str, argv: list[str], pass_fds: tuple[int, ...] = ()) -> None:
        log = open(self.workdir / f"{name}.log", "ab")  # noqa: SIM115 - closed in close()
        self._stack.callback(log.close)
        self._procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                             env=self.process_env,
                                             pass_fds=pass_fds, start_new_session=True)

    def _check_alive(self, name: str) -> None:
        proc = self._procs[name]
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}:\n{self.log_tail(name)}")

    def _wait_http(self, url: str, name: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            self._check_alive(name)
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url, timeout=1).status_code == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"{name} did not answer {url}:\n{self.log_tail(name)}")

    def _stop(self, name: str) -> None:
        proc = self._procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)

    def close(self) -> None:
        """Stop the workers, the bot and Redis (gracefully, then firmly) and the fake."""
        for name in [n for n in self._procs if n != "bot"] + ["bot"]:
            self._stop(name)
        self._stack.close()

    def log_tail(self, name: str, chars: int = 4000) -> str:
        """The end of a component's log (bot, worker, redis)."""
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    # --- driving it ---

    def add_repo(self, full_name: str, path: Path) -> None:
        """Serve a local git repository as ``full_name`` (API and git fetch)."""
        self.fake.add_repo(full_name, path)

    def deliver(self, event: str, payload: dict[str, Any] | bytes, *, delivery_id: str | None = None,
                secret: str | None = None) -> httpx.Response:
        """Have the fake GitHub deliver a webhook to the bot, signed with the stack's secret
        (or ``secret``); the fake records it, so it can list and redeliver it."""
        return self.fake.send_webhook(event, payload, guid=delivery_id, secret=secret)

    def result(self, task_id: str, timeout: float = 180.0) -> dict[str, Any]:
        """Wait for a task's outcome (the dict ``localize_issue`` returns)."""
        from worker.celery_app import make_celery

        app = make_celery(self.settings())
        try:
            deadline = time.monotonic() + timeout
            res = app.AsyncResult(task_id)
            while not res.ready():
                for name in self._procs:
                    self._check_alive(name)
                if time.monotonic() > deadline:
                    raise TimeoutError(f"task {task_id} not done in {timeout:.0f} s "
                                       f"(state {res.state}):\n{self.log_tail('worker')}")
                time.sleep(0.1)
            value = res.get(timeout=5, propagate=False)
            if not isinstance(value, dict):
                raise RuntimeError(f"task {task_id} failed: {value!r}\n{self.log_tail('worker')}")
            return value
        finally:
            app.close()

    def redis_client(self) -> redis.Redis:
        """A client of the stack's Redis (its master, when it is a Sentinel URL)."""
        from contract.redis_client import redis_client

        return redis_client(self.settings(), timeout_s=10)

    def settings(self) -> Any:
        """AppSettings reaching the stack's Redis as its processes do (Sentinel included)."""
        from contract.settings import AppSettings

        master = self.env.get("SPIDER_REDIS_SENTINEL_MASTER")
        extra = {"redis_sentinel_master": master} if master else {}
        return AppSettings(redis_url=self.redis_url or "", **extra)

    def wait_workers_ready(self, timeout_s: float = 120.0) -> None:
        """Block until every worker has logged Celery's "ready." line (its pool started and
        its queues consumed), as a deployed worker is before the issues it answers."""
        deadline = time.monotonic() + timeout_s
        for name in self.worker_names:
            while not any(r.get("logger") == "celery.apps.worker"
                          and str(r.get("msg", "")).endswith(" ready.")
                          for r in self.log_records(name)):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name} not ready in {timeout_s} s:\n{self.log_tail(name)}")
                time.sleep(0.1)

    def log_records(self, name: str) -> list[dict[str, Any]]:
        """The JSON lines of a component's log (other lines are left out)."""
        path = self.workdir / f"{name}.log"
        records = []
        for line in (path.read_text(errors="replace") if path.exists() else "").splitlines():
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    records.append(json.loads(line))
        return records


def _children(pid: int) -> list[int]:
    """Direct child processes of ``pid`` (Linux /proc)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            out.extend(int(c) for c in task.read_text().split())
    return out

