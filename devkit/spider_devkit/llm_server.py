"""A real llama.cpp server on 127.0.0.1 for tests and measurements (dev-only).

llama.cpp's own C++ server (the one `llama-server` runs), from the ``xllamacpp`` binary
wheel (no compiler needed): it speaks the OpenAI chat-completions API with
log-probabilities, JSON-schema-constrained answers and a prompt cache, as a self-hosting
team's server does. The product never imports this: it only takes a URL.

    python -m spider_devkit.llm_server MODEL.gguf [--port 8080] [--threads 2] [--ctx 8192]

prints ``listening http://127.0.0.1:PORT`` once it answers, then serves until stopped.
:func:`serve` runs it as a subprocess for a test (a crash of the native code cannot take
the test process with it).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

READY = "listening "  # the line the server prints once it answers
START_TIMEOUT_S = 300.0  # loading a 1.5B model on two busy cores takes a while
MODEL_ALIAS = "local"  # the name the server answers to (SPIDER_LLM_MODEL)


def main(argv: list[str] | None = None) -> int:
    """Serve a GGUF model until SIGTERM/SIGINT."""
    ap = argparse.ArgumentParser(prog="python -m spider_devkit.llm_server")
    ap.add_argument("model", type=Path)
    ap.add_argument("--port", type=int, default=0, help="0: any free port")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--ctx", type=int, default=8192, help="context size in tokens")
    ap.add_argument("--parallel", type=int, default=1, help="slots (requests at once)")
    args = ap.parse_args(argv)
    if not args.model.is_file():
        print(f"no model file at {args.model}", file=sys.stderr)
        return 2
    import xllamacpp as xlc

    p = xlc.CommonParams()
    p.model.path = str(args.model)
    p.n_ctx = args.ctx
    p.n_parallel = args.parallel
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    p.hostnames = ["127.0.0.1"]
    p.port = args.port
    p.model_alias = {MODEL_ALIAS}
    p.verbosity = 0
    server = xlc.Server(p)
    print(READY + server.listening_address, flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    del server
    return 0


@contextmanager
def serve(model: Path, *, threads: int = 2, ctx: int = 4096) -> Iterator[str]:
    """Run the server in a subprocess; yield its OpenAI base URL (``…/v1``)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "spider_devkit.llm_server", str(model), "--threads",
         str(threads), "--ctx", str(ctx)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        line = _first_line(proc)
        if not line.startswith(READY):
            raise RuntimeError(f"the llama.cpp server did not start (exit {proc.poll()})")
        yield line[len(READY):].strip().rstrip("/") + "/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _first_line(proc: subprocess.Popen[str]) -> str:
    """The server's first line of output, or "" when it ends or stays silent too long."""
    out: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        out.append(proc.stdout.readline())

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(START_TIMEOUT_S)
    return out[0] if out else ""


if __name__ == "__main__":
    raise SystemExit(main())
