from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from contract.settings import AppSettings, SettingsError
from spider.settings import EngineSettings

KEY = "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n"


def make(**kw: object) -> AppSettings:
    return AppSettings(_env_file=None, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("secret", [None, "", "changeme", "CHANGE-ME", "<your secret>", "your-secret-here",
                                    "xxxx", "short"])
def test_bot_refuses_missing_placeholder_or_short_secrets(secret: str | None) -> None:
    with pytest.raises(SettingsError):
        make(webhook_secret=secret).check_bot()


def test_bot_accepts_a_real_secret() -> None:
    make(webhook_secret="4f1c0c6e9b8a7d6e5f4a3b2c1d0e9f8a").check_bot()


def test_worker_needs_app_id_and_key(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="APP_ID"):
        make(github_private_key=KEY).check_worker()
    with pytest.raises(SettingsError, match="PRIVATE_KEY"):
        make(github_app_id=1).check_worker()
    with pytest.raises(SettingsError, match="not a PEM"):
        make(github_app_id=1, github_private_key="hunter2").check_worker()
    with pytest.raises(SettingsError, match="cannot be read"):
        make(github_app_id=1, github_private_key_path=tmp_path / "missing.pem").check_worker()
    (tmp_path / "app.pem").write_text(KEY)
    make(github_app_id=1, github_private_key_path=tmp_path / "app.pem").check_worker()


def test_key_with_escaped_newlines_from_an_env_file() -> None:
    s = make(github_app_id=1, github_private_key=KEY.replace("\n", "\\n"))
    assert s.private_key_pem() == KEY


def test_worker_limits_and_selector() -> None:
    with pytest.raises(SettingsError, match="soft time limit"):
        make(github_app_id=1, github_private_key=KEY, task_soft_time_limit_s=100,
             task_time_limit_s=100).check_worker()
    with pytest.raises(SettingsError, match="ANTHROPIC"):
        make(github_app_id=1, github_private_key=KEY,
             engine=EngineSettings(selector="anthropic")).check_worker()
    with pytest.raises(SettingsError, match="SPIDER_LLM_BASE_URL"):
        make(github_app_id=1, github_private_key=KEY,
             engine=EngineSettings(selector="llm")).check_worker()
    with pytest.raises(SettingsError, match="SPIDER_LLM_MODEL is empty"):
        make(github_app_id=1, github_private_key=KEY,
             engine=EngineSettings(llm_base_url="http://127.0.0.1:11434/v1")).check_worker()
    make(github_app_id=1, github_private_key=KEY, engine=EngineSettings(
        llm_base_url="http://127.0.0.1:11434/v1", llm_model="qwen2.5-coder:7b")).check_worker()
    # the default (auto) needs no key: it runs the offline selector without one
    make(github_app_id=1, github_private_key=KEY, engine=EngineSettings(selector="auto")).check_worker()
    with pytest.raises(SettingsError, match="GIT_URL_TEMPLATE"):
        make(github_app_id=1, github_private_key=KEY, git_url_template="git@github.com:x").check_worker()


def test_visibility_timeout_exceeds_hard_limit_and_longest_retry() -> None:
    s = make()
    assert s.visibility_timeout_s > s.task_time_limit_s
    assert s.visibility_timeout_s > s.retry_backoff_max_s


def test_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {
        "SPIDER_REDIS_URL": "redis://r:6379/1", "SPIDER_WEBHOOK_SECRET": "s" * 20,
        "SPIDER_GITHUB_APP_ID": "12", "SPIDER_GITHUB_PRIVATE_KEY": KEY,
        "SPIDER_GITHUB_API_URL": "https://ghe.example.com/api/v3/",
        "SPIDER_GIT_URL_TEMPLATE": "https://ghe.example.com/{owner}/{name}.git",
        "SPIDER_CACHE_DIR": "/var/cache/spider", "SPIDER_ANTHROPIC_API_KEY": "sk-test",
        "SPIDER_ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "SPIDER_K": "7",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    s = AppSettings()
    assert (s.redis_url, s.github_app_id, s.engine.k) == ("redis://r:6379/1", 12, 7)
    assert s.github_api_url == "https://ghe.example.com/api/v3"
    assert s.mirror_dir == Path("/var/cache/spider/mirrors")
    assert s.engine.anthropic_api_key is not None
    assert s.engine.anthropic_base_url == "http://127.0.0.1:9"
    assert "sk-test" not in repr(s) and "PRIVATE KEY" not in repr(s)


def test_engine_settings_are_composed_not_inherited(monkeypatch: pytest.MonkeyPatch) -> None:
    """The app's settings hold the engine's as one field, read from the same variables; an
    engine knob passed at the top level is refused instead of silently dropped."""
    monkeypatch.setenv("SPIDER_K", "10")
    monkeypatch.setenv("SPIDER_FIRST_STAGE", "bm25")
    s = make()
    assert isinstance(s.engine, EngineSettings)
    assert (s.engine.k, s.engine.first_stage) == (10, "bm25")
    assert not hasattr(s, "k") and "k" not in AppSettings.model_fields
    with pytest.raises(ValidationError):
        make(k=3)
    narrower = s.with_engine(k=3)
    assert (narrower.engine.k, narrower.engine.first_stage, s.engine.k) == (3, "bm25", 10)
