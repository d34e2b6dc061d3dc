"""Helpers of the end-to-end tests: payloads for any repository, waiting on log lines,
and the check that no log holds a secret."""

from __future__ import annotations

import copy
import json
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from spider_devkit.devstack import INSTALLATION_ID, DevStack

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def _sample(name: str) -> dict[str, Any]:
    return copy.deepcopy(json.loads((SAMPLES / name / "payload.json").read_text()))


def issue_payload(repo: str, number: int, title: str, body: str, *,
                  action: str = "opened") -> dict[str, Any]:
    """An ``issues`` delivery about ``repo``#``number``."""
    p = _sample("issues_opened")
    p["action"] = action
    p["repository"]["full_name"] = repo
    p["repository"]["name"] = repo.split("/")[1]
    p["installation"]["id"] = INSTALLATION_ID
    p["issue"].update(number=number, title=title, body=body)
    return p


def command_payload(repo: str, number: int, comment_id: int, body: str, *,
                    association: str = "MEMBER") -> dict[str, Any]:
    """An ``issue_comment`` delivery of a comment (a ``/spider`` command) on ``repo``#``number``."""
    p = _sample("issue_comment_command")
    p["repository"]["full_name"] = repo
    p["repository"]["name"] = repo.split("/")[1]
    p["installation"]["id"] = INSTALLATION_ID
    p["issue"]["number"] = number
    p["comment"].update(id=comment_id, body=body, author_association=association)
    return p


def new_delivery() -> str:
    return str(uuid.uuid4())


def wait_for_record(stack: DevStack, names: Iterable[str],
                    match: Callable[[dict[str, Any]], bool],
                    timeout_s: float = 120) -> tuple[str, dict[str, Any]]:
    """The first JSON log record of one of ``names`` that ``match``es, as soon as it appears."""
    names = list(names)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for name in names:
            for record in stack.log_records(name):
                if match(record):
                    return name, record
        time.sleep(0.05)
    raise TimeoutError("no such log line:\n" + "\n".join(stack.log_tail(n, 2000) for n in names))


def records_of(stack: DevStack, name: str, delivery_id: str) -> list[dict[str, Any]]:
    """The log records of one job (every line of a job carries its delivery id)."""
    return [r for r in stack.log_records(name) if r.get("delivery_id") == delivery_id]


def secrets_of(stack: DevStack, extra: Iterable[str] = ()) -> list[str]:
    """Every secret the stack's processes held or were handed: the webhook secret, the app's
    private key (each line of it), installation tokens, JWTs and any ``extra``."""
    found = [stack.secret, *extra, *stack.fake.minted_tokens()]
    found += [line for line in stack.private_key.splitlines()
              if line and not line.startswith("-----")]
    for header in stack.fake.credentials:  # "Bearer <jwt>", "token <installation token>"
        found.append(header.split(" ", 1)[-1])
    return [s for s in found if len(s) >= 16]


def assert_logs_hold_no_secret(stack: DevStack, extra: Iterable[str] = ()) -> None:
    """No log of the stack (bot, workers, Redis) contains any secret, in any form seen."""
    secrets = secrets_of(stack, extra)
    assert stack.fake.minted_tokens(), "the run minted no token: the check would prove nothing"
    logs = sorted(stack.workdir.glob("*.log")) + sorted(stack.workdir.glob("redis/*.log"))
    assert any(p.name.startswith("worker") for p in logs)
    for path in logs:
        text = path.read_text(errors="replace")
        for secret in secrets:
            assert secret not in text, f"{path.name} holds a secret ({secret[:6]}...)"
