"""Static checks of what cannot run here: the GitHub App manifest and the Dockerfile."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_manifest_asks_for_the_least_it_needs() -> None:
    manifest = yaml.safe_load((ROOT / "app.yml").read_text())
    assert manifest["default_permissions"] == {"issues": "write", "contents": "read",
                                               "metadata": "read", "pull_requests": "read"}
    assert sorted(manifest["default_events"]) == ["issue_comment", "issues", "pull_request",
                                                  "push"]
    assert manifest["hook_attributes"]["url"].endswith("/webhook")


def test_dockerfile_is_cpu_only_non_root_with_both_entry_points() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "--index-url https://download.pytorch.org/whl/cpu" in text and '"torch==2.13.0"' in text
    assert "\nUSER spider\n" in text
    assert "uvicorn bot.app:app" in text and "celery -A worker.celery_app worker" in text
    for path in ("spider", "contract", "bot", "worker", "templates"):
        assert f"COPY {path} ./{path}" in text
    # the templates install as the spider_templates package (checked in the image); no override
    assert "SPIDER_TEMPLATE_DIR" not in text and "('spider_templates', 'report.html.j2')" in text


def test_the_packages_listed_in_pyproject_are_the_packages_in_the_tree() -> None:
    """pyproject.toml lists its packages (templates/ installs as spider_templates, which
    packages.find cannot say): a new package must be added there, or it would not install."""
    import tomllib

    from setuptools import find_packages

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = find_packages(str(ROOT), include=["spider", "spider.*", "contract", "contract.*",
                                              "bot", "bot.*", "worker", "worker.*"])
    assert sorted(config["packages"]) == sorted([*found, "spider_templates"])
    assert config["package-dir"] == {"spider_templates": "templates"}
    assert (ROOT / "templates" / "comment.md.j2").is_file()


def test_dockerfile_ships_no_test_doubles_or_dev_tools() -> None:
    """The fake GitHub, the dev stack and the replay command live in devkit/, a distribution
    the image never installs; nor does it install the dev extra."""
    text = (ROOT / "Dockerfile").read_text()
    assert "devkit" not in text and "[dev]" not in text and "COPY tests" not in text


def test_redis_is_shipped_durable() -> None:
    """The fault tests prove no queued job is lost across a Redis restart only with an
    fsynced append-only file and no eviction: the shipped examples must ask for both."""
    compose = yaml.safe_load((ROOT / "docs" / "compose.yml").read_text())
    command = compose["services"]["redis"]["command"]
    flags = dict(zip(command[1::2], command[2::2], strict=False))
    assert flags["--appendonly"] == "yes" and flags["--appendfsync"] == "always"
    assert flags["--maxmemory-policy"] == "noeviction"
    assert compose["services"]["redis"]["volumes"] == ["redis-data:/data"]
    assert {"bot", "worker"} <= set(compose["services"])
    docker = (ROOT / "Dockerfile").read_text()
    assert "--appendonly yes --appendfsync always --maxmemory-policy noeviction" in docker
    reliability = (ROOT / "docs" / "reliability.md").read_text()
    assert "appendonly yes" in reliability and "appendfsync always" in reliability


def test_the_image_keeps_the_operators_console_scripts() -> None:
    """The entry point must not overwrite `spider-bot` (report, db upgrade), and the image
    installs the report extra so `spider-bot report --html` draws its plots."""
    text = (ROOT / "Dockerfile").read_text()
    assert "/usr/local/bin/spider-bot\n" not in text
    assert 'ENTRYPOINT ["tini", "--", "spider-bot-entrypoint"]' in text
    assert "pip install '.[report]'" in text
