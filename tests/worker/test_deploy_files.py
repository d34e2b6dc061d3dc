"""Static checks of what cannot run here: the GitHub App manifest and the Dockerfile."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_manifest_asks_for_the_least_it_needs() -> None:
    manifest = yaml.safe_load((ROOT / "app.yml").read_text())
    assert manifest["default_permissions"] == {"issues": "write", "contents": "read", "metadata": "read"}
    assert sorted(manifest["default_events"]) == ["issue_comment", "issues"]
    assert manifest["hook_attributes"]["url"].endswith("/webhook")


def test_dockerfile_is_cpu_only_non_root_with_both_entry_points() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "--index-url https://download.pytorch.org/whl/cpu" in text and '"torch==2.13.0"' in text
    assert "\nUSER spider\n" in text
    assert "uvicorn bot.app:app" in text and "celery -A worker.celery_app worker" in text
    for path in ("spider", "bot", "worker", "templates"):
        assert f"COPY {path} ./{path}" in text
    assert "SPIDER_TEMPLATE_DIR=/app/templates" in text
