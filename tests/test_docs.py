"""The documentation: the configuration page matches the code, links resolve, the README
stays a landing page, and the prose carries no development-machine paths or internal
references."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from contract.settings import AppSettings
from spider.settings import DEFAULT_COLD_POOL, EngineSettings
from tests import configuration_doc

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MARKDOWN = sorted([README, ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")])
# Prose written for readers outside the project (the generated page is checked by its own test).
OWN_PROSE = [
    README,
    ROOT / "CHANGELOG.md",
    *(
        ROOT / "docs" / name
        for name in (
            "benchmark.md",
            "learning.md",
            "contributing.md",
            "cli.md",
            "example-comment.md",
            "install.md",
        )
    ),
]
README_MAX_LINES = 200

FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
INTERNAL = {
    "a development machine's path": re.compile(r"/work/"),
    "a session number": re.compile(r"\bsession \d+", re.IGNORECASE),
    "an issue number": re.compile(r"\bissues? \d+", re.IGNORECASE),
    "a #N reference": re.compile(r"(?<![\w/&#])#\d+\b"),
    "the team's shared folder": re.compile(r"(?<![\w.-])shared/(?:bench|train|notes|tools)\b"),
    "a history of the app": re.compile(r"registered before|before the fix loop|existed\)"),
}
SEEN_WHOLE = {"a development machine's path", "the team's shared folder"}  # in code spans too


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


def test_every_setting_has_a_description() -> None:
    empty = [
        f"SPIDER_{name.upper()}"
        for model in (EngineSettings, AppSettings)
        for name, field in model.model_fields.items()
        if name not in configuration_doc.SKIPPED_FIELDS and not (field.description or "").strip()
    ]
    assert not empty, f"settings with no Field(description=...): {empty}"


def test_the_documented_cold_pool_defaults_are_the_entry_points_own() -> None:
    from spider.cli import _first_answer

    field = EngineSettings.model_fields["cold_pool"]
    assert field.default == EngineSettings().cold_pool
    assert f"`spider locate` uses {_first_answer(EngineSettings()).cold_pool}" in (
        field.description or "")
    assert AppSettings.model_fields["issue_cold_pool"].default == DEFAULT_COLD_POOL


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


def _prose(path: Path) -> str:
    """The file without fenced code blocks (their text is shown, not linked)."""
    return FENCE.sub("", path.read_text(encoding="utf-8"))


def anchors(path: Path) -> set[str]:
    """The heading anchors GitHub makes for a Markdown file (``-1``, ``-2`` for repeats)."""
    seen: dict[str, int] = {}
    out = set()
    for line in _prose(path).splitlines():
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1))
        slug = re.sub(r"[^\w\- ]", "", text.replace("`", "").replace("*", "").lower())
        slug = slug.replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path: Path) -> None:
    broken = []
    for target in LINK.findall(_prose(path)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            continue  # a URL
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part) if file_part else path
        if not linked.exists() or (
            anchor and linked.suffix == ".md" and anchor not in anchors(linked)
        ):
            broken.append(target)
    assert not broken, f"{path.relative_to(ROOT)} has links to missing files or headings: {broken}"


def test_compose_builds_the_image_it_runs() -> None:
    import yaml

    compose = yaml.safe_load((ROOT / "docs" / "compose.yml").read_text(encoding="utf-8"))
    images = {svc.get("image") for name, svc in compose["services"].items() if name != "redis"}
    built = [svc for svc in compose["services"].values() if "build" in svc]
    assert images == {"spider-bot"} and built and built[0]["image"] == "spider-bot"
    assert (ROOT / built[0]["build"]["context"].replace("..", ".") / "Dockerfile").is_file()
    install = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert "docker compose -f docs/compose.yml --env-file spider.env up -d --build" in install


def test_readme_is_a_landing_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines (at most 200)"


def test_readme_test_command_is_what_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = ".venv/bin/pytest -q"
    assert f"```sh\n{command}\n```" in README.read_text(encoding="utf-8")
    assert f"\n{command}\n" in ci


@pytest.mark.parametrize(
    "path", [p for p in OWN_PROSE if p.exists()], ids=lambda p: str(p.relative_to(ROOT))
)
def test_no_internal_references(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    text_without_urls = re.sub(r"https?://\S+", "", INLINE_CODE.sub("``", text))
    found = {
        what: pattern.findall(text if what in SEEN_WHOLE else text_without_urls)
        for what, pattern in INTERNAL.items()
    }
    found = {what: hits for what, hits in found.items() if hits}
    assert not found, f"{path.relative_to(ROOT)} has {found}"
