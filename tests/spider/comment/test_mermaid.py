"""The picture of how the listed functions connect: it parses with mermaid's own parser
(GitHub renders Mermaid with it), stays small, and no repository string escapes a label.

The parser is the npm package ``mermaid`` (with ``jsdom`` for the browser globals it
needs), installed from the npm registry into a cache folder on first use. Without node
and npm the parsing tests are skipped, or fail when ``CI`` is set.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from itertools import pairwise
from pathlib import Path

import pytest

from spider.comment import build_view, render
from spider.comment.mermaid import MAX_EDGES, MAX_NODES, label_text, mermaid_graph
from spider.models import Hit, Link, Localization, Reason, RunSettings
from spider.settings import EngineSettings

NPM_PACKAGES = ("mermaid@11.17.2", "jsdom@26.1.0")  # the parser GitHub renders with, a DOM
NPM_DIR = Path(os.environ.get("SPIDER_TEST_NPM_DIR", Path.home() / ".cache/spider-bot/npm"))
PARSE_SCRIPT = Path(__file__).with_name("mermaid_parse.mjs")
INSTALL_TIMEOUT_S = 600  # a cold npm install of mermaid takes tens of seconds
PARSE_TIMEOUT_S = 120
SHA = "a" * 40
HOSTILE = [
    'Foo["bar"]',
    "a|b -->|x| c",
    "`x`\n```\nend",
    "<script>alert(1)</script>",
    "@octocat #12 owner/repo#3 https://example.com",
    "%%{init: {'theme':'dark'}}%%",
    "class x top; click n1 call f()",
    "名前.函数 λ",
    "a;b:c{d}e(f)g",
]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def parser_dir() -> Path:
    """A folder holding mermaid, jsdom and the parse script (installed once)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        _unavailable("node and npm are needed to parse Mermaid")
    ready = NPM_DIR / "node_modules" / "mermaid" / "package.json"
    wanted = NPM_PACKAGES[0].rsplit("@", 1)[1]
    if not ready.is_file() or json.loads(ready.read_text())["version"] != wanted:
        NPM_DIR.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [npm, "install", "--prefix", str(NPM_DIR), "--no-audit", "--no-fund", "--silent",
             *NPM_PACKAGES],
            capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False,
        )
        if done.returncode != 0:
            _unavailable(f"npm install {' '.join(NPM_PACKAGES)} failed: {done.stderr[-500:]}")
    shutil.copy(PARSE_SCRIPT, NPM_DIR / PARSE_SCRIPT.name)
    return NPM_DIR


def parse(parser_dir: Path, diagrams: list[str]) -> list[dict[str, object]]:
    """mermaid.parse's verdict on each diagram (the text inside the code fence)."""
    done = subprocess.run(
        ["node", PARSE_SCRIPT.name], cwd=parser_dir, input=json.dumps(diagrams),
        capture_output=True, text=True, timeout=PARSE_TIMEOUT_S, check=True,
    )
    return json.loads(done.stdout)


def _inside(block: str) -> str:
    lines = block.splitlines()
    assert lines[0] == "```mermaid" and lines[-1] == "```"
    return "\n".join(lines[1:-1])


def _hits(names: list[str]) -> list[Hit]:
    return [
        Hit(id=f"src/m.py:{n}", path="src/m.py", name=n, start_line=i, end_line=i + 1,
            score=1.0 / i, reasons=[Reason(kind="hybrid", rank=i, score=1.0)])
        for i, n in enumerate(names, start=1)
    ]


def _chain(hits: list[Hit]) -> list[Link]:
    return [Link(a.id, b.id, "calls") for a, b in pairwise(hits)]


def test_hostile_names_stay_inside_their_labels(parser_dir: Path) -> None:
    hits = _hits(HOSTILE)
    block = mermaid_graph(hits, _chain(hits))
    assert block is not None
    body = _inside(block)
    for line in body.splitlines()[1:]:
        label = re.fullmatch(r'  n\d+\["(.*)"\]', line)
        if label:
            assert re.fullmatch(r"[A-Za-z0-9_. #;]*", label.group(1)), line
    assert "`" not in body and "<" not in body and "@" not in body
    assert parse(parser_dir, [body]) == [{"ok": True, "type": "flowchart-v2"}]


def test_every_edge_kind_and_a_full_list_parse(parser_dir: Path) -> None:
    hits = _hits([f"Module.fn_{i}" for i in range(25)])
    links = [Link(hits[i].id, hits[j].id, kind)  # type: ignore[arg-type]
             for i in range(25) for j in range(25) if i != j
             for kind in ("calls", "contains", "found via") if (i * 7 + j) % 5 == 0]
    block = mermaid_graph(hits, links)
    assert block is not None
    body = _inside(block)
    assert body.count(" -->|") == MAX_EDGES
    assert len(re.findall(r"^  n\d+\[", body, re.MULTILINE)) <= MAX_NODES
    assert parse(parser_dir, [body])[0]["ok"]


def test_the_top_five_are_highlighted_and_lone_lower_items_left_out() -> None:
    hits = _hits([f"f{i}" for i in range(1, 9)])
    block = mermaid_graph(hits, [Link(hits[6].id, hits[0].id, "calls")])
    assert block is not None
    assert "  class n1,n2,n3,n4,n5 top" in block
    assert "n7 -->|calls| n1" in block and '["8. f8"]' not in block
    assert mermaid_graph(hits, []) is None  # nothing connects: no picture


def test_labels_are_entity_coded_outside_a_safe_set() -> None:
    assert label_text('say "hi"') == "say #34;hi#34;"
    assert label_text("Response.iter_content") == "Response.iter_content"
    assert label_text("a\nb") == "a b"


def test_the_comment_shows_the_picture_collapsed() -> None:
    hits = _hits(["Response.iter_content", "Response.iter_lines", "Response.text"])
    loc = Localization(commit=SHA, hits=hits, links=[Link(hits[1].id, hits[0].id, "calls")],
                       settings=RunSettings.of(EngineSettings(), selector="none"))
    body = render(build_view(loc, html_url="https://github.com/o/r", branch="main",
                             skip_label="spider:skip", app_name="spider-bot"))
    at = body.index("<summary>How the listed functions connect</summary>")
    assert body.rindex("<details>", 0, at) > body.index("3. [")  # below the list, folded
    assert "```mermaid\nflowchart TD\n" in body and "n2 -->|calls| n1" in body
