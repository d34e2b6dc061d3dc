"""The pickled snapshot of a cached graph: read back equal to its JSON, ignored when stale."""

from __future__ import annotations

import pickle
from pathlib import Path

from spider.graph.digraph import Digraph
from spider.graph_snapshot import read_snapshot, snapshot_path, write_snapshot
from spider.index import GRAPH_CACHE_VERSION, load_or_build_graph
from spider.settings import EngineSettings
from spider.source import GitSource
from tests.spider.bench.helpers import commit_files, init_repo

CODE = {"pkg/m.py": "def f(x):\n    return g(x)\n\n\ndef g(x):\n    return x\n\n\nclass C:\n"
        "    def run(self):\n        return f(1)\n"}


def test_a_warm_start_reads_the_snapshot_made_from_the_json(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    sha = commit_files(repo, CODE, "base")
    settings = EngineSettings(cache_dir=tmp_path / "cache")
    _, cached = load_or_build_graph(GitSource(repo, sha), settings)
    assert not cached
    (json_path,) = (tmp_path / "cache" / "graphs").glob("*.json.gz")
    kept = snapshot_path(json_path)
    assert not kept.exists()  # taken at the first read, from the JSON
    from_json, cached = load_or_build_graph(GitSource(repo, sha), settings)
    assert cached and kept.exists()
    from_pickle, cached = load_or_build_graph(GitSource(repo, sha), settings)
    assert cached and from_pickle is not from_json
    assert from_pickle.g == from_json.g
    assert list(from_pickle.g.edges()) == list(from_json.g.edges())
    assert from_pickle.commit == sha and from_pickle.stats == from_json.stats


def test_a_stale_or_damaged_snapshot_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "k.pickle"
    path.write_bytes(b"not a pickle")
    assert read_snapshot(path, GRAPH_CACHE_VERSION) is None
    path.write_bytes(pickle.dumps((("0", "3.0", "0"), "x")))
    assert read_snapshot(path, GRAPH_CACHE_VERSION) is None
    assert read_snapshot(tmp_path / "absent.pickle", GRAPH_CACHE_VERSION) is None
    from spider.graph.model import CodeGraph

    write_snapshot(CodeGraph(commit="abc"), path, GRAPH_CACHE_VERSION)
    assert read_snapshot(path, GRAPH_CACHE_VERSION).commit == "abc"
    assert read_snapshot(path, "another version") is None


def test_the_name_table_is_kept_beside_the_graph(tmp_path: Path) -> None:
    from spider.index import build_index

    repo = init_repo(tmp_path / "repo")
    sha = commit_files(repo, CODE, "base")
    settings = EngineSettings(cache_dir=tmp_path / "cache", first_stage="bm25")
    built = build_index(GitSource(repo, sha), settings).name_table()
    (kept,) = (tmp_path / "cache" / "graphs").glob("*.names.pickle")
    again = build_index(GitSource(repo, sha), settings).name_table()
    assert again is not built and vars(again) == vars(built) and kept.is_file()


def test_reading_a_snapshot_leaves_the_collector_as_it_found_it(tmp_path: Path) -> None:
    """The collector is paused while a snapshot unpickles (it makes no garbage), and is
    back on afterwards, whether the read succeeded, found nothing or met damage."""
    import gc

    good = tmp_path / "g.pickle"
    write_snapshot(Digraph(), good, GRAPH_CACHE_VERSION)
    bad = tmp_path / "bad.pickle"
    bad.write_bytes(b"not a pickle")
    assert gc.isenabled()
    assert read_snapshot(good, GRAPH_CACHE_VERSION, Digraph) is not None
    assert gc.isenabled()
    assert read_snapshot(bad, GRAPH_CACHE_VERSION) is None
    assert read_snapshot(tmp_path / "absent.pickle", GRAPH_CACHE_VERSION) is None
    assert gc.isenabled()
    gc.disable()
    try:  # a caller that had it off keeps it off
        read_snapshot(good, GRAPH_CACHE_VERSION, Digraph)
        assert not gc.isenabled()
    finally:
        gc.enable()
