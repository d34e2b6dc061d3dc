"""``spider bench speed`` on a tiny repository: every row is measured, nothing timed."""

from __future__ import annotations

import json
from pathlib import Path

from spider.bench.speed import measure_speed, render_speed, write_speed
from spider.cpu import cpu_summary
from spider.settings import EngineSettings
from tests.spider.bench.helpers import commit_files, init_repo

CODE = {
    "m.py": "".join(
        f"def f{i}(x):\n    return x + {i}\n\n\nclass C{i}:\n    def run(self):\n        return {i}\n\n\n"
        for i in range(6)
    ),
    "n.py": "LIMIT = 3\n",  # a second file: two can be parsed in two processes
}


def test_speed_measures_every_step(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    sha = commit_files(repo, CODE, "base")
    settings = EngineSettings(encoder="onnx-int8", cold_pool=4, parse_workers=2)
    run = measure_speed(
        repo, sha, base=settings, work=tmp_path / "work", backends=["onnx-int8", "onnx"],
        sample=4, queries=3, issue_texts=["f3 returns the wrong value\nit adds 3"],
    )  # fmt: skip
    names = [s.name for s in run.steps]
    assert run.functions == 12
    for expected in ("encode onnx-int8", "query p99", "warm CLI locate (new process): wall"):
        assert expected in names
    by_name = {s.name: s for s in run.steps}
    assert by_name["cold path: first ranking (graph cached)"].detail["partial"] is True
    assert by_name["warm index load (in process)"].detail["vectors"] == "matrix"
    assert by_name["warm CLI locate (new process): wall"].value is not None
    imports = by_name["warm CLI locate (new process): imports"]
    assert imports.value is not None and imports.value > 0
    assert imports.detail["heavy"] == "none"  # no torch, transformers, bm25s or scipy
    assert by_name["onnx fp32: idle threads not spinning / spinning"].value > 0
    assert by_name["graph + BM25 (cold; 2 parsing processes)"].detail["parsers"] == 2
    assert by_name["graph build: one parsing process / 2"].value > 0
    assert by_name["CPU multiplies bf16 natively (1 = yes)"].value in (0.0, 1.0)
    assert by_name["speed-up onnx-int8 / onnx fp32"].value > 0
    cosine = by_name["cosine onnx-int8 / onnx fp32 (mean)"]  # int8 close to fp32, not equal
    assert 0.99 < cosine.value < 1.0 and cosine.detail["minimum"] <= cosine.value
    assert "cosine onnx / onnx fp32 (mean)" not in by_name
    for name in ("history window: from the commits' cached parses", "history window: kept"):
        assert by_name[name].detail["commits"] == 0  # one commit: no history before it
    write_speed(run, tmp_path / "speed.json")
    data = json.loads((tmp_path / "speed.json").read_text())
    assert data["functions"] == 12 and len(data["steps"]) == len(run.steps)
    assert data["cpu"] == run.cpu == cpu_summary()  # which CPU, AMX or not, travels with it
    assert "| encode onnx-int8 |" in render_speed(run)
    assert render_speed(run).splitlines()[0].endswith(f"CPUs: {run.cpu}")


def test_speed_compares_a_tuned_delta_with_the_bundled_weights_in_one_run(tmp_path: Path) -> None:
    from tests.spider.test_encoder_delta import write_delta

    repo = init_repo(tmp_path / "repo")
    sha = commit_files(repo, CODE, "base")
    delta = write_delta(tmp_path / "delta.npz")
    settings = EngineSettings(encoder="onnx", cold_pool=4, encoder_delta=str(delta))
    run = measure_speed(
        repo, sha, base=settings, work=tmp_path / "work", backends=["onnx"], sample=4,
        full=False, queries=1, issue_texts=["f3 returns the wrong value"],
    )  # fmt: skip
    ratio = {s.name: s for s in run.steps}["tuned / bundled onnx"]
    assert ratio.unit == "x" and ratio.value > 0 and ratio.detail["texts"] == 4


def test_speed_times_a_document_cap_against_the_query_cap_in_one_run(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    sha = commit_files(repo, CODE, "base")
    settings = EngineSettings(encoder="onnx", cold_pool=4, document_seq_length=16)
    run = measure_speed(
        repo, sha, base=settings, work=tmp_path / "work", backends=["onnx"], sample=4,
        full=False, queries=1, issue_texts=["f3 returns the wrong value"],
    )  # fmt: skip
    by_name = {s.name: s for s in run.steps}
    ratio = by_name["onnx fp32: documents cut at 16 tokens / at 128"]
    assert ratio.unit == "x" and ratio.value > 0 and ratio.detail["texts"] == 4
    plain = measure_speed(
        repo, sha, base=EngineSettings(encoder="onnx", cold_pool=4), work=tmp_path / "plain",
        backends=["onnx"], sample=4, full=False, queries=1, issue_texts=["f3"],
    )  # fmt: skip
    assert not any("documents cut at" in s.name for s in plain.steps)  # one cap: no row


def test_speed_measures_the_index_phases_of_each_encoder_in_one_run(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    sha = commit_files(repo, CODE, "base")
    run = measure_speed(
        repo, sha, base=EngineSettings(encoder="onnx", cold_pool=4), work=tmp_path / "work",
        backends=["onnx"], sample=4, queries=2, issue_texts=["f3 returns the wrong value"],
        index_encoders=["onnx-int8", "onnx"],
    )  # fmt: skip
    by_name = {s.name: s for s in run.steps}
    for encoder in ("onnx-int8", "onnx"):
        assert by_name[f"full cold index: embed all ({encoder})"].detail["functions"] == 12
        assert by_name[f"cold path: first ranking (graph cached) [{encoder}]"].value is not None
        assert by_name[f"warm index load (in process) [{encoder}]"].detail["vectors"] == "matrix"
        assert by_name[f"warm CLI locate (new process): wall [{encoder}]"].detail["encoder"] == encoder
        assert by_name[f"warm CLI locate (new process): imports [{encoder}]"].detail["heavy"] == "none"
    assert "query p50" not in by_name  # every index row names its encoder
