"""PostgreSQL for the tests: a throw-away database on the machine's server, and private
servers (``initdb``/``pg_ctl`` in a temporary folder on a free port) for outage tests.

As root (CI), the server binaries run as the ``postgres`` user: ``initdb`` refuses root.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from spider_devkit.devstack import free_port

SHARED_ADMIN_URL = os.environ.get("SPIDER_TEST_PG_ADMIN_URL",
                                  "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
TEST_ROLE = "spider_test"  # made (with a password) when the admin URL is refused
START_TIMEOUT_S = 30.0


def _bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def _as_postgres() -> list[str]:
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return []
    return ["runuser", "-u", "postgres", "--"]


def _admin_url() -> str | None:
    """A URL that may create databases on the shared server, or None."""
    try:
        with create_engine(SHARED_ADMIN_URL, connect_args={"connect_timeout": 3}).connect():
            return SHARED_ADMIN_URL
    except OperationalError:
        pass
    prefix, psql = _as_postgres(), _bin("psql")
    if not prefix or psql is None:
        return None
    sql = (f"DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname='{TEST_ROLE}') THEN "
           f"CREATE ROLE {TEST_ROLE} LOGIN CREATEDB PASSWORD '{TEST_ROLE}'; END IF; END$$;")
    done = subprocess.run([*prefix, psql, "-q", "-c", sql], capture_output=True, check=False)
    if done.returncode != 0:
        return None
    return f"postgresql+psycopg://{TEST_ROLE}:{TEST_ROLE}@127.0.0.1:5432/postgres"


@pytest.fixture(scope="session")
def shared_pg_admin() -> str:
    url = _admin_url()
    if url is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL on 127.0.0.1:5432 is needed (.ci/run starts it)")
        pytest.skip("no PostgreSQL on 127.0.0.1:5432")
    return url


@pytest.fixture
def pg_url(shared_pg_admin: str) -> Iterator[str]:
    """A fresh database on the shared server, dropped afterwards."""
    name = f"spider_test_{uuid.uuid4().hex[:10]}"
    admin = create_engine(shared_pg_admin, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    yield shared_pg_admin.rsplit("/", 1)[0] + "/" + name
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


class PrivatePostgres:
    """A PostgreSQL server of its own (trust auth on 127.0.0.1), to stop and start."""

    def __init__(self) -> None:
        initdb = _bin("initdb")
        if initdb is None or _bin("pg_ctl") is None:
            raise RuntimeError("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
        self.dir = Path(tempfile.mkdtemp(prefix="spider-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"
        prefix = _as_postgres()
        if prefix:
            shutil.chown(self.dir, "postgres", "postgres")
        self._prefix = prefix
        subprocess.run([*prefix, initdb, "-D", str(self.data), "-U", "postgres", "-A", "trust",
                        "--no-sync"], check=True, capture_output=True)

    def start(self) -> None:
        """Start (again) on the same port and data; wait until it answers."""
        opts = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.dir} -c fsync=off"
        subprocess.run([*self._prefix, _bin("pg_ctl") or "pg_ctl", "-D", str(self.data), "-o",
                        opts, "-l", str(self.dir / "pg.log"), "-w", "start"],
                       check=True, capture_output=True, timeout=START_TIMEOUT_S)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with create_engine(self.url).connect():
                    return
            except OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def stop(self) -> None:
        """Stop it at once (connections cut, as a crash or a failover would)."""
        subprocess.run([*self._prefix, _bin("pg_ctl") or "pg_ctl", "-D", str(self.data), "-m",
                        "immediate", "-w", "stop"], check=False, capture_output=True,
                       timeout=START_TIMEOUT_S)

    def close(self) -> None:
        """Stop it and remove its folder."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def private_pg() -> Iterator[PrivatePostgres]:
    try:
        server = PrivatePostgres()
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"cannot start a private PostgreSQL: {exc}")
    server.start()
    yield server
    server.close()
