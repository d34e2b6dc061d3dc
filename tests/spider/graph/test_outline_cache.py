"""The outline cache: a new commit parses only the files it changed, and the graph is the
same as one built from scratch."""

from __future__ import annotations

import json
import sqlite3
import textwrap
from pathlib import Path

from spider.graph import build_graph
from spider.graph.model import CodeGraph
from spider.graph.outline_cache import OutlineCache
from spider.index import load_or_build_graph
from spider.settings import EngineSettings
from spider.source import DirectorySource, GitSource
from tests.spider.bench.helpers import commit_files, init_repo

FILES = {
    "pkg/__init__.py": "",
    "pkg/net.py": textwrap.dedent(
        """
        from pkg.text import decode

        class Session:
            def send(self, request):
                return decode(self.adapter.send(request))
        """
    ),
    "pkg/text.py": "def decode(data):\n    return data.decode()\n",
    "pkg/blob.py": "x = 1\0\n",  # binary: skipped, and the skip is remembered too
    "web/app.js": "var a=1;" * 2000,  # one long line: minified
}


def _canon(g: CodeGraph) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    nodes = sorted((n, json.dumps(d, sort_keys=True)) for n, d in g.g.nodes(data=True))
    return nodes, sorted(g.g.edges(keys=True))


def _settings(tmp_path: Path) -> EngineSettings:
    return EngineSettings(cache_dir=tmp_path / "cache", max_line_chars=1000)


def test_a_new_commit_parses_only_its_changed_files(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    first = commit_files(repo, FILES, "base")
    changed = FILES["pkg/text.py"] + "\ndef encode(text):\n    return decode(text)\n"
    second = commit_files(repo, {"pkg/text.py": changed}, "encode")
    settings = _settings(tmp_path)
    cache = OutlineCache(tmp_path / "outlines")
    before = build_graph(GitSource(repo, first), settings, None, cache)
    assert before.stats.reused == 0 and len(cache) == len(FILES)
    assert before.stats.skipped["binary"] == 1 and before.stats.skipped["minified"] == 1

    after = build_graph(GitSource(repo, second), settings, None, cache)
    assert after.stats.reused == len(FILES) - 1  # every file but pkg/text.py
    scratch = build_graph(GitSource(repo, second), settings)
    assert _canon(after) == _canon(scratch)
    assert after.stats.parsed == scratch.stats.parsed
    assert after.stats.skipped == scratch.stats.skipped
    assert "pkg/text.py:encode" in after.functions()
    assert ("pkg/text.py:encode", "pkg/text.py:decode", "invokes") in after.g.edges(keys=True)


def test_a_damaged_entry_is_parsed_again(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    sha = commit_files(repo, FILES, "base")
    settings = _settings(tmp_path)
    cache = OutlineCache(tmp_path / "outlines")
    expected = _canon(build_graph(GitSource(repo, sha), settings, None, cache))
    with sqlite3.connect(cache.path) as db:
        db.execute("UPDATE outlines SET data = x'00ff'")
    again = build_graph(GitSource(repo, sha), settings, None, cache)
    assert again.stats.reused == 0 and _canon(again) == expected
    assert build_graph(GitSource(repo, sha), settings, None, cache).stats.reused == len(FILES)


def test_other_content_settings_do_not_share_outlines(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    sha = commit_files(repo, FILES, "base")
    cache = OutlineCache(tmp_path / "outlines")
    build_graph(GitSource(repo, sha), _settings(tmp_path), None, cache)
    wide = _settings(tmp_path).model_copy(update={"max_line_chars": 100_000})
    graph = build_graph(GitSource(repo, sha), wide, None, cache)
    assert graph.stats.reused == 0 and graph.stats.skipped["minified"] == 0


def test_the_index_uses_it_for_commits_only(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    first = commit_files(repo, FILES, "base")
    second = commit_files(repo, {"pkg/text.py": FILES["pkg/text.py"] + "# note\n"}, "note")
    settings = _settings(tmp_path)
    load_or_build_graph(GitSource(repo, first), settings)
    graph, cached = load_or_build_graph(GitSource(repo, second), settings)
    assert not cached and graph.stats.reused == len(FILES) - 1
    assert CodeGraph.load(next((settings.cache_dir / "graphs").glob("*.json.gz"))).stats
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "mod.py").write_text("def f():\n    return 1\n")
    graph, _ = load_or_build_graph(DirectorySource(tree), _settings(tmp_path / "t"))
    assert graph.stats.reused == 0
    assert not (tmp_path / "t" / "cache" / "outlines").exists()


def test_a_broken_cache_file_costs_a_parse_not_the_index(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    sha = commit_files(repo, FILES, "base")
    settings = _settings(tmp_path)
    (settings.cache_dir / "outlines").mkdir(parents=True)
    (settings.cache_dir / "outlines" / "outlines.sqlite").write_bytes(b"not a database" * 100)
    graph, cached = load_or_build_graph(GitSource(repo, sha), settings)
    assert not cached and graph.stats.reused == 0
    assert "pkg/net.py:Session.send" in graph.functions()


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "graph"


def test_outlines_of_every_language_come_back_as_they_went_in(tmp_path: Path) -> None:
    files = {
        str(p.relative_to(FIXTURES)): p.read_text(encoding="utf-8")
        for p in sorted(FIXTURES.rglob("*"))
        if p.is_file()
    }
    repo = init_repo(tmp_path / "repo")
    sha = commit_files(repo, files, "fixtures")
    settings = _settings(tmp_path)
    cache = OutlineCache(tmp_path / "outlines")
    parsed = build_graph(GitSource(repo, sha), settings, None, cache)
    assert len(parsed.stats.parsed) >= 12  # every language of the fixtures
    read = build_graph(GitSource(repo, sha), settings, None, cache)
    assert read.stats.reused == sum(parsed.stats.parsed.values()) > 40  # none parsed again
    assert read.stats.parsed == parsed.stats.parsed
    assert _canon(read) == _canon(parsed)
    kinds = {k for _, _, k in read.g.edges(keys=True)}
    assert {"contains", "invokes", "imports", "inherits"} <= kinds
