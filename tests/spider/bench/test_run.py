"""The run loop end to end with a stand-in engine: predictions, resume, summary, tables."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import spider.index as spider_index
import spider.localize as spider_localize
from spider.bench.config import BenchConfig
from spider.bench.methods import parse_methods
from spider.bench.report import render_tables, render_timings
from spider.bench.run import run_benchmark
from spider.bench.store import PREDICTIONS, SUMMARY, read_predictions
from spider.eval.dataset import Instance
from spider.eval.snapshot import fixed_resolver
from spider.models import Hit, Issue, Localization, RunSettings
from spider.settings import EngineSettings
from tests.spider.bench.helpers import ast_builder, commit_files, init_repo

CODE = """\
def alpha():
    def inner():
        return 1
    return inner()


class Beta:
    def run(self):
        return 2


def zeta():
    return 3
"""


class FakeIndex:
    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.stats: dict[str, Any] = {"functions": len(graph.functions()), "graph_cached": False}

    def vectors(self) -> None:
        self.stats.update(embedded=3, embed_seconds=0.5, embed_per_second=6.0)


def fake_build_index(
    source: Any, settings: EngineSettings, *, embed: bool = False, progress: Any = None
) -> FakeIndex:
    if progress is not None:
        progress("parsing", 0, 1)  # what the real index reports first
    return FakeIndex(ast_builder(source, settings))


def fake_locate(
    index: FakeIndex, issue: Issue, settings: EngineSettings, *, selector: Any = None,
    llm: Any = None,
) -> Localization:
    ids = sorted(index.graph.functions(), reverse=settings.first_stage == "bm25")
    if selector is not None:  # the oracle lifts what it admits
        ids.sort(key=lambda i: selector.normalise(i) not in selector.truth)
    hits = [Hit(i, "m.py", i, 1, 1, 1.0) for i in ids[: settings.k]]
    return Localization(
        index.graph.commit, hits, RunSettings.of(settings, selector=settings.selector)
    )


@pytest.fixture()
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    monkeypatch.setattr(spider_index, "build_index", fake_build_index)
    monkeypatch.setattr(spider_localize, "locate", fake_locate)
    repo = init_repo(tmp_path / "repo")
    sha = commit_files(repo, {"m.py": CODE}, "base")
    return repo, sha


def _instances(sha: str) -> list[Instance]:
    return [
        Instance("i-1", "o/r", sha, "Inner is wrong", ["m.py:inner"]),
        Instance("i-2", "o/r", sha, "Zeta and run", ["m.py:zeta", "m.py:Beta.run"]),
        Instance("i-3", "o/r", "0" * 40, "Missing commit", ["m.py:zeta"]),
    ]


def test_run_resume_and_summary(setup: tuple[Path, str], tmp_path: Path) -> None:
    repo, sha = setup
    out = tmp_path / "out"
    cfg = BenchConfig(parse_methods("dense,bm25,oracle"), out, progress=False, command="test")
    summary = run_benchmark(_instances(sha), fixed_resolver(repo), cfg)

    rows = [json.loads(x) for x in (out / PREDICTIONS).read_text().splitlines()]
    assert len(rows) == 6  # i-3 has no such commit: skipped, not scored
    assert "i-3" in summary["skipped"] and summary["scored"] == 2
    first = rows[0]
    assert first["method"] == "dense"
    # dense order is alphabetical by graph id; ids are mapped to the dataset convention
    assert first["ranked"] == ["m.py:Beta.run", "m.py:alpha", "m.py:inner", "m.py:zeta"]
    assert first["ranked_ids"][2] == "m.py:alpha.inner"
    assert first["metrics"]["R@3"] == 1.0 and first["metrics"]["MRR@20"] == pytest.approx(1 / 3)
    assert first["index"]["embedded"] == 3 and first["index"]["warm_seconds"] is not None

    oracle = summary["methods"]["oracle"]
    assert oracle["n"] == 2 and oracle["R@1"] == pytest.approx((1 + 0.5) / 2)
    assert summary["per_repo"]["bm25"]["o/r"]["n"] == 2
    assert summary["per_language"]["bm25"]["python"]["n"] == 2  # the fixes are in m.py
    assert json.loads((out / SUMMARY).read_text())["methods"] == summary["methods"]

    # a rerun skips finished pairs and adds only the new method
    cfg2 = BenchConfig(parse_methods("dense,hybrid"), out, progress=False, warm=False)
    summary2 = run_benchmark(_instances(sha)[:2], fixed_resolver(repo), cfg2)
    rows2 = [json.loads(x) for x in (out / PREDICTIONS).read_text().splitlines()]
    assert len(rows2) == 8 and [r["method"] for r in rows2[6:]] == ["hybrid", "hybrid"]
    assert set(summary2["methods"]) == {"dense", "hybrid"}

    buf = io.StringIO()
    render_tables(summary, file=buf)
    text = buf.getvalue()
    assert "oracle" in text and "R@20" in text and "o/r" in text
    per = summary["timings"]["per_instance"]
    assert set(per) == {"i-1", "i-2"} and set(per["i-1"]["query_seconds"]) == {
        "dense",
        "bm25",
        "oracle",
    }
    buf = io.StringIO()
    render_timings(summary, file=buf)
    assert "i-2" in buf.getvalue()


def test_rescore_against_the_patch(setup: tuple[Path, str], tmp_path: Path) -> None:
    from spider.bench.run import rescore
    from tests.spider.bench.helpers import git

    repo, sha = setup
    commit_files(repo, {"m.py": CODE.replace("return 3", "return 4")}, "fix zeta")
    patch = git(repo, "diff", sha, "HEAD") + "\n"
    # labels that disagree with the patch: rescoring trusts the patch
    inst = Instance("i-9", "o/r", sha, "Zeta is wrong", ["m.py:alpha"], patch)
    out = tmp_path / "out"
    cfg = BenchConfig(parse_methods("dense"), out, progress=False, warm=False)
    summary = run_benchmark([inst], fixed_resolver(repo), cfg)
    assert summary["methods"]["dense"]["R@1"] == 0.0  # alpha is ranked 2nd
    rows = rescore(read_predictions(out), [inst], fixed_resolver(repo), EngineSettings(), "precise")
    assert rows[0]["gt"] == ["m.py:zeta"] and rows[0]["gt_source"] == "patch:precise"
    assert rows[0]["metrics"]["R@5"] == 1.0 and rows[0]["metrics"]["MRR@20"] == 0.25


@dataclass(frozen=True)
class Centre:
    """The shape of the engine's ``CentreExpansion``."""

    centre: str
    offered: int
    admitted: int


@dataclass
class ExpandedLocalization:
    """A ``Localization`` as the engine returns it with expansion accounting."""

    hits: list[Hit]
    settings: RunSettings
    timings: dict[str, float]
    expansion: list[Centre] | None


def test_rows_carry_expansion_accounting_and_missing_reads_as_missing(
    setup: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, sha = setup

    def locate(index: FakeIndex, issue: Issue, settings: EngineSettings, **kw: Any) -> Any:
        loc = fake_locate(index, issue, settings, **kw)
        # dense reports two centres; bm25 stands for an engine (or row) without the field
        centres = [Centre("m.py:alpha", 3, 1), Centre("m.py:zeta", 2, 0)]
        expansion = centres if settings.first_stage == "dense" else None
        return ExpandedLocalization(loc.hits, loc.settings, loc.timings, expansion)

    monkeypatch.setattr(spider_localize, "locate", locate)
    out = tmp_path / "out"
    cfg = BenchConfig(parse_methods("dense,bm25"), out, progress=False, warm=False)
    summary = run_benchmark(_instances(sha)[:2], fixed_resolver(repo), cfg)

    rows = {(r["instance_id"], r["method"]): r for r in read_predictions(out)}
    dense = rows[("i-1", "dense")]
    assert (dense["offered"], dense["admitted"]) == (5, 1)
    assert dense["expansion"] == [
        {"centre": "m.py:alpha", "offered": 3, "admitted": 1},
        {"centre": "m.py:zeta", "offered": 2, "admitted": 0},
    ]
    bm25 = rows[("i-1", "bm25")]
    assert bm25["offered"] is None and bm25["admitted"] is None and bm25["expansion"] is None

    assert summary["methods"]["dense"]["adm/issue"] == 1.0
    assert summary["methods"]["dense"]["offered/issue"] == 5.0
    assert summary["methods"]["bm25"]["adm/issue"] is None  # missing, not zero
    assert summary["per_repo"]["dense"]["o/r"]["n_expansion"] == 2
    buf = io.StringIO()
    render_tables(summary, file=buf)
    line = next(x for x in buf.getvalue().splitlines() if " bm25 " in x)
    assert line.count("–") == 2


def test_the_loop_reports_its_runs_to_a_progress_listener(
    setup: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contextlib import contextmanager

    import spider.bench.run as bench_run
    from spider.progress import PARSING, RUNS

    heard: list[tuple[str, int, int | None, str]] = []

    @contextmanager
    def listening(enabled: bool = True) -> Any:
        assert enabled
        yield lambda phase, done, total, detail="": heard.append((phase, done, total, detail))

    monkeypatch.setattr(bench_run, "terminal_progress", listening)
    repo, sha = setup
    cfg = BenchConfig(parse_methods("bm25,oracle"), tmp_path / "out", progress=True, warm=False)
    run_benchmark(_instances(sha), fixed_resolver(repo), cfg)
    runs = [(d, t, x) for p, d, t, x in heard if p == RUNS]
    assert runs == [(0, 6, "i-1"), (2, 6, "i-2"), (4, 6, "i-3"), (6, 6, "")]
    assert any(p == PARSING for p, *_ in heard)  # each instance's indexing is heard too
