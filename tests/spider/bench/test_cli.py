"""Both forms of ``spider bench`` parse: the dataset callback and the subcommands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from spider.bench import cli
from spider.bench.dataset import Instance

runner = CliRunner()


def _row(iid: str, repo: str = "o/r") -> dict[str, Any]:
    return {
        "instance_id": iid,
        "repo": repo,
        "base_commit": "abc",
        "problem_statement": "Title\nbody",
        "edit_functions": ["a.py:f"],
        "hints_text": "never used",
    }


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    p = tmp_path / "d.jsonl"
    p.write_text("\n".join(json.dumps(_row(i, r)) for i, r in [("a-1", "o/r"), ("b-2", "p/q")]))
    return p


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


@pytest.mark.parametrize(("command", "needed"), [("fit", 2), ("fit-rerank", 3), ("tune", 2)])
def test_fitting_on_too_few_repositories_is_a_clean_error(
    command: str, needed: int, dataset: Path, tmp_path: Path
) -> None:
    res = runner.invoke(
        cli.bench_app,
        [command, "--dataset", str(dataset), "--repos", str(tmp_path), "--out",
         str(tmp_path / "o"), "--only-repo", "o/r"],
    )  # fmt: skip
    assert res.exit_code == 2
    assert f"at least {needed} repositories" in res.output and "o/r" in res.output
    assert not (tmp_path / "o").exists()  # refused before collecting anything


def test_fitting_commands_share_one_body(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fit: collect -> CV -> report file and printout -> weights only with --write-weights."""
    from spider.bench import fit as fitting

    seen: dict[str, Any] = {}

    def fake_collect(rows: list[Instance], resolve: Any, settings: Any, out: Path) -> list[str]:
        out.mkdir(parents=True, exist_ok=True)
        seen.update(rows=[r.instance_id for r in rows], k=settings.k)
        return ["rec-a", "rec-b"]

    def fake_cv(data: list[str], k: int) -> dict[str, Any]:
        return {"margin": 2.0, "data": data, "k": k}

    def fake_write(weights: Any, cv: dict[str, Any], command: str, path: Path) -> None:
        seen.update(weights=weights, path=path, command=command)

    monkeypatch.setattr(fitting, "collect", fake_collect)
    monkeypatch.setattr(fitting, "cross_validate", fake_cv)
    monkeypatch.setattr(fitting, "describe_cv", lambda cv, k: f"margin {cv['margin']} at K={k}")
    monkeypatch.setattr(fitting, "fit_chosen", lambda data, cv, k: ("w", cv["margin"]))
    monkeypatch.setattr(fitting, "write_weights", fake_write)
    out = tmp_path / "o"
    args = ["fit", "-d", str(dataset), "-r", str(tmp_path), "-o", str(out), "--k", "10"]
    res = runner.invoke(cli.bench_app, args)
    assert res.exit_code == 0, res.output
    assert seen == {"rows": ["a-1", "b-2"], "k": 10}  # nothing written without the flag
    assert "margin 2.0 at K=10" in res.output
    assert json.loads((out / "fit-cv.json").read_text())["data"] == ["rec-a", "rec-b"]
    monkeypatch.setattr("spider.select.offline.WEIGHTS_FILE", tmp_path / "w.json")
    res = runner.invoke(cli.bench_app, [*args, "--write-weights"])
    assert res.exit_code == 0, res.output
    assert seen["weights"] == ("w", 2.0) and seen["path"] == tmp_path / "w.json"
    assert seen["command"].startswith("spider bench ") and "wrote" in res.output
