"""End to end with a real LLM: the bot, Redis, a Celery worker, the fake GitHub, and a real
llama.cpp server (SmolLM2-135M) behind SPIDER_LLM_BASE_URL. The first comment is posted
without waiting for the model; the LLM pass then edits that one comment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from spider_devkit.devstack import DevStack
from tests.worker.helpers import make_repo

from .conftest import REPO, payload

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def llm_stack(tmp_path_factory: pytest.TempPathFactory, llama_server: str) -> Iterator[DevStack]:
    workdir = tmp_path_factory.mktemp("llm-stack")
    make_repo(workdir / "repos" / REPO)
    env = {
        "SPIDER_K": "3",
        "SPIDER_FIRST_STAGE": "bm25",  # the smallest index: the LLM is what is under test
        "SPIDER_LLM_BASE_URL": llama_server,
        "SPIDER_LLM_MODEL": "local",
        "SPIDER_LLM_ROLES": "read",
        "SPIDER_LLM_TIMEOUT_S": "120",
        "SPIDER_LOG_JSON": "true",
    }
    with DevStack(workdir, env=env) as s:
        s.add_repo(REPO, workdir / "repos" / REPO)
        yield s


def test_first_comment_at_once_then_the_llm_pass_edits_it(llm_stack: DevStack) -> None:
    stack = llm_stack
    stack.fake.add_issue(REPO, 1, "Header values containing a colon are cut off",
                         "parse_header splits at every colon, so Host: example.com:8080 loses "
                         "the port.")
    resp = stack.deliver("issues", payload("issues_opened", 1))
    assert resp.status_code == 202, resp.text
    task_id = resp.json()["task_id"]
    first = stack.result(task_id)
    assert first["status"] == "created", first
    (comment,) = stack.fake.bot_comments(REPO, 1)
    assert "`local` is reading this list with the issue" in comment.body
    assert "re-read" not in comment.body
    second = stack.result(f"{task_id}:llm", timeout=600)
    assert second["status"] == "updated" and second["comment_id"] == comment.id, second
    (edited,) = stack.fake.bot_comments(REPO, 1)
    assert edited.id == comment.id
    assert "re-read with the issue by local" in edited.body, edited.body
    assert "is reading this list" not in edited.body
    assert len(stack.fake.requests("POST", "/issues/1/comments")) == 1
