"""docs/compose.yml and its spider.env template, checked as far as a machine without a
Docker engine allows: the files it names are the ones the documented command passes, every
variable it interpolates is in the template, and the template, filled in, starts the app."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from contract.settings import AppSettings, SettingsError
from spider.settings import EngineSettings

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docs" / "compose.yml"
TEMPLATE = ROOT / "docs" / "spider.env.example"
ENV_FILE_ARG = re.compile(r"--env-file (\S+)")
INTERPOLATED = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)")
ASSIGNMENT = re.compile(r"^#?\s*([A-Z_][A-Z0-9_]*)=", re.MULTILINE)


def _template_keys() -> set[str]:
    return set(ASSIGNMENT.findall(TEMPLATE.read_text(encoding="utf-8")))


def test_env_file_is_the_file_the_documented_command_passes() -> None:
    text = COMPOSE.read_text(encoding="utf-8")
    passed = set(ENV_FILE_ARG.findall(text))  # run from the repository's root
    assert passed == {"spider.env"}
    services = yaml.safe_load(text)["services"]
    for name in ("bot", "worker"):
        env_file = services[name]["env_file"]
        # compose resolves env_file against the compose file's folder
        assert (COMPOSE.parent / env_file).resolve() == (ROOT / "spider.env").resolve(), name
    assert "spider.env" in (ROOT / ".gitignore").read_text().split()


def test_every_interpolated_variable_is_in_the_template() -> None:
    needed = set(INTERPOLATED.findall(COMPOSE.read_text(encoding="utf-8")))
    assert "REDIS_PASSWORD" in needed
    assert needed <= _template_keys()


def test_every_setting_the_template_names_exists() -> None:
    fields = set(EngineSettings.model_fields) | set(AppSettings.model_fields)
    for key in _template_keys():
        if key.startswith("SPIDER_"):
            assert key.removeprefix("SPIDER_").lower() in fields, key


def _fill(tmp_path: Path) -> dict[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "app.pem"
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.TraditionalOpenSSL,
                                      serialization.NoEncryption()))
    return {
        "SPIDER_WEBHOOK_SECRET": "c0ffee" * 6,
        "SPIDER_GITHUB_APP_ID": "12345",
        "SPIDER_GITHUB_PRIVATE_KEY_PATH": str(pem),
    }


def test_the_template_filled_in_starts_the_bot_and_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    required = {k for k in _template_keys() if k.startswith("SPIDER_")} & set(_fill(tmp_path))
    assert required == {"SPIDER_WEBHOOK_SECRET", "SPIDER_GITHUB_APP_ID",
                        "SPIDER_GITHUB_PRIVATE_KEY_PATH"}
    for k in _template_keys():
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("SPIDER_CACHE_DIR", str(tmp_path / "cache"))
    empty = AppSettings()  # the template as shipped: nothing filled in
    with pytest.raises(SettingsError, match="SPIDER_WEBHOOK_SECRET"):
        empty.check_bot()
    with pytest.raises(SettingsError, match="SPIDER_GITHUB_APP_ID"):
        empty.check_worker()
    for k, v in _fill(tmp_path).items():
        monkeypatch.setenv(k, v)
    filled = AppSettings()
    filled.check_bot()
    filled.check_worker()
