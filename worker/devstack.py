"""The whole app on loopback, for the replay command and the end-to-end tests.

Real parts: a ``redis-server`` of its own (or a given Redis), the bot served by uvicorn
(subprocess), a Celery worker (subprocess), and the fake GitHub API (in this process, so
its recorded state can be read directly). Repositories are fetched from local git paths.
A fresh RSA key plays the app's private key; the fake checks JWTs against it.
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

from bot.signature import sign
from worker.fake_github import FakeGitHub

APP_ID = 4242
INSTALLATION_ID = 77
START_TIMEOUT_S = 60.0  # uvicorn and a Celery worker start in seconds even on 2 slow cores
RSA_BITS = 2048  # GitHub App keys are 2048-bit RSA


def free_socket() -> socket.socket:
    """A listening TCP socket on a free loopback port (handed to uvicorn with ``--fd``)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
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
    """A private ``redis-server`` on a free loopback port, without persistence."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.url = ""
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> RedisServer:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed: pass a Redis URL instead")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        self._proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.data_dir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        self.url = f"redis://127.0.0.1:{port}/0"
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            while True:
                try:
                    client.ping()
                    return self
                except redis.ConnectionError:
                    if self._proc.poll() is not None or time.monotonic() > deadline:
                        self.__exit__()
                        raise RuntimeError("redis-server did not start") from None
                    time.sleep(0.05)
        finally:
            client.close()

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

    def __post_init__(self) -> None:
        self.workdir = Path(self.workdir).resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.secret = secrets.token_hex(20)
        private, public = app_key_pair()
        self._private_key = private
        self.fake = FakeGitHub(app_id=APP_ID, public_key_pem=public, installation_id=INSTALLATION_ID)
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._stack = contextlib.ExitStack()
        self.bot_url = ""

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
        self._spawn("bot", [sys.executable, "-m", "uvicorn", "bot.app:app", "--fd",
                            str(sock.fileno()), "--log-level", "warning", "--no-access-log"],
                    pass_fds=(sock.fileno(),))
        sock.close()
        self._spawn("worker", [sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker",
                               "--pool", "prefork", "--concurrency", str(self.worker_concurrency),
                               "--without-gossip", "--without-mingle", "--without-heartbeat",
                               "--loglevel", "INFO", "--hostname", f"dev-{uuid.uuid4().hex[:6]}@%h"])
        self._wait_http(self.bot_url + "/healthz", "bot")

    def _start_redis(self) -> str:
        server = self._stack.enter_context(RedisServer(self.workdir / "redis"))
        return server.url

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

    def close(self) -> None:
        """Stop the worker, the bot and Redis (gracefully, then firmly) and the fake."""
        for name in ("worker", "bot"):
            proc = self._procs.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
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
        """POST a webhook to the bot, signed with the stack's secret (or ``secret``)."""
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        headers = {
            "content-type": "application/json",
            "x-github-event": event,
            "x-github-delivery": delivery_id or str(uuid.uuid4()),
            "x-hub-signature-256": sign(secret or self.secret, body),
            "user-agent": "GitHub-Hookshot/devstack",
        }
        return httpx.post(self.bot_url + "/webhook", content=body, headers=headers, timeout=10)

    def result(self, task_id: str, timeout: float = 180.0) -> dict[str, Any]:
        """Wait for a task's outcome (the dict ``localize_issue`` returns)."""
        from worker.celery_app import make_celery
        from worker.settings import AppSettings

        app = make_celery(AppSettings(redis_url=self.redis_url or ""))
        try:
            deadline = time.monotonic() + timeout
            res = app.AsyncResult(task_id)
            while not res.ready():
                self._check_alive("worker")
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
        """A client of the stack's Redis."""
        return redis.Redis.from_url(self.redis_url or "")

