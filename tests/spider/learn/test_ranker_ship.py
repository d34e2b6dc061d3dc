"""`spider train ranker` writes the shipped model only on both dev sets' evidence."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from spider.cli import app
from spider.features import RANKER_FEATURES
from spider.learn.corpus import CORPUS_VERSION, CorpusRow
from spider.pool_rank import MODEL_FILE, PoolRanker
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
