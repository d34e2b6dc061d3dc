"""The one model-file writer: schema, kind and provenance in every file, read back by the
engine's own loaders."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from spider.learn.model_file import Provenance, WeightsBody, write_model_file
from spider.rank.rerank import RerankWeights
from spider.retrieve.adapter import QueryAdapter
from spider.weights import SCHEMA_VERSION

PROVENANCE = Provenance(
    command="spider train head -d dev.jsonl",
    comment="a test fit",
    cv={"instances": 3, "MRR@20": 0.5},
    extra={"trained_on": {"repositories": 2}},
)


def test_a_weights_file_carries_schema_kind_and_provenance(tmp_path: Path) -> None:
    body = WeightsBody(kind="rerank", sections={"coef": {"log_rank": -0.5}}, scalars={"bias": 1.0})
    path = write_model_file(tmp_path / "w.json", body, PROVENANCE)
    data = json.loads(path.read_text())
    assert data["schema"] == SCHEMA_VERSION and data["kind"] == "rerank"
    assert data["command"] == "spider train head -d dev.jsonl" and data["comment"] == "a test fit"
    assert data["cv"] == {"instances": 3, "MRR@20": 0.5}
    assert data["trained_on"] == {"repositories": 2}
    back = RerankWeights.load(path)
    assert back.coef == {"log_rank": -0.5} and back.bias == 1.0
    assert back.meta["command"] == PROVENANCE.command


def test_an_adapter_file_carries_schema_and_provenance(tmp_path: Path) -> None:
    path = write_model_file(
        tmp_path / "a.npz", QueryAdapter(np.eye(4, dtype=np.float32)), PROVENANCE
    )
    with np.load(path) as raw:
        assert int(raw["schema"]) == SCHEMA_VERSION
    back = QueryAdapter.load(path)
    assert back.meta["command"] == PROVENANCE.command and back.meta["cv"]["instances"] == 3
    np.testing.assert_array_equal(back.matrix, np.eye(4))


def test_a_file_without_its_command_is_refused(tmp_path: Path) -> None:
    body = WeightsBody(kind="rerank", sections={"coef": {}}, scalars={"bias": 0.0})
    with pytest.raises(ValueError, match="command"):
        write_model_file(tmp_path / "w.json", body, Provenance(command=" ", comment="", cv={}))
    assert not (tmp_path / "w.json").exists()


def test_extra_metadata_cannot_overwrite_what_provenance_owns(tmp_path: Path) -> None:
    bad = Provenance(command="spider train x", comment="", cv={}, extra={"schema": 9})
    with pytest.raises(ValueError, match="schema"):
        bad.meta()


def test_an_unknown_model_has_no_format(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="no model file format"):
        write_model_file(tmp_path / "x", object(), PROVENANCE)  # type: ignore[arg-type]


def test_a_lora_body_is_written_as_the_delta_reader_reads_it(tmp_path: Path) -> None:
    """The encoder delta's and the cross-encoder's body: float16 factors, the header its
    reader checks, the provenance; a LoRA file's comment and cv only when given."""
    from spider.learn.model_file import LoraBody
    from spider.retrieve.delta import DELTA_KIND, DELTA_SCHEMA, read_delta, weights_fingerprint
    from spider.retrieve.dense import BUNDLED_MODEL_ID, bundled_model_path

    base = bundled_model_path()
    rng = np.random.default_rng(0)
    name = "encoder.layer.0.attention.self.query.weight"
    a, b = rng.normal(size=(2, 384)), rng.normal(size=(384, 2))
    header = {
        "schema": DELTA_SCHEMA, "kind": DELTA_KIND, "base": BUNDLED_MODEL_ID,
        "base_fingerprint": weights_fingerprint(base), "rank": 2, "alpha": 4.0,
    }  # fmt: skip
    plain = Provenance(command="spider train delta ...", comment="", cv={}, extra={"curve": []})
    path = write_model_file(tmp_path / "d.npz", LoraBody(header, {name: (a, b)}), plain)
    delta = read_delta(path, base)
    assert delta.rank == 2 and delta.alpha == 4.0 and delta.command == plain.command
    assert delta.meta["targets"] == [name] and delta.meta["curve"] == []
    assert "comment" not in delta.meta and "cv" not in delta.meta
    np.testing.assert_array_equal(delta.factors[name][0], a.astype(np.float16))
    np.testing.assert_array_equal(delta.factors[name][1], b.astype(np.float16))
    again = write_model_file(tmp_path / "e.npz", LoraBody(header, {name: (a, b)}), PROVENANCE)
    assert read_delta(again, base).meta["cv"] == {"instances": 3, "MRR@20": 0.5}
