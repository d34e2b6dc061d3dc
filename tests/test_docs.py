"""The documentation: the configuration page matches the settings classes."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from contract.settings import AppSettings
from spider.settings import EngineSettings
from tests import configuration_doc


def test_configuration_page_matches_the_settings() -> None:
    expected = configuration_doc.render()
    current = configuration_doc.OUTPUT.read_text(encoding="utf-8")
    assert current == expected, (
        f"docs/configuration.md is out of date with the settings' Field(description=...): "
        f"run `{configuration_doc.REGENERATE}` and commit the result"
    )


def test_every_setting_has_a_row() -> None:
    page = configuration_doc.render()
    for model in (EngineSettings, AppSettings):
        for name in model.model_fields:
            if name in configuration_doc.SKIPPED_FIELDS:
                continue
            assert f"| `SPIDER_{name.upper()}` |" in page


def test_the_page_is_the_same_when_the_app_settings_compose_the_engine_ones() -> None:
    """AppSettings may hold EngineSettings as a field (``engine``) instead of inheriting it."""

    class Composed(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="SPIDER_", extra="ignore")
        engine: EngineSettings = Field(default_factory=EngineSettings)
        redis_url: str = Field("redis://127.0.0.1:6379/0", description="broker")
        log_level: str = "INFO"

    page = configuration_doc.render(EngineSettings, Composed)
    engine_part, app_part = page.split("## App", 1)
    assert engine_part == configuration_doc.render(EngineSettings, AppSettings).split("## App")[0]
    rows = [line for line in app_part.splitlines() if line.startswith("| `")]
    assert rows == [
        "| `SPIDER_REDIS_URL` | str | `redis://127.0.0.1:6379/0` | broker |",
        "| `SPIDER_LOG_LEVEL` | str | `INFO` |  |",
    ]
    assert "SPIDER_ENGINE" not in page
    assert configuration_doc.missing_descriptions(EngineSettings, Composed)[-1] == (
        "SPIDER_LOG_LEVEL"
    )


def test_defaults_do_not_depend_on_the_machine() -> None:
    page = configuration_doc.render()
    assert str(Path.home()) not in page
    assert "| `SPIDER_CACHE_DIR` | path | `~/.cache/spider` |" in page
