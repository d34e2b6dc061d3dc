"""Both forms of ``spider bench`` parse: the dataset callback and the subcommands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from spider.bench import cli
from spider.eval.dataset import Instance
from tests.spider.rows import write_two_repo_dataset

runner = CliRunner()


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    return write_two_repo_dataset(tmp_path / "d.jsonl", hints_text="never used")


def test_dataset_form_parses(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    def fake_run(rows: list[Instance], resolve: Any, cfg: Any) -> dict[str, Any]:
        seen.update(rows=rows, path=resolve(rows[0]), cfg=cfg)
        return {"metrics": [], "methods": {}, "per_repo": {}, "scored": 0, "instances": 1,
                "k": cfg.settings.k, "model": "m"}  # fmt: skip

    monkeypatch.setattr(cli, "run_benchmark", fake_run)
    res = runner.invoke(
        cli.bench_app,
        ["--dataset", str(dataset), "--repos", "/m/{owner}+{name}/repo", "--method",
         "bm25,spider-both:depth=2", "--out", str(tmp_path / "o"), "--k", "10",
         "--only-repo", "p/q", "--no-warm"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert [r.instance_id for r in seen["rows"]] == ["b-2"]
    assert seen["path"] == Path("/m/p+q/repo")
    assert [m.name for m in seen["cfg"].methods] == ["bm25", "spider-both:depth=2"]
    assert seen["cfg"].settings.k == 10 and seen["cfg"].warm is False


def test_dataset_form_needs_its_options(dataset: Path) -> None:
    res = runner.invoke(cli.bench_app, ["--dataset", str(dataset)])
    assert res.exit_code == 2


def test_unknown_method_is_a_clean_error(dataset: Path, tmp_path: Path) -> None:
    res = runner.invoke(
        cli.bench_app,
        ["-d", str(dataset), "-r", "x", "-m", "magic", "-o", str(tmp_path / "o")],
    )
    assert res.exit_code == 2 and "unknown method" in res.output


def test_history_form_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: dict[str, Any] = {}

    def fake_mine(repo: Path, settings: Any, **kw: Any) -> list[Instance]:
        calls.update(repo=repo, **kw)
        return [Instance("x-1", "o/r", "abc", "Fix it", ["a.py:f"])]

    monkeypatch.setattr(cli, "mine_history", fake_mine)
    out = tmp_path / "h"
    res = runner.invoke(
        cli.bench_app,
        ["history", str(tmp_path), "--max", "7", "--since", "2024-01-01", "--out", str(out),
         "--mine-only"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert calls["max_instances"] == 7 and calls["since"] == "2024-01-01"
    assert json.loads((out / "dataset.jsonl").read_text())["instance_id"] == "x-1"


def test_runnable_lists_missing_repositories(dataset: Path, tmp_path: Path) -> None:
    res = runner.invoke(
        cli.bench_app, ["runnable", "-d", str(dataset), "-r", str(tmp_path / "{name}")]
    )
    assert res.exit_code == 0
    assert "runnable: 0 of 2" in res.output and "not runnable: o/r\t1" in res.output


@pytest.mark.parametrize("command", ["fit", "fit-rerank", "calibrate", "tune"])
def test_bench_only_measures(command: str) -> None:
    res = runner.invoke(cli.bench_app, [command, "--help"])
    assert res.exit_code == 2 and "No such command" in res.output


def test_method_help_lists_every_method() -> None:
    from spider.bench.methods import METHODS

    res = runner.invoke(cli.bench_app, ["--help"], env={"COLUMNS": "400"})
    assert res.exit_code == 0
    flat = " ".join(res.output.split())
    for name in METHODS:
        assert name in flat, name
