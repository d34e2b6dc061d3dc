"""build_graph end to end: skips by reason, budgets, deep nesting, persistence, git sources."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import spider.graph as graph_pkg
from spider.errors import NoSourceFiles
from spider.graph import CodeGraph, build_graph
from spider.graph.parse_file import content_skip_reason
from spider.settings import EngineSettings
from spider.source import DirectorySource, GitSource

from .conftest import build_fixture, definitions, edges


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def build(root: Path, **overrides: object) -> CodeGraph:
    return build_graph(DirectorySource(root), EngineSettings(**overrides))


def test_public_api() -> None:
    assert set(graph_pkg.__all__) == {
        "CodeGraph",
        "NodeInfo",
        "ParseStats",
        "build_graph",
        "count_source_files",
        "language_names",
    }
    assert all(hasattr(graph_pkg, name) for name in graph_pkg.__all__)
    assert len(graph_pkg.language_names()) == 12


def test_every_skip_is_counted_by_reason(tmp_path: Path) -> None:
    normal = "def f():\n    return 1\n" * 5
    write(
        tmp_path,
        {
            "pkg/ok.py": "def ok():\n    return helper()\n\n\ndef helper():\n    return 1\n",
            "pkg/latin1.py": "def cafe():\n    return 'd\xe9j\xe0'\n".encode("latin-1"),
            "pkg/big.py": "x = 1\n" * 400,  # 2400 bytes > max_file_bytes
            "pkg/data.py": b"def f():\n    return 1\n\x00\x01\x02",
            "pkg/bundle.js": "var a=" + "1+" * 400 + "1;\n",  # one line, average > 100
            "pkg/blob.py": normal + "X = '" + "x" * 1200 + "'\n" + normal,  # one huge line
            "pkg/garbage.py": "<?xml version='1.0'?><a><b/></a>\n",
            "pkg/tests/test_ok.py": "def test_ok():\n    pass\n",
            "pkg/vendor/lib.js": "function lib() {}\n",
            "README.md": "# not code\n",
            "pkg/script.sh": "echo hi\n",
        },
    )
    cg = build(tmp_path, max_file_bytes=2000, max_line_chars=100)
    assert cg.stats.parsed == {"python": 2}
    assert cg.stats.skipped == {
        "tests": 1,
        "vendored": 1,
        "too_large": 1,
        "binary": 1,
        "minified": 2,
        "parse_error": 1,
    }
    assert set(definitions(cg)) == {"pkg/ok.py:ok", "pkg/ok.py:helper", "pkg/latin1.py:cafe"}
    assert "d\ufffdj\ufffd" in cg.node("pkg/latin1.py:cafe").text  # invalid UTF-8 replaced
    assert edges(cg, "invokes") == {("pkg/ok.py:ok", "pkg/ok.py:helper")}


def test_content_checks() -> None:
    assert content_skip_reason(b"a\x00b", 100) == "binary"
    assert content_skip_reason(b"x" * 500, 100) == "minified"
    assert content_skip_reason(b"short\n" * 400 + b"y" * 1001, 100) == "minified"
    assert content_skip_reason(b"short\n" * 400, 100) is None


def test_include_and_extra_excludes(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "src/a.py": "def a():\n    pass\n",
            "src/gen/b.py": "def b():\n    pass\n",
            "scripts/c.py": "def c():\n    pass\n",
        },
    )
    cg = build(tmp_path, include=["src/**"], exclude=["**/gen/**"])
    assert set(definitions(cg)) == {"src/a.py:a"}
    assert cg.stats.skipped == {"excluded": 1, "not_included": 1}
    assert not build(tmp_path, exclude_tests=False).stats.skipped


def test_parse_timeout_is_counted_not_fatal(tmp_path: Path) -> None:
    body = "".join(f"def f{i}(x):\n    return g(x) + {i}\n\n" for i in range(20000))
    write(tmp_path, {"huge.py": body, "small.py": "def s():\n    pass\n"})
    cg = build(tmp_path, parse_timeout_s=0.001)
    assert cg.stats.skipped == {"timeout": 1}
    assert set(definitions(cg)) == {"small.py:s"}


def test_deep_nesting_does_not_recurse(tmp_path: Path) -> None:
    depth = 3000
    write(
        tmp_path,
        {
            "deep.js": "".join(f"function f{i}() {{\n" for i in range(depth))
            + "g();\n"
            + "}\n" * depth
            + "function g() {}\n",
            "brackets.py": "x = " + "[\n" * 20000 + "]\n" * 20000 + "\n\ndef after():\n    pass\n",
        },
    )
    cg = build(tmp_path)
    assert cg.stats.parsed == {"javascript": 1, "python": 1}
    nested = [n for n in definitions(cg) if n.startswith("deep.js:f0")]
    assert len(nested) == 32  # deeper definitions fold into the deepest kept one
    assert "brackets.py:after" in cg.g
    # the call in the innermost function is attributed to the deepest kept definition
    deepest = max(nested, key=len)
    assert (deepest, "deep.js:g") in edges(cg, "invokes")


def test_progress_reports_every_file(tmp_path: Path) -> None:
    write(tmp_path, {f"m{i}.py": f"def f{i}():\n    pass\n" for i in range(5)})
    calls: list[tuple[int, int]] = []
    build_graph(
        DirectorySource(tmp_path), EngineSettings(), progress=lambda d, t: calls.append((d, t))
    )
    assert calls == [(i, 5) for i in range(1, 6)]


def test_no_source_files(tmp_path: Path) -> None:
    write(tmp_path, {"README.md": "hi\n", "tests/test_a.py": "def test_a():\n    pass\n"})
    with pytest.raises(NoSourceFiles, match="no supported source file"):
        build(tmp_path)
    write(tmp_path, {"junk.py": "}}}}\n"})
    with pytest.raises(NoSourceFiles, match="could be used"):
        build(tmp_path)


def test_save_load_round_trip(tmp_path: Path) -> None:
    cg = build_fixture("python")
    path = tmp_path / "graph.json.gz"
    cg.save(path)
    back = CodeGraph.load(path)
    assert dict(back.g.nodes(data=True)) == dict(cg.g.nodes(data=True))
    assert sorted(back.g.edges(keys=True)) == sorted(
        cg.g.edges(keys=True)
    )
    assert back.stats.to_dict() == cg.stats.to_dict()
    assert back.functions() == cg.functions()
    assert back.node("app/models.py:Model.name#2") == cg.node("app/models.py:Model.name#2")


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "HOME": str(repo),
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def test_git_source_reads_one_commit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    write(repo, {"lib/core.py": "def first():\n    return second()\n\n\ndef second():\n    pass\n"})
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    sha = _git(repo, "rev-parse", "HEAD")
    write(
        repo,
        {"lib/core.py": "def renamed():\n    pass\n", "lib/extra.py": "def extra():\n    pass\n"},
    )
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "two")

    cg = build_graph(GitSource(repo, sha), EngineSettings())
    assert cg.commit == sha
    assert set(definitions(cg)) == {"lib/core.py:first", "lib/core.py:second"}
    assert edges(cg, "invokes") == {("lib/core.py:first", "lib/core.py:second")}
    head = build_graph(GitSource(repo), EngineSettings())
    assert set(definitions(head)) == {"lib/core.py:renamed", "lib/extra.py:extra"}


def test_odd_but_valid_inputs(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "bom.py": b"\xef\xbb\xbfdef f():\n    return g()\n\n\ndef g():\n    pass\n",
            "crlf.py": b"def h():\r\n    return 1\r\n",
            "empty.py": b"",
            "keys.js": "const routes = {\n  'GET #list': function () {},\n};\n",
        },
    )
    cg = build(tmp_path)
    assert definitions(cg) == {
        "bom.py:f": ("function", 1, 2),
        "bom.py:g": ("function", 5, 6),
        "crlf.py:h": ("function", 1, 2),
        "keys.js:routes.GET _list": ("function", 2, 2),
    }
    assert edges(cg, "invokes") == {("bom.py:f", "bom.py:g")}
    assert cg.node("empty.py").end_line == 1


def test_concurrent_saves_of_one_graph_never_collide(tmp_path: Path) -> None:
    """An issue job and an index job may cache the same commit's graph at the same moment."""
    from concurrent.futures import ThreadPoolExecutor

    from spider.graph.model import CodeGraph

    g = CodeGraph(commit="c" * 40)
    for i in range(200):
        g.add_node(f"a.py:f{i}", kind="function", path="a.py", name=f"f{i}", text="x" * 200)
    target = tmp_path / "graph.json.gz"
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda _: g.save(target), range(32)))
    assert CodeGraph.load(target).functions() == g.functions()
    assert not list(tmp_path.glob("*.tmp"))


def test_why_nothing_is_indexed_is_said_in_words() -> None:
    from spider.graph.build import empty_reason

    assert "empty" in empty_reason(0, {})
    assert empty_reason(3, {"tests": 40, "generated": 1}) == (
        "no supported source file to index (3 in languages not parsed; skipped 1 generated, "
        "40 tests); check the exclude/include settings")
