"""A fake Anthropic Messages API on 127.0.0.1 that speaks the real HTTP shape.

Each POST /v1/messages is recorded; the reply text comes from a script of answers
(a string is the assistant's text, an int is an HTTP error status to return).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.loopback import serve_handler


@dataclass
class FakeAnthropic:
    """State of the fake server: scripted answers and recorded requests."""

    answers: list[str | int] = field(default_factory=list)
    default: str | int = '{"relevant": []}'
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    base_url: str = ""

    def next_answer(self) -> str | int:
        with self.lock:
            return self.answers.pop(0) if self.answers else self.default


def _handler(state: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output clean
            return

        def _send(self, status: int, body: dict[str, Any]) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.rstrip("/") != "/v1/messages":
                self._send(
                    404,
                    {"type": "error", "error": {"type": "not_found_error", "message": self.path}},
                )
                return
            with state.lock:
                state.requests.append(body)
                state.headers.append(dict(self.headers))
            auth = self.headers.get("authorization", "")
            if not (self.headers.get("x-api-key") or auth.startswith("Bearer ")):
                self._send(
                    401,
                    {
                        "type": "error",
                        "error": {"type": "authentication_error", "message": "no key"},
                    },
                )
                return
            answer = state.next_answer()
            if isinstance(answer, int):
                self._send(
                    answer,
                    {
                        "type": "error",
                        "error": {"type": "api_error", "message": "scripted failure"},
                    },
                )
                return
            self._send(
                200,
                {
                    "id": f"msg_{len(state.requests)}",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", "claude"),
                    "content": [{"type": "text", "text": answer}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 5},
                },
            )

    return Handler


@contextmanager
def serve_fake_anthropic(state: FakeAnthropic | None = None) -> Iterator[FakeAnthropic]:
    """Run the fake on an ephemeral loopback port for the duration of the block."""
    state = state or FakeAnthropic()
    with serve_handler(_handler(state)) as base_url:
        state.base_url = base_url
        yield state
