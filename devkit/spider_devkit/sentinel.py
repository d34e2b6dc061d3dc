"""A Redis with failover on loopback: a primary, a replica and three Sentinels, all
``redis-server`` processes (``redis-server sentinel.conf --sentinel``) on free ports.

For the failover test: the app is given :attr:`RedisFailoverSet.url`
(``sentinel://...;sentinel://...``) and the master's name; :meth:`kill_primary` SIGKILLs
the primary and :meth:`wait_for_failover` waits until the Sentinels name the replica as
the new master. Sentinel timeouts are short (a primary is down after 1 s; a failover
retried after 3 s) so a test sees a failover in seconds. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from pathlib import Path

import redis

from spider_devkit.devstack import free_port

START_TIMEOUT_S = 60.0
MASTER = "mymaster"


class RedisFailoverSet:
    """Use as ``with RedisFailoverSet(dir) as rs:``; see the module docstring."""

    def __init__(self, data_dir: Path, *, master_name: str = MASTER, down_after_ms: int = 1000,
                 failover_timeout_ms: int = 3000, sentinels: int = 3) -> None:
        self.data_dir = Path(data_dir)
        self.master_name = master_name
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms
        self.sentinel_ports: list[int] = []
        self.primary_port = 0
        self.replica_port = 0
        self._count = sentinels
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        """The app's ``SPIDER_REDIS_URL``: the Sentinels, database 0."""
        return ";".join(f"sentinel://127.0.0.1:{p}" for p in self.sentinel_ports) + "/0"

    def __enter__(self) -> RedisFailoverSet:
        try:
            self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _binary(self) -> str:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed")
        return binary

    def _redis(self, name: str, port: int, *extra: str) -> None:
        path = self.data_dir / name
        path.mkdir(parents=True, exist_ok=True)
        argv = [self._binary(), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(path),
                "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                "--maxmemory-policy", "noeviction", *extra]
        self._spawn(name, argv)
        self._wait_ping(name, port)

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.data_dir / f"{name}.log", "ab")  # noqa: SIM115 - owned by the process
        self._procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                             start_new_session=True)
        log.close()

    def _wait(self, what: str, ok: object, timeout_s: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(redis.RedisError, KeyError, IndexError):
                if ok():  # type: ignore[operator]
                    return
            time.sleep(0.1)
        raise RuntimeError(f"{what} not ready in {timeout_s:.0f} s")

    def _wait_ping(self, name: str, port: int) -> None:
        def up() -> bool:
            if self._procs[name].poll() is not None:
                raise RuntimeError(f"{name} exited: see {self.data_dir / (name + '.log')}")
            return bool(self.client(port).ping())

        self._wait(name, up)

    def client(self, port: int) -> redis.Redis:
        """A plain client of one process (primary, replica or Sentinel) by port."""
        return redis.Redis(host="127.0.0.1", port=port, socket_timeout=2,
                           socket_connect_timeout=2)

    def _start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.primary_port, self.replica_port = free_port(), free_port()
        self._redis("primary", self.primary_port)
        self._redis("replica", self.replica_port, "--replicaof", "127.0.0.1",
                    str(self.primary_port))
        self._wait("replication", lambda: self.client(self.replica_port).info("replication")[
            "master_link_status"] == "up")
        for i in range(self._count):
            port = free_port()
            conf = self.data_dir / f"sentinel{i}.conf"
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {self.data_dir}\n"
                f"sentinel monitor {self.master_name} 127.0.0.1 {self.primary_port} 2\n"
                f"sentinel down-after-milliseconds {self.master_name} {self.down_after_ms}\n"
                f"sentinel failover-timeout {self.master_name} {self.failover_timeout_ms}\n"
                f"sentinel parallel-syncs {self.master_name} 1\n")
            self._spawn(f"sentinel{i}", [self._binary(), str(conf), "--sentinel"])
            self.sentinel_ports.append(port)
        for i, port in enumerate(self.sentinel_ports):
            self._wait_ping(f"sentinel{i}", port)

        def settled() -> bool:  # every Sentinel knows the replica and the other Sentinels
            for port in self.sentinel_ports:
                state = self.client(port).sentinel_master(self.master_name)
                if int(state["num-slaves"]) < 1 or int(state["num-other-sentinels"]) < self._count - 1:
                    return False
            return True

        self._wait("sentinels", settled)

    def master_port(self) -> int | None:
        """The master's port as the first Sentinel that answers names it."""
        for port in self.sentinel_ports:
            with contextlib.suppress(redis.RedisError):
                addr = self.client(port).sentinel_get_master_addr_by_name(self.master_name)
                if addr:
                    return int(addr[1])
        return None

    def kill_primary(self) -> None:
        """SIGKILL the primary, as a crash of its machine would."""
        proc = self._procs.get("primary")
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)

    def wait_for_failover(self, timeout_s: float = 60.0) -> int:
        """Wait until the Sentinels name the replica as master and it accepts writes;
        return its port."""

        def promoted() -> bool:
            return (self.master_port() == self.replica_port
                    and self.client(self.replica_port).info("replication")["role"] == "master")

        self._wait("failover", promoted, timeout_s)
        return self.replica_port

    def __exit__(self, *exc: object) -> None:
        for proc in self._procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self._procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        self._procs.clear()
