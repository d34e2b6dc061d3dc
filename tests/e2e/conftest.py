"""The whole app, for real: redis-server, uvicorn serving the bot, a Celery worker process,
the fake GitHub API, and a tiny repository served from a local git path."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spider_devkit.devstack import INSTALLATION_ID, DevStack
from tests.worker.helpers import make_repo

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
REPO = "acme/httpkit"
K = 3

ISSUE_TITLE = "Header values containing a colon are cut off"
ISSUE_BODY = (
    "parse_header splits the header line at every colon, so `Host: example.com:8080` loses the "
    "port. Session.read_headers then returns the wrong value.\n\n"
    "Traceback (most recent call last):\n"
    '  File "httpkit/session.py", line 13, in read_headers\n'
    '  File "httpkit/headers.py", line 3, in parse_header\n'
    "ValueError: too many values to unpack"
)


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    workdir = tmp_path_factory.mktemp("stack")
    make_repo(workdir / "repos" / REPO)
    env = {
        "SPIDER_K": str(K),
        "SPIDER_SELECTOR": "none",  # the smallest engine settings: no selector calls
        "SPIDER_GITHUB_BACKOFF_S": "0.2",
        "SPIDER_RETRY_BACKOFF_S": "1",
        "SPIDER_LOG_JSON": "true",
    }
    with DevStack(workdir, env=env) as s:
        s.add_repo(REPO, workdir / "repos" / REPO)
        yield s


def payload(sample: str, number: int, **comment: Any) -> dict[str, Any]:
    """A recorded payload from tests/samples/, pointed at the test repository and issue."""
    p = copy.deepcopy(json.loads((SAMPLES / sample / "payload.json").read_text()))
    p["repository"]["full_name"] = REPO
    p["repository"]["name"] = REPO.split("/")[1]
    p["installation"]["id"] = INSTALLATION_ID
    p["issue"]["number"] = number
    p["issue"]["title"] = ISSUE_TITLE
    p["issue"]["body"] = ISSUE_BODY
    if comment:
        p["comment"].update(comment)
    return p


def new_delivery() -> str:
    return str(uuid.uuid4())
