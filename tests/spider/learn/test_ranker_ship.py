"""`spider train ranker` writes the shipped model only on both dev sets' evidence."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from spider.cli import app
from spider.learn.corpus import CORPUS_VERSION, CorpusRow
from spider.rank.features import RANKER_FEATURES
from spider.rank.pool_rank import MODEL_FILE, PoolRanker
from tests.spider.learn.test_ranker import _history_row

runner = CliRunner()


def _corpus(folder: Path, rows: list[CorpusRow]) -> Path:
    """``rows`` as instance files of a corpus (the fields :func:`read_row` reads)."""
    folder.mkdir(parents=True)
    for r in rows:
        np.savez_compressed(
            folder / f"{r.instance_id}.npz",
            version=CORPUS_VERSION,
            features=np.array(RANKER_FEATURES),
            x=r.x.astype(np.float32),
            y=r.y.astype(np.int8),
            labels=r.labels,
            unreachable=r.unreachable,
            repo=r.repo,
        )
    return folder


def test_the_shipped_model_is_written_only_on_both_dev_sets(tmp_path: Path) -> None:
    rows = [_history_row(i, f"o/r{i % 4}") for i in range(32)]
    train = _corpus(tmp_path / "train", rows[:24])
    lite = _corpus(tmp_path / "lite", rows[24:28])
    multi = _corpus(tmp_path / "multi", rows[28:])
    shipped = MODEL_FILE.read_bytes()
    args = ["train", "ranker", "-c", str(train), "--no-curve", "--folds", "2"]

    one = runner.invoke(app, [*args, "--dev-corpus", str(lite), "--write-weights"])
    assert one.exit_code != 0
    assert "not written to pool_ranker.json" in one.output
    assert "2 development sets" in one.output
    assert MODEL_FILE.read_bytes() == shipped

    # a candidate elsewhere is written, with each dev set's figures beside the shipped one's
    out = tmp_path / "candidate.json"
    both = [*args, "--dev-corpus", str(lite), "--dev-corpus", str(multi), "--write-weights"]
    res = runner.invoke(app, [*both, "--weights-file", str(out)])
    assert res.exit_code == 0, res.output
    dev = PoolRanker.load(out).meta["dev"]
    assert set(dev) == {"lite", "multi"}
    assert {"candidate", "predecessor", "lower"} <= set(dev["lite"])
    report = json.loads(res.output[: res.output.rindex("}") + 1])
    assert report["dev"]["multi"]["instances"] == 4
    # the recipe of the file it would replace (the shipped one), in the same CV, paired
    versus = report["versus_predecessor_recipe"]
    recorded = json.loads(MODEL_FILE.read_text())["params"]
    assert {k: versus["baseline"][k] for k in recorded} == recorded
    assert versus["baseline"]["without"] == []
    for metric in ("R@5", "R@20", "MRR@20"):
        d = versus[metric]
        assert d["low"] <= d["delta"] <= d["high"]
        assert abs(d["delta"] - (d["candidate"] - d["baseline"])) < 1e-3


def test_run_fits_writes_a_candidate_and_refuses_the_shipped_file_without_evidence(
    tmp_path: Path,
) -> None:
    """`ranker.run(config)` without the command: the report, the file, the refusal."""
    from spider.learn.ranker import RankerRun, run

    rows = [_history_row(i, f"o/r{i % 4}") for i in range(28)]
    train = _corpus(tmp_path / "train", rows[:24])
    lite = _corpus(tmp_path / "lite", rows[24:])
    shipped = MODEL_FILE.read_bytes()
    base = RankerRun((train,), "spider train ranker ...", curve=False, folds=2)
    report_only = run(base)
    assert report_only.written is None and report_only.refusal is None
    assert report_only.cv["data"]["total"]["instances"] == 24 and "dev" not in report_only.cv
    refused = run(RankerRun((train,), "spider train ranker ...", write=True, folds=2,
                            curve=False, dev_dirs=(lite,)))  # fmt: skip
    assert refused.written is None and "2 development sets" in (refused.refusal or "")
    assert MODEL_FILE.read_bytes() == shipped
    out = tmp_path / "candidate.json"
    fit = run(RankerRun((train,), "spider train ranker ...", out, write=True, folds=2))
    assert fit.written == out and fit.refusal is None
    model = PoolRanker.load(out)
    assert model.meta["command"] == "spider train ranker ..." and model.meta["learning_curve"]


def test_an_older_files_recipe_is_refitted_and_paired_by_the_command(tmp_path: Path) -> None:
    """--recipe-of fits a file's recorded recipe (without the families it never read)
    instead of the grid's choice; against that same file's recipe every delta is 0."""
    from spider.learn.ranker import fit
    from spider.rank.features import HISTORY_FEATURES
    from tests.spider.learn.test_ranker import SMALL, _write

    rows = [_history_row(i, f"o/r{i % 4}") for i in range(24)]
    train = _corpus(tmp_path / "train", rows)
    params = {"leaves": 3, "trees": 20, "learning_rate": 0.05, "min_child": 5, "prior": 1.0}
    n_old = len(RANKER_FEATURES) - len(HISTORY_FEATURES)  # a file from before history
    older = fit([replace(r, x=r.x[:, :n_old]) for r in rows], SMALL[0])
    old = _write(tmp_path / "old.json", older, {"params": params})
    body = json.loads(old.read_text())
    old.write_text(json.dumps({**body, "features": list(RANKER_FEATURES[:n_old])}))
    args = ["train", "ranker", "-c", str(train), "--no-curve", "--folds", "2"]
    res = runner.invoke(app, [*args, "--recipe-of", str(old), "--weights-file", str(old)])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output[: res.output.rindex("}") + 1])
    assert report["chosen_by"] == "the recipe of old.json"
    assert {k: report["chosen"]["params"][k] for k in params} == params
    assert report["without"] == ["history"]
    versus = report["versus_predecessor_recipe"]
    assert all(versus[m]["delta"] == 0.0 for m in ("R@5", "R@20", "MRR@20"))
    assert versus["repeats"] == 1
    # repeated: other splits and seeds, the same for both recipes, so still level
    again = runner.invoke(
        app, [*args, "--recipe-of", str(old), "--weights-file", str(old), "--repeats", "3"]
    )
    assert again.exit_code == 0, again.output
    versus = json.loads(again.output[: again.output.rindex("}") + 1])["versus_predecessor_recipe"]
    assert versus["repeats"] == 3
    assert all(versus[m]["delta"] == 0.0 for m in ("R@5", "R@20", "MRR@20"))

    bare = _write(tmp_path / "bare.json", fit(rows, SMALL[0]))  # records no settings
    refused = runner.invoke(app, [*args, "--recipe-of", str(bare)])
    assert refused.exit_code != 0
    assert "records no settings" in refused.output and "--recipe-of" in refused.output
    unpaired = runner.invoke(app, [*args, "--weights-file", str(bare), "--repeats", "2"])
    assert unpaired.exit_code != 0 and "--repeats" in unpaired.output
    reseeded = runner.invoke(app, [*args, "--recipe-of", str(old), "--seeds", "2"])
    assert reseeded.exit_code != 0 and "the file's own" in reseeded.output


def test_seeds_reach_every_grid_point_and_the_file(tmp_path: Path) -> None:
    rows = [_history_row(i, f"o/r{i % 4}") for i in range(24)]
    train = _corpus(tmp_path / "train", rows)
    out = tmp_path / "bagged.json"
    args = ["train", "ranker", "-c", str(train), "--no-curve", "--folds", "2", "--seeds", "2"]
    res = runner.invoke(app, [*args, "--write-weights", "--weights-file", str(out)])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output[: res.output.rindex("}") + 1])
    assert report["chosen"]["params"]["seeds"] == 2
    model = PoolRanker.load(out)
    assert model.meta["params"]["seeds"] == 2
    assert len(model.trees.roots) == 2 * report["chosen"]["params"]["trees"]
