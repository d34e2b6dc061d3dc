"""The shipped commands, run as processes: the replay command's whole path, the bot and
worker refusing to start without their secrets, and what a worker does as it starts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from spider.settings import EngineSettings
from spider_devkit import replay
from spider_devkit.devstack import DevStack
from tests.worker.helpers import git, make_repo

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
pytestmark = pytest.mark.slow


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SPIDER_")}


def test_replay_prints_the_comment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    sha = make_repo(repo)
    monkeypatch.setenv("SPIDER_CACHE_DIR", str(tmp_path / "cache"))
    code = replay.main([str(SAMPLES / "issues_opened" / "payload.json"), "--repo", str(repo),
                        "--set", "SPIDER_SELECTOR=none", "--set", "SPIDER_K=2",
                        "--workdir", str(tmp_path / "work"), "--timeout", "120"])
    out, err = capsys.readouterr()
    assert code == 0, err + (tmp_path / "work" / "worker.log").read_text()[-3000:]
    assert out.startswith("<!-- spider-bot:localization -->")
    links = re.findall(r"https://github\.com/spider-bot/spider-bot/blob/([0-9a-f]{40})/", out)
    assert links == [sha] * 2
    assert "bot answered 202" in err
    assert git(repo, "rev-parse", "HEAD") == sha


def test_replay_of_an_ignored_event(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    code = replay.main([str(SAMPLES / "issue_comment_pull_request" / "payload.json"), "--repo", str(repo)])
    assert code == 1 and "comment on a pull request" in capsys.readouterr().err


def test_bot_refuses_to_start_without_a_secret() -> None:
    proc = subprocess.run([sys.executable, "-m", "uvicorn", "bot.app:app", "--port", "0"],
                          env=clean_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "SPIDER_WEBHOOK_SECRET" in proc.stderr


def test_worker_refuses_to_start_without_the_app_identity(tmp_path: Path) -> None:
    env = {**clean_env(), "SPIDER_WEBHOOK_SECRET": "x" * 20, "SPIDER_REDIS_URL": "redis://127.0.0.1:1/0"}
    proc = subprocess.run([sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker",
                           "--pool", "solo"], env=env, capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert proc.returncode != 0 and "SPIDER_GITHUB_APP_ID is missing" in proc.stdout + proc.stderr


def test_a_worker_logs_its_start_and_imports_a_torch_encoder_before_its_pool_forks(
    stack: DevStack,
) -> None:
    stack.wait_workers_ready()
    messages = [str(r.get("msg", "")) for r in stack.log_records("worker")]
    assert "worker settings checked" in messages  # logged before Celery sets logging up
    # documents embedded through torch (bf16 where the CPU has it): imported ahead, once
    torch_documents = EngineSettings().encoder in ("torch", "torch-bf16")
    imported = [m for m in messages if m.startswith("document encoder imported in ")]
    assert bool(imported) == torch_documents, messages[:20]
