"""Hostile repositories against the engine's reading side (sources and graph): nothing is
executed, nothing outside the repository is read, memory stays bounded, every refusal is
counted. The repositories are built by ``tests.hostile`` with git at test time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from spider.graph import CodeGraph, build_graph, count_source_files
from spider.settings import EngineSettings
from spider.source import DirectorySource, GitSource, SourceFile, SourceTree
from tests.hostile import BIG_BLOB_BYTES, SECRET_FUNCTION, Hostile, hostile_repo, many_files_repo

ROOT = Path(__file__).resolve().parents[3]
# What the hostile repository holds that may be indexed, and nothing else.
EXPECTED_FUNCTIONS = {
    "app/core.py:handle", "app/core.py:route", "app/deep.c:deep", "app/deep.js:shallow",
    "app/deep_brackets.py:after_brackets", "app/latin1.py:after_bad_bytes",
    "app/latin1.py:caf",  # caf\xe9 read as caf\ufffd: the name ends at the bad byte
    "app/na\udcefve.py:naive_name",
}
# Peak resident memory of a fresh interpreter indexing: about 80 MB for the hostile
# repository and 180 MB for 10,000 modules here; reading the 200 MB blob once would add 200.
HOSTILE_PEAK_RSS_MB = 200
MANY_FILES_PEAK_RSS_MB = 500


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    return hostile_repo(tmp_path_factory.mktemp("hostile"))


class Recording:
    """A source that remembers which paths the graph asked to read."""

    def __init__(self, inner: SourceTree) -> None:
        self.inner = inner
        self.commit = inner.commit
        self.read: list[str] = []

    @property
    def skipped(self):  # type: ignore[no-untyped-def]
        return self.inner.skipped

    def files(self) -> list[SourceFile]:
        return self.inner.files()

    def blob_ids(self) -> dict[str, str]:
        return self.inner.blob_ids()

    def read_many(self, paths: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        for path, data in self.inner.read_many(paths):
            self.read.append(path)
            yield path, data


def functions(cg: CodeGraph) -> set[str]:
    return set(cg.functions())


def everything_indexed(cg: CodeGraph) -> str:
    return json.dumps([[n, d] for n, d in cg.g.nodes(data=True)], default=str)


@pytest.mark.parametrize("kind", ["git", "directory"])
def test_hostile_repository_is_read_safely(hostile: Hostile, kind: str) -> None:
    inner: SourceTree = (GitSource(hostile.path, "main") if kind == "git"
                         else DirectorySource(hostile.path))
    source = Recording(inner)
    cg = build_graph(source, EngineSettings())

    # Only the repository's own functions; the ones behind symlinks, '..' and submodules
    # (defined only outside) are absent, and so is /etc/passwd.
    extra = {"app/deep.js:" + ".".join(f"d{i}" for i in range(n + 1)) for n in range(32)}
    assert functions(cg) == EXPECTED_FUNCTIONS | extra
    text = everything_indexed(cg)
    assert SECRET_FUNCTION not in text and "root:x:0:0" not in text
    # The 200 MB blob is refused by its listed size and never read.
    assert "app/huge.py" not in source.read
    assert hostile.fired() == []

    skipped = dict(cg.stats.skipped)
    common = {"too_large": 1, "binary": 2, "minified": 1, "lfs_pointer": 1, "symlink": 5}
    if kind == "git":  # the tree also holds two gitlinks and a crafted '..' entry
        assert skipped == {**common, "submodule": 2, "unsafe_path": 1}
    else:  # on disk a gitlink is no file and '..' cannot exist
        assert skipped == common
    # 10,000 levels of nesting: parsed within the per-file budget, nesting capped at 32.
    assert "timeout" not in skipped and "parse_error" not in skipped
    assert cg.stats.parsed == {"python": 4, "c": 1, "javascript": 1}


def test_the_big_blob_is_what_it_claims(hostile: Hostile) -> None:
    (big,) = [f for f in GitSource(hostile.path, "main").files() if f.path == "app/huge.py"]
    assert big.size == BIG_BLOB_BYTES
    assert os.stat(hostile.path / "app" / "huge.py").st_blocks * 512 < 1024 * 1024  # sparse


def _index_in_child(repo: Path, timeout_s: float) -> tuple[dict[str, Any], float]:
    """Build the graph of ``repo`` in a fresh interpreter; return its stats and counts, and
    that interpreter's own peak resident memory in MB (VmHWM: ``ru_maxrss`` would carry
    the peak of the pytest process it was forked from)."""
    code = (
        "import json\n"
        "from spider.graph import build_graph\n"
        "from spider.source import GitSource\n"
        "from spider.settings import EngineSettings\n"
        f"cg = build_graph(GitSource({str(repo)!r}, 'main'), EngineSettings())\n"
        "status = open('/proc/self/status').read().split('VmHWM:')[1]\n"
        "peak = int(status.split()[0]) / 1024\n"
        "print(json.dumps({**cg.stats.to_dict(), **cg.counts(), 'peak_mb': peak}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout_s, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return out, float(out.pop("peak_mb"))


def test_hostile_repository_indexes_in_bounded_memory(hostile: Hostile) -> None:
    stats, peak_mb = _index_in_child(hostile.path, timeout_s=300)  # a hang guard only
    assert stats["skipped"]["too_large"] == 1
    assert peak_mb < HOSTILE_PEAK_RSS_MB, f"peak RSS {peak_mb:.0f} MB"


@pytest.mark.slow
def test_a_repository_of_100000_files(tmp_path: Path) -> None:
    """100,000 files (every tenth a Python module, the rest data), written by git
    fast-import: listed, planned, parsed and linked in one bounded pass."""
    repo = many_files_repo(tmp_path, 100_000, source_every=10)
    assert count_source_files(GitSource(repo, "main"), EngineSettings()) == 10_000
    stats, peak_mb = _index_in_child(repo, timeout_s=600)  # a hang guard only
    assert stats["parsed"] == {"python": 10_000} and stats["skipped"] == {}
    assert stats["nodes"]["function"] == 20_000
    assert peak_mb < MANY_FILES_PEAK_RSS_MB, f"peak RSS {peak_mb:.0f} MB"
