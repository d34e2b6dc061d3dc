"""`spider train corpus | ranker | selector` end to end on throwaway repositories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spider.cli import app
from spider.eval.dataset import write_dataset
from spider.expand.select.offline import OfflineWeights
from spider.rank.pool_rank import PoolRanker
from spider.retrieve.adapter import QueryAdapter
from tests.spider.bench.helpers import commit_files, init_repo
from tests.spider.learn.test_corpus import _inst
from tests.spider.shop import FILES

runner = CliRunner()


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Three repositories with the same code (one named like a benchmark repository) and
    a dataset of one issue each."""
    mirrors = tmp_path_factory.mktemp("mirrors")
    rows = []
    for repo in ("acme/shop", "acme/store", "psf/requests"):
        root = init_repo(mirrors / repo.replace("/", "+"))
        sha = commit_files(root, {k: v.lstrip("\n") for k, v in FILES.items()}, "shop")
        rows.append(_inst(f"{repo.replace('/', '__')}-1", sha, repo=repo))
    data = tmp_path_factory.mktemp("data") / "train.jsonl"
    write_dataset(data, rows)
    return mirrors, data


def _common(setup: tuple[Path, Path], tmp_path: Path) -> list[str]:
    """The dataset, repositories and cache options every collecting command takes."""
    mirrors, data = setup
    return [
        "-d",
        str(data),
        "-r",
        str(mirrors / "{owner}+{name}"),
        "--cache-dir",
        str(tmp_path / "c"),
    ]


def _collect(common: list[str], corpus: Path) -> None:
    res = runner.invoke(app, ["train", "corpus", *common, "-o", str(corpus), "--pool", "4"])
    assert res.exit_code == 0, res.output
    assert json.loads((corpus / "corpus.json").read_text())["total"]["instances"] == 3


def test_corpus_then_ranker_then_selector(setup: tuple[Path, Path], tmp_path: Path) -> None:
    common = _common(setup, tmp_path)
    corpus = tmp_path / "corpus"
    _collect(common, corpus)

    model = tmp_path / "ranker.json"
    res = runner.invoke(
        app,
        [
            "train",
            "ranker",
            "-c",
            str(corpus),
            "--no-curve",
            "--write-weights",
            "--weights-file",
            str(model),
            "-o",
            str(tmp_path / "cv.json"),
        ],
    )
    assert res.exit_code == 0, res.output
    cv = json.loads((tmp_path / "cv.json").read_text())
    assert cv["excluded_rows_left_out"] == 1  # psf/requests never teaches
    assert set(cv["data"]["by_repo"]) == {"acme/shop", "acme/store"}
    ranker = PoolRanker.load(model)
    assert ranker.meta["command"].startswith("spider train")  # as typed (here: pytest argv)
    assert ranker.meta["trained_on"]["total"]["instances"] == 2

    weights = tmp_path / "offline.json"
    res = runner.invoke(
        app,
        [
            "train",
            "selector",
            *common,
            "-c",
            str(corpus),
            "-o",
            str(tmp_path / "sel"),
            "--pool",
            "4",
            "--write-weights",
            "--weights-file",
            str(weights),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "η" in res.output
    w = OfflineWeights.load(weights)
    assert w.margin is not None


def test_ranker_without_a_corpus_is_a_clean_error(tmp_path: Path) -> None:
    res = runner.invoke(app, ["train", "ranker", "-c", str(tmp_path / "none")])
    assert res.exit_code == 2 and "no corpus" in res.output


def test_corpus_then_encoder(setup: tuple[Path, Path], tmp_path: Path) -> None:
    common = _common(setup, tmp_path)
    data = setup[1]
    corpus = tmp_path / "corpus"
    _collect(common, corpus)
    adapter = tmp_path / "adapter.npz"
    args = ["train", "encoder", "-c", str(corpus), "-d", str(data), "--folds", "2"]
    res = runner.invoke(
        app,
        [*args, "-o", str(tmp_path / "cv.json"), "--write-weights", "--weights-file", str(adapter)],
    )
    assert res.exit_code == 0, res.output
    cv = json.loads((tmp_path / "cv.json").read_text())
    assert cv["left_out"]["excluded"] == 1  # psf/requests never teaches
    assert cv["instances"] == 2 and cv["repositories"] == 2
    assert {"identity", "grid", "chosen", "pays"} <= set(cv)
    got = QueryAdapter.load(adapter)
    assert got.matrix.shape == (384, 384) and got.meta["command"].startswith("spider train")
    assert (corpus / "adapter" / "queries.npz").exists()  # the windows are embedded once
    _collect(common, corpus)  # a second run: the queries' cache is not read as an instance


def test_the_adapter_run_reports_and_writes_without_the_command(
    setup: tuple[Path, Path], tmp_path: Path
) -> None:
    """`adapter.run(config)` directly: the report, and the file only when asked."""
    from spider.learn.adapter import AdapterRun, run

    corpus = tmp_path / "corpus"
    _collect(_common(setup, tmp_path), corpus)
    target = tmp_path / "adapter.npz"
    config = AdapterRun((corpus,), (setup[1],), "spider train encoder ...", target, folds=2)
    report_only = run(config)
    assert report_only.written is None and not target.exists()
    assert report_only.cv["left_out"]["excluded"] == 1 and report_only.cv["instances"] == 2
    fit = run(AdapterRun((corpus,), (setup[1],), "spider train encoder ...", target, True, 2))
    assert fit.written == target
    assert fit.cv["chosen"]["params"] == report_only.cv["chosen"]["params"]  # timings aside
    assert QueryAdapter.load(target).meta["command"] == "spider train encoder ..."


def test_a_fitting_commands_collectors_are_heard_once_per_instance(tmp_path: Path) -> None:
    from spider.eval.dataset import Instance
    from spider.learn.dev_fit import reporting
    from spider.progress import INSTANCES

    heard: list[tuple[str, int, int | None, str]] = []
    resolve = reporting(lambda inst: tmp_path / inst.repo, 2,
                        lambda p, d, t, x="": heard.append((p, d, t, x)))
    a, b = (Instance(i, "o/r", "0" * 40, "t") for i in ("a-1", "b-2"))
    assert [resolve(a), resolve(a), resolve(b)] == [tmp_path / "o/r"] * 3
    assert heard == [(INSTANCES, 0, 2, "a-1"), (INSTANCES, 1, 2, "b-2")]
    plain = lambda inst: tmp_path  # noqa: E731 - nothing listens: the resolver itself
    assert reporting(plain, 2, None) is plain
