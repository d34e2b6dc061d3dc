"""``selector: auto`` and ``edges: auto``: a key alone turns on the paper's method.

Unit tests of the resolution (which selector, which edges, an explicit value winning, an
empty key being no key), then ``spider locate`` as a user runs it with only
``SPIDER_ANTHROPIC_API_KEY`` set, against the fake Messages API on loopback: the requests
reach it and the ids it admits come back into the list, each with its route.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from spider.expand.select import NoSelector, OfflineSelector, make_selector
from spider.expand.select.llm_selector import LLMSelector
from spider.models import RunSettings
from spider.settings import LLM_EDGES, EngineSettings
from tests.fakes.anthropic_api import FakeAnthropic, serve_fake_anthropic
from tests.spider.shop import write_files
from tests.spider.test_cli import ISSUE, REPO_FILES

KEY = SecretStr("sk-test-key")


def test_auto_is_offline_without_a_key_and_expands_nothing() -> None:
    s = EngineSettings(_env_file=None)  # type: ignore[call-arg]
    assert (s.selector, s.edges) == ("auto", "auto")
    assert s.selector_name == "offline" and s.expansion_edges() == () and not s.expands
    assert isinstance(make_selector(s), OfflineSelector)
    assert s.resolved().selector == "offline" and s.resolved().edges == ()


def test_auto_is_anthropic_with_a_key_over_contains_and_invokes() -> None:
    s = EngineSettings(anthropic_api_key=KEY)
    assert s.selector_name == "anthropic" and s.expansion_edges() == LLM_EDGES and s.expands
    sel = make_selector(s)
    assert isinstance(sel, LLMSelector) and sel.name == "anthropic"
    resolved = s.resolved()
    assert (resolved.selector, resolved.edges) == ("anthropic", ("contains", "invokes"))
    # the record of the run names what ran, never "auto"
    run = RunSettings.of(s, selector="anthropic")
    assert run.edges == ("contains", "invokes") and run.to_dict()["edges"] == ["contains", "invokes"]


@pytest.mark.parametrize(
    ("edges", "expected"),
    [("none", ()), ("", ()), ("invokes", ("invokes",)), ("both", ("contains", "invokes"))],
)
def test_explicit_edges_win_over_auto(edges: str, expected: tuple[str, ...]) -> None:
    keyed = EngineSettings(anthropic_api_key=KEY, edges=edges)
    assert keyed.expansion_edges() == expected and keyed.resolved().edges == expected
    offline = EngineSettings(edges=edges)  # the offline selector expands what is asked
    assert offline.expansion_edges() == expected


def test_an_explicit_selector_wins_over_the_key() -> None:
    s = EngineSettings(anthropic_api_key=KEY, selector="offline")
    assert s.selector_name == "offline" and s.expansion_edges() == ()
    assert isinstance(make_selector(EngineSettings(anthropic_api_key=KEY, selector="none")),
                      NoSelector)
    # edges follow the selector that runs when the caller built it (the benchmark's oracle)
    assert EngineSettings(edges="auto").expansion_edges("anthropic") == LLM_EDGES


def test_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPIDER_ANTHROPIC_API_KEY", "sk-test-key")
    monkeypatch.delenv("SPIDER_SELECTOR", raising=False)
    monkeypatch.delenv("SPIDER_EDGES", raising=False)
    assert EngineSettings().resolved().edges == LLM_EDGES
    monkeypatch.setenv("SPIDER_EDGES", "none")
    assert EngineSettings().resolved().edges == ()
    monkeypatch.setenv("SPIDER_EDGES", "AUTO")
    assert EngineSettings().edges == "auto"
    monkeypatch.setenv("SPIDER_ANTHROPIC_API_KEY", "  ")  # an empty key is no key
    assert EngineSettings().anthropic_api_key is None
    assert EngineSettings().selector_name == "offline"


# --- end to end: the command line with a key and nothing else --------------------------------


# The shop, plus look-alike notes that read like the issue: more of them than the list holds.
NOISE = "\n\n".join(
    f'def negative_quantities_note_{i}():\n    """Negative quantities of apples: note {i}."""\n'
    f'    return "negative apples total {i}"\n'
    for i in range(12)
)
FILES = {**REPO_FILES, "shop/notes.py": NOISE}
NOTES = [f"shop/notes.py:negative_quantities_note_{i}" for i in range(12)]


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    # Claude "admits" every note it is shown (the selector keeps only ids it offered); the
    # notes below the list's top come in over the contains edges of the notes above
    with serve_fake_anthropic(FakeAnthropic(default=json.dumps({"relevant": NOTES}))) as state:
        yield state


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_files(tmp_path / "shop", FILES)


def _locate(repo: Path, cache: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if k not in ("SPIDER_SELECTOR", "SPIDER_EDGES", "SPIDER_ANTHROPIC_API_KEY")}
    return subprocess.run(
        [sys.executable, "-m", "spider.cli", "locate", str(repo), "--issue", ISSUE, "--k", "8",
         "--json"],
        capture_output=True, text=True, timeout=300, check=False,
        env={**base, "SPIDER_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1", **env},
    )


def test_a_key_alone_runs_the_claude_selector_end_to_end(
    repo: Path, tmp_path: Path, fake: FakeAnthropic
) -> None:
    out = _locate(repo, tmp_path / "cache", SPIDER_ANTHROPIC_API_KEY="sk-test-key",
                  SPIDER_ANTHROPIC_BASE_URL=fake.base_url, SPIDER_ANTHROPIC_MAX_RETRIES="0")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert fake.requests, "the selector never reached the Messages API"
    assert all(r["model"] == "claude-sonnet-4-20250514" for r in fake.requests)
    assert data["settings"]["selector"] == "anthropic"
    assert data["settings"]["edges"] == ["contains", "invokes"]
    assert data["selector_calls"] == len(fake.requests) and data["selector_failures"] == 0
    assert data["expansion"]["admitted"] >= 1
    admitted = [h for h in data["hits"] if any(r["kind"] == "expand" for r in h["reasons"])]
    assert admitted, "no admitted item came back into the list"
    route = next(r for r in admitted[0]["reasons"] if r["kind"] == "expand")
    assert route["centre"] in {h["id"] for h in data["hits"]}
    centre = route["centre"].split(":", 1)[1]
    assert route["words"].startswith(f"found via {route['edge']} from `{centre}`")
    assert "the anthropic selector (claude-sonnet-4-20250514) was offered" in data["method"]
    assert "sk-test-key" not in out.stderr  # the key is never logged

    # the same command without the key: offline, no expansion, no call
    calls = len(fake.requests)
    out = _locate(repo, tmp_path / "cache", SPIDER_ANTHROPIC_BASE_URL=fake.base_url)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert len(fake.requests) == calls
    assert (data["settings"]["selector"], data["settings"]["edges"]) == ("offline", [])
    assert "no graph expansion: no edge types enabled for the offline selector" in data["method"]


def test_failed_calls_are_said_in_the_method(
    repo: Path, tmp_path: Path, fake: FakeAnthropic
) -> None:
    fake.default = 500
    out = _locate(repo, tmp_path / "cache", SPIDER_ANTHROPIC_API_KEY="sk-test-key",
                  SPIDER_ANTHROPIC_BASE_URL=fake.base_url, SPIDER_ANTHROPIC_MAX_RETRIES="0")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    failed = data["selector_failures"]
    assert failed == len(fake.requests) >= 1 and data["expansion"]["admitted"] == 0
    assert f"({failed} of its {data['selector_calls']} calls failed" in data["method"]
