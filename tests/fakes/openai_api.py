"""A fake OpenAI-compatible chat-completions server on 127.0.0.1 (the failure cases).

It speaks the real HTTP shape (``POST /v1/chat/completions``, OpenAI's error bodies, a
``usage`` block, ``logprobs.content[].top_logprobs``). Each request takes the next
scripted answer (else ``default``):

- a ``float``: a pointwise verdict, answered as "Yes"/"No" log-probabilities whose
  difference is that log-odds;
- a ``str``: the assistant's text (a listwise answer, or nonsense);
- an ``int``: an HTTP error status with an OpenAI error body;
- ``"sleep:S"``: wait S seconds before answering (a timeout);
- ``"nologprobs"``: a pointwise answer without log-probabilities (an old server).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.loopback import serve_handler

Answer = float | str | int


@dataclass
class FakeOpenAI:
    """State of the fake server: scripted answers and recorded requests."""

    answers: list[Answer] = field(default_factory=list)
    default: Answer = 0.0
    reject_schema: bool = False  # answer 400 to a request with a json_schema response_format
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    base_url: str = ""

    def next_answer(self) -> Answer:
        with self.lock:
            return self.answers.pop(0) if self.answers else self.default


def _logprobs(log_odds: float) -> dict[str, Any]:
    """First-token alternatives whose Yes/No log-probabilities differ by ``log_odds``."""
    p_yes = 1 / (1 + math.exp(-log_odds)) * 0.9  # 10% of the mass on other tokens
    p_no = 0.9 - p_yes
    alts = sorted(
        [("Yes", p_yes), ("No", p_no), ("The", 0.06), ("I", 0.04)], key=lambda a: -a[1]
    )
    top = [{"token": t, "logprob": math.log(max(p, 1e-12)), "bytes": list(t.encode())}
           for t, p in alts]
    return {"content": [{**top[0], "top_logprobs": top}]}


def _handler(state: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output clean
            return

        def _send(self, status: int, body: dict[str, Any]) -> None:
            raw = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            except (BrokenPipeError, ConnectionResetError):  # the client timed out first
                return

        def _error(self, status: int, message: str) -> None:
            self._send(status, {"error": {"message": message, "type": "server_error",
                                          "code": status}})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._error(404, self.path)
                return
            with state.lock:
                state.requests.append(body)
                state.headers.append(dict(self.headers))
            fmt = body.get("response_format") or {}
            if state.reject_schema and fmt.get("type") == "json_schema":
                self._send(400, {"error": {"message": "response_format is not supported",
                                           "type": "invalid_request_error", "code": 400}})
                return
            answer = state.next_answer()
            if isinstance(answer, str) and answer.startswith("sleep:"):
                time.sleep(float(answer.split(":", 1)[1]))
                answer = 0.0
            if isinstance(answer, int) and not isinstance(answer, bool):
                self._error(answer, "scripted failure")
                return
            message: dict[str, Any] = {"role": "assistant", "content": ""}
            choice: dict[str, Any] = {"index": 0, "finish_reason": "stop"}
            if isinstance(answer, float):
                message["content"] = "Yes" if answer >= 0 else "No"
                choice["logprobs"] = _logprobs(answer) if body.get("logprobs") else None
            elif answer == "nologprobs":
                message["content"] = "Yes"
                choice["logprobs"] = None
            else:
                message["content"] = answer
            choice["message"] = message
            prompt_tokens = len(json.dumps(body.get("messages", []))) // 4
            self._send(200, {
                "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", ""), "choices": [choice],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 1,
                          "total_tokens": prompt_tokens + 1,
                          "prompt_tokens_details": {"cached_tokens": 0}},
            })

    return Handler


@contextmanager
def serve_fake_openai() -> Iterator[FakeOpenAI]:
    """Serve a fake on a free port; yields its state with ``base_url`` (…/v1) set."""
    state = FakeOpenAI()
    with serve_handler(_handler(state)) as base_url:
        state.base_url = base_url + "/v1"
        yield state
