"""The fitting commands of ``spider train`` (selector, head, calibration, fusion) share one
body: collect -> CV -> report file and printout -> model file only with --write-weights."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from spider.eval.dataset import Instance
from spider.learn import cli
from spider.learn.cv import CVReport
from tests.spider.rows import write_two_repo_dataset

runner = CliRunner()


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    return write_two_repo_dataset(tmp_path / "d.jsonl")


@pytest.mark.parametrize(
    ("command", "needed"), [("selector", 2), ("head", 3), ("calibration", 2), ("fusion", 2)]
)
def test_fitting_on_too_few_repositories_is_a_clean_error(
    command: str, needed: int, dataset: Path, tmp_path: Path
) -> None:
    res = runner.invoke(
        cli.train_app,
        [command, "--dataset", str(dataset), "--repos", str(tmp_path), "--out",
         str(tmp_path / "o"), "--only-repo", "o/r"],
    )  # fmt: skip
    assert res.exit_code == 2
    assert f"at least {needed} repositories" in res.output and "o/r" in res.output
    assert not (tmp_path / "o").exists()  # refused before collecting anything


@pytest.fixture()
def fake_selector(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The selector's collect / CV / fit / write replaced by recorders."""
    from spider.learn import selector as fitting

    seen: dict[str, Any] = {}

    def fake_collect(rows: list[Instance], resolve: Any, settings: Any, out: Path) -> list[str]:
        out.mkdir(parents=True, exist_ok=True)
        seen.update(rows=[r.instance_id for r in rows], k=settings.k)
        return ["rec-a", "rec-b"]

    def fake_cv(data: list[str], k: int) -> CVReport[float]:
        return CVReport(2.0, len(data), "fake", {"margin": 2.0, "data": data, "k": k})

    def fake_write(
        weights: Any, cv: dict[str, Any], command: str, path: Path, comment: str = ""
    ) -> None:
        seen.update(weights=weights, path=path, command=command, comment=comment)

    monkeypatch.setattr(fitting, "collect", fake_collect)
    monkeypatch.setattr(fitting, "cross_validate", fake_cv)
    monkeypatch.setattr(fitting, "describe_cv", lambda cv, k: f"margin {cv['margin']} at K={k}")
    monkeypatch.setattr(fitting, "fit_chosen", lambda data, cv, k: ("w", cv["margin"]))
    monkeypatch.setattr(fitting, "write_weights", fake_write)
    return seen


def test_fitting_commands_share_one_body(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_selector: dict[str, Any]
) -> None:
    seen = fake_selector
    out = tmp_path / "o"
    args = ["selector", "-d", str(dataset), "-r", str(tmp_path), "-o", str(out), "--k", "10"]
    res = runner.invoke(cli.train_app, args)
    assert res.exit_code == 0, res.output
    assert seen == {"rows": ["a-1", "b-2"], "k": 10}  # nothing written without the flag
    assert "margin 2.0 at K=10" in res.output
    assert json.loads((out / "selector-cv.json").read_text())["data"] == ["rec-a", "rec-b"]
    monkeypatch.setattr("spider.expand.select.offline.WEIGHTS_FILE", tmp_path / "w.json")
    res = runner.invoke(cli.train_app, [*args, "--write-weights"])
    assert res.exit_code == 0, res.output
    assert seen["weights"] == ("w", 2.0) and seen["path"] == tmp_path / "w.json"
    assert seen["command"].startswith("spider train ") and "wrote" in res.output
    assert "dev set" in seen["comment"]  # no --corpus: the dev-data form
    res = runner.invoke(
        cli.train_app, [*args, "--write-weights", "--weights-file", str(tmp_path / "x.json")]
    )
    assert res.exit_code == 0, res.output
    assert seen["path"] == tmp_path / "x.json"  # --weights-file wins over the shipped file


def test_a_missing_dataset_is_a_clean_error(tmp_path: Path) -> None:
    res = runner.invoke(
        cli.train_app,
        ["head", "-d", str(tmp_path / "none.jsonl"), "-r", "x", "-o", str(tmp_path / "o")],
    )
    assert res.exit_code == 2 and "dataset not found" in res.output


def test_the_cli_defaults_are_the_corpus_defaults_and_load_no_fitting_code() -> None:
    import subprocess
    import sys

    from spider.learn import corpus

    assert (cli.DEFAULT_POOL, cli.DEFAULT_MAX_PER_REPO) == (
        corpus.DEFAULT_POOL,
        corpus.DEFAULT_MAX_PER_REPO,
    )
    def loaded(imports: str) -> str:
        probe = (f"import sys, {imports}; print(sorted(m for m in sys.modules if m.startswith("
                 "('scipy', 'sklearn', 'lightgbm', 'spider.learn.', 'spider.bench.'))))")
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                             check=True)
        return out.stdout.strip()

    # `spider locate` and `spider index` load neither the training nor the benchmark code
    assert loaded("spider.cli") == "[]"
    # `spider train` loads its command modules only: the fitting code when a command runs
    assert loaded("spider.learn.cli") == (
        "['spider.learn.cli', 'spider.learn.cross_cli', 'spider.learn.delta_cli']"
    )


# Each fitting command with the names its body calls: (module, collect, cross_validate,
# describe or None, fit-on-everything or None, writer or None), the CV report's file name.
BODIES = {
    "selector": ("spider.learn.selector", "collect", "cross_validate", "describe_cv",
                 "fit_chosen", "write_weights", "selector-cv.json"),
    "head": ("spider.learn.head", "collect", "cross_validate", None, "fit", "write_weights",
             "head-cv.json"),
    "calibration": ("spider.learn.calibration", "spider.learn.head:collect", "cross_validate",
                    "describe", None, "write_calibration", "calibration-cv.json"),
    "fusion": ("spider.learn.fusion", "collect", "cross_validate", None, None, None,
               "fusion-cv.json"),
}  # fmt: skip


@pytest.mark.parametrize("command", sorted(BODIES))
def test_every_fitting_command_runs_the_one_body(
    command: str, dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """collect -> CV -> report file and printout; the model file only with --write-weights,
    at --weights-file; too few repositories refused (the test above)."""
    import importlib

    module, collect, cv, describe, fit, write, cv_file = BODIES[command]
    mod = importlib.import_module(module)
    calls: list[str] = []

    def fake_collect(rows: list[Instance], resolve: Any, settings: Any, out: Path) -> list[str]:
        out.mkdir(parents=True, exist_ok=True)
        calls.append("collect:" + ",".join(r.instance_id for r in rows))
        return ["rec-a", "rec-b"]

    def fake_cv(data: list[str], *_: Any, **__: Any) -> CVReport[None]:
        calls.append("cv")
        figures = {"data": data, "C": 1.0, "pool": 10, "margin": 0.5}
        return CVReport(None, len(data), "fake", figures)

    def fake_write(weights: Any, *args: Any, **_: Any) -> None:
        path = next(a for a in args if isinstance(a, Path))
        calls.append(f"write:{weights}:{path.name}")

    where, _, name = collect.rpartition(":")
    monkeypatch.setattr(importlib.import_module(where) if where else mod, name, fake_collect)
    monkeypatch.setattr(mod, cv, fake_cv)
    if describe:
        monkeypatch.setattr(mod, describe, lambda *_a, **_k: "described CV")
    if fit:
        monkeypatch.setattr(mod, fit, lambda *_a, **_k: "fitted")
    if write:
        monkeypatch.setattr(mod, write, fake_write)
    if hasattr(mod, "MIN_REPOS"):  # the two-repository dataset suffices for this test
        monkeypatch.setattr(mod, "MIN_REPOS", 2)
    out = tmp_path / "o"
    args = [command, "-d", str(dataset), "-r", str(tmp_path), "-o", str(out)]
    res = runner.invoke(cli.train_app, args)
    assert res.exit_code == 0, res.output
    assert calls == ["collect:a-1,b-2", "cv"]  # nothing written without the flag
    assert json.loads((out / cv_file).read_text())["data"] == ["rec-a", "rec-b"]
    assert ("described CV" if describe else '"rec-a"') in res.output
    if write is None:
        return
    calls.clear()
    target = tmp_path / "model.json"
    res = runner.invoke(cli.train_app, [*args, "--write-weights", "--weights-file", str(target)])
    assert res.exit_code == 0, res.output
    fitted = "fitted" if fit else {"data": ["rec-a", "rec-b"], "C": 1.0, "pool": 10,
                                   "margin": 0.5}  # fmt: skip
    assert calls == ["collect:a-1,b-2", "cv", f"write:{fitted}:model.json"]
    assert f"wrote {target}" in res.output


def test_the_dev_fit_runs_without_the_command(tmp_path: Path) -> None:
    """`dev_fit.run(spec, config)` directly: collect, CV report written, the file only when
    asked, nothing collected a clean error."""
    from spider.errors import InputError
    from spider.learn.dev_fit import DevRun, Fitting, run
    from spider.settings import EngineSettings

    written: list[tuple[object, str, Path]] = []
    spec: Fitting[str, str] = Fitting(
        lambda rows, _resolve, _settings, _out: [r.instance_id for r in rows],
        lambda data, k: CVReport(len(data), len(data), "fake", {"n": len(data), "k": k}),
        "fake-cv.json",
        weights=lambda data, cv, _k: f"w{cv['n']}",
        write=lambda w, _cv, command, path: written.append((w, command, path)),
        weights_file=tmp_path / "shipped.json",
    )
    rows = [Instance(i, "o/r", "0" * 40, "t") for i in ("a-1", "b-2")]
    config = DevRun(rows, lambda _i: tmp_path, EngineSettings(k=7), tmp_path, "spider train x")
    fit = run(spec, config)
    assert fit.cv == {"n": 2, "k": 7} and fit.written is None and not written
    assert json.loads((tmp_path / "fake-cv.json").read_text()) == fit.cv
    again = run(spec, DevRun(rows, lambda _i: tmp_path, EngineSettings(), tmp_path, "c", True))
    assert again.written == tmp_path / "shipped.json"
    assert written == [("w2", "c", tmp_path / "shipped.json")]
    with pytest.raises(InputError, match="no instance could be collected"):
        run(spec, DevRun([], lambda _i: tmp_path, EngineSettings(), tmp_path, "c"))
