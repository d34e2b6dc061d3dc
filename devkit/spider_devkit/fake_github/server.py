"""Serve an ASGI app on a free loopback port in a thread, for as long as a block runs."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

START_TIMEOUT_S = 10.0  # how long the server may take to start listening
STOP_TIMEOUT_S = 5.0  # how long it may take to stop
POLL_S = 0.01


@contextmanager
def serving(app: Any, host: str, on_bound: Callable[[str], None]) -> Iterator[str]:
    """Bind a free port on ``host``, tell ``on_bound`` the base URL (before the first
    request can arrive), serve ``app`` in a thread; yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    base_url = f"http://{host}:{sock.getsockname()[1]}"
    on_bound(base_url)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the fake GitHub server did not start")
        time.sleep(POLL_S)
    try:
        yield base_url
    finally:
        server.should_exit = True
        thread.join(timeout=STOP_TIMEOUT_S)
        sock.close()
