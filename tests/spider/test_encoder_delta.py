"""The tuned encoder's delta: reading and checking the file, merging it into the bundled
weights, every backend embedding with the merged model, cache keys that keep the tuned
vectors apart, a ranking that follows the weights, and the setting that names the file."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError
from safetensors import safe_open
from safetensors.numpy import load_file

from spider.errors import EncoderDeltaError, ModelLoadError
from spider.index import _vectors_key, build_index
from spider.learn.excluded import excluded_repos
from spider.localize import locate
from spider.models import Issue
from spider.retrieve import delta as delta_module
from spider.retrieve.delta import (
    REGENERATE,
    EncoderDelta,
    check_base,
    read_delta,
    tuned_model_dir,
    weights_fingerprint,
)
from spider.retrieve.dense import (
    BACKENDS,
    Encoder,
    bundled_model_path,
    encoder_model_id,
    settings_model_id,
)
from spider.retrieve.first_stage import first_stage
from spider.settings import EngineSettings
from spider.source import DirectorySource
from tests.spider.shop import write_shop

BASE = Path(bundled_model_path())
TARGETS = (
    "encoder.layer.0.attention.self.query.weight",
    "encoder.layer.2.attention.self.value.weight",
    "encoder.layer.3.intermediate.dense.weight",
    "encoder.layer.5.output.dense.weight",
)
COMMAND = "spider train delta --pairs TRAIN/pairs --work TRAIN/delta"
TEXTS = [
    "shop/cart.py\nCart.total\ndef total(self):\n    return apply_discount(subtotal)",
    "the discount is applied twice when the cart total is above 100",
    "a short one",
]
SHOP_ISSUE = Issue(
    title="Cart.total applies the discount wrongly",
    body="Adding a negative quantity of apples gives a negative price after the discount.",
)


def _shapes() -> dict[str, tuple[int, ...]]:
    with safe_open(str(BASE / "model.safetensors"), framework="numpy") as f:
        return {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118


def delta_arrays(
    *,
    seed: int = 0,
    rank: int = 4,
    alpha: float = 8.0,
    std: float = 0.05,
    targets: tuple[str, ...] = TARGETS,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, np.ndarray]:
    """A delta file's arrays: random factors (fixed seed) for real tensors of the bundled
    model, its fingerprint, and ``meta`` on top of the usual fields."""
    shapes = _shapes()
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for i, target in enumerate(targets):
        out, inn = shapes[target.removeprefix("bert.").removeprefix("0.auto_model.")]
        dtype = np.float16 if i % 2 else np.float32  # the trainer may write either
        arrays[target + ".lora_A"] = rng.normal(0, std, (rank, inn)).astype(dtype)
        arrays[target + ".lora_B"] = rng.normal(0, std, (out, rank)).astype(dtype)
    body = {
        "schema": 1,
        "kind": "encoder-delta",
        "base": "sentence-transformers/all-MiniLM-L6-v2",
        "base_fingerprint": weights_fingerprint(BASE),
        "rank": rank,
        "alpha": alpha,
        "targets": list(targets),
        "command": COMMAND,
        "metrics": {"R@20": 0.5},
    }
    arrays["meta"] = np.array(json.dumps({**body, **(meta or {})}))
    return arrays


def write_delta(path: Path, arrays: Mapping[str, np.ndarray] | None = None, **kw: Any) -> Path:
    """Write a delta file (``arrays``, or :func:`delta_arrays` of ``kw``) at ``path``."""
    np.savez(path, **(arrays if arrays is not None else delta_arrays(**kw)))
    return path


def refused(path: Path, *needles: str) -> str:
    """``read_delta(path)`` against the bundled weights fails; its message names the file
    and each of ``needles``."""
    with pytest.raises(EncoderDeltaError) as info:
        read_delta(path, BASE)
    message = str(info.value)
    assert str(path) in message, message
    for needle in needles:
        assert needle in message, message
    return message


# --- reading and checking --------------------------------------------------------------


def test_a_written_delta_reads_back(tmp_path: Path) -> None:
    delta = read_delta(write_delta(tmp_path / "d.npz"), BASE)
    assert (delta.rank, delta.alpha, delta.command) == (4, 8.0, COMMAND)
    assert set(delta.factors) == set(TARGETS) and len(delta.digest) == 12
    assert all(a.dtype == b.dtype == np.float32 for a, b in delta.factors.values())
    compressed = tmp_path / "c.npz"
    np.savez_compressed(compressed, **delta_arrays())
    again = read_delta(compressed, BASE)
    assert again.digest != delta.digest  # another file's bytes ...
    assert all(
        np.array_equal(again.factors[t][0], delta.factors[t][0]) for t in TARGETS
    )  # ... the same factors


@pytest.mark.parametrize(
    ("meta", "needle"),
    [
        ({"kind": "query-adapter"}, "'query-adapter'"),
        ({"schema": 2}, "schema 2"),
        ({"rank": 0}, "rank 0"),
        ({"alpha": float("nan")}, "alpha"),
        ({"targets": []}, "targets"),
    ],
)
def test_a_malformed_meta_is_refused_with_its_regenerate_command(
    tmp_path: Path, meta: dict[str, Any], needle: str
) -> None:
    path = write_delta(tmp_path / "d.npz", meta=meta)
    refused(path, needle, COMMAND)


def test_a_file_without_its_command_names_the_trainer(tmp_path: Path) -> None:
    arrays = delta_arrays(meta={"kind": "other"})
    meta = json.loads(str(arrays["meta"]))
    del meta["command"]
    arrays["meta"] = np.array(json.dumps(meta))
    refused(write_delta(tmp_path / "d.npz", arrays), f"`{REGENERATE}`")
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip archive")
    refused(garbage, REGENERATE)


def test_shapes_that_do_not_fit_are_refused(tmp_path: Path) -> None:
    arrays = delta_arrays()
    a = TARGETS[0] + ".lora_A"
    arrays[a] = arrays[a][:3]  # 3 rows, rank 4
    refused(write_delta(tmp_path / "rank.npz", arrays), TARGETS[0], "rank is 4")
    arrays = delta_arrays()
    b = TARGETS[1] + ".lora_B"
    arrays[b] = np.zeros((100, 4), dtype=np.float32)  # B @ A is 100 x 384, the tensor 384 x 384
    refused(write_delta(tmp_path / "out.npz", arrays), TARGETS[1], "100x384", "384x384")
    arrays = delta_arrays()
    del arrays[TARGETS[2] + ".lora_B"]
    refused(write_delta(tmp_path / "missing.npz", arrays), f"{TARGETS[2]}.lora_B")


def test_non_finite_factors_are_refused(tmp_path: Path) -> None:
    arrays = delta_arrays()
    b = TARGETS[3] + ".lora_B"
    arrays[b] = arrays[b].copy()
    arrays[b][0, 0] = np.nan
    refused(write_delta(tmp_path / "d.npz", arrays), "non-finite", COMMAND)


def test_a_target_the_model_lacks_is_refused(tmp_path: Path) -> None:
    unknown = "encoder.layer.9.attention.self.query.weight"  # MiniLM-L6 has layers 0-5
    arrays = delta_arrays(targets=(TARGETS[0],))
    arrays[unknown + ".lora_A"] = arrays[TARGETS[0] + ".lora_A"]
    arrays[unknown + ".lora_B"] = arrays[TARGETS[0] + ".lora_B"]
    meta = json.loads(str(arrays["meta"]))
    stray = write_delta(tmp_path / "stray.npz", arrays)  # factors of an unlisted target
    refused(stray, "belong to no listed target")
    arrays["meta"] = np.array(json.dumps({**meta, "targets": [TARGETS[0], unknown]}))
    refused(write_delta(tmp_path / "d.npz", arrays), unknown, COMMAND)


def test_prefixed_target_names_resolve_to_the_bundled_tensors(tmp_path: Path) -> None:
    targets = ("bert." + TARGETS[0], "0.auto_model." + TARGETS[1])
    delta = read_delta(write_delta(tmp_path / "d.npz", targets=targets), BASE)
    assert delta.resolve(_shapes(), "the base") == dict(zip(targets, TARGETS[:2], strict=True))


def test_a_delta_for_other_base_weights_is_refused(tmp_path: Path) -> None:
    path = write_delta(tmp_path / "d.npz", meta={"base_fingerprint": "0123456789abcdef"})
    delta = read_delta(path, BASE)  # the file itself is well-formed
    with pytest.raises(EncoderDeltaError) as info:
        check_base(delta, BASE)
    message = str(info.value)
    for needle in ("0123456789abcdef", weights_fingerprint(BASE), COMMAND, str(path)):
        assert needle in message, message
    with pytest.raises(EncoderDeltaError, match="0123456789abcdef"):
        tuned_model_dir(delta, BASE, tmp_path / "export")
    assert not (tmp_path / "export" / "models").exists() or not any(
        (tmp_path / "export" / "models").iterdir()
    )


def test_the_fingerprint_is_the_weights_sha256(tmp_path: Path) -> None:
    import hashlib

    digest = hashlib.sha256((BASE / "model.safetensors").read_bytes()).hexdigest()
    assert weights_fingerprint(BASE) == digest[:16]
    with pytest.raises(ModelLoadError, match=r"model\.safetensors"):
        weights_fingerprint(tmp_path)


# --- merging ---------------------------------------------------------------------------


def test_the_tuned_directory_holds_the_merged_weights_and_the_rest(tmp_path: Path) -> None:
    delta = read_delta(write_delta(tmp_path / "d.npz", seed=3), BASE)
    tuned = tuned_model_dir(delta, BASE, tmp_path / "export")
    assert tuned == (tmp_path / "export" / "models" / f"model-delta-{delta.digest}").resolve()
    assert tuned_model_dir(delta, str(BASE), str(tmp_path / "export")) == tuned  # once
    base_files = {p.relative_to(BASE) for p in BASE.rglob("*") if p.is_file()}
    tuned_files = {p.relative_to(tuned) for p in tuned.rglob("*") if p.is_file()}
    assert tuned_files == base_files | {Path("encoder_delta.json")}
    for rel in base_files - {Path("model.safetensors")}:
        assert (tuned / rel).read_bytes() == (BASE / rel).read_bytes(), rel
    assert json.loads((tuned / "encoder_delta.json").read_text())["digest"] == delta.digest

    base = load_file(str(BASE / "model.safetensors"))
    merged = load_file(str(tuned / "model.safetensors"))
    assert merged.keys() == base.keys()
    arrays = delta_arrays(seed=3)
    name = TARGETS[1]  # float16 factors in the file
    a = arrays[name + ".lora_A"].astype(np.float32)
    b = arrays[name + ".lora_B"].astype(np.float32)
    expected = base[name] + np.float32(8.0 / 4) * (b @ a)
    assert merged[name].dtype == np.float32
    np.testing.assert_allclose(merged[name], expected, rtol=1e-6, atol=1e-7)
    assert not np.array_equal(merged[name], base[name])
    for key in base.keys() - set(TARGETS):
        assert merged[key].dtype == base[key].dtype
        assert merged[key].tobytes() == base[key].tobytes(), key
    with safe_open(str(tuned / "model.safetensors"), framework="numpy") as f:
        assert (f.metadata() or {}).get("format") == "pt"


def test_a_tuned_directory_made_elsewhere_is_reused(tmp_path: Path) -> None:
    """A second process (here: the same bytes read from another path, so no in-process
    cache applies) finds the directory the first one renamed into place and writes nothing."""
    path = write_delta(tmp_path / "d.npz", seed=4)
    first = tuned_model_dir(read_delta(path, BASE), BASE, tmp_path / "export")
    mtime = (first / "model.safetensors").stat().st_mtime_ns
    copy = tmp_path / "copy.npz"
    copy.write_bytes(path.read_bytes())
    assert tuned_model_dir(read_delta(copy, BASE), BASE, tmp_path / "export") == first
    assert (first / "model.safetensors").stat().st_mtime_ns == mtime
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no temporary left


# --- every backend, the cache keys, a ranking --------------------------------------------


@dataclass
class Tuned:
    delta: EncoderDelta
    path: Path
    export: Path
    bundled: dict[str, np.ndarray]  # backend -> vectors of TEXTS with the bundled model
    tuned: dict[str, np.ndarray]  # backend -> vectors of TEXTS with the delta


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Tuned:
    """One delta, its merged model and ONNX export (under a private folder), and the
    vectors of :data:`TEXTS` from each backend with and without it."""
    root = tmp_path_factory.mktemp("delta")
    path = write_delta(root / "tuned.npz", seed=1, alpha=16.0)
    delta = read_delta(path, BASE)
    export = root / "export"  # both models' ONNX graphs, private to this module
    bundled, tuned_vecs = {}, {}
    for backend in BACKENDS:
        plain = Encoder("", 128, None, backend=backend, export_dir=export)
        bundled[backend] = plain.encode(TEXTS)
        enc = Encoder("", 128, None, backend=backend, export_dir=export, delta=delta)
        tuned_vecs[backend] = enc.encode(TEXTS)
    return Tuned(delta, path, export, bundled, tuned_vecs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_embeds_with_the_tuned_weights(tuned: Tuned, backend: str) -> None:
    plain, mine = tuned.bundled[backend], tuned.tuned[backend]
    assert mine.shape == plain.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-3)
    cos = (plain * mine).sum(axis=1)
    assert cos.max() < 0.999, cos  # every text moved, far beyond any backend's own noise


def test_torch_and_onnx_agree_on_the_tuned_vectors(tuned: Tuned) -> None:
    cos = (tuned.tuned["torch"] * tuned.tuned["onnx"]).sum(axis=1)
    assert cos.min() > 0.9999, cos
    assert (tuned.tuned["torch"] * tuned.tuned["torch-bf16"]).sum(axis=1).min() > 0.999
    assert (tuned.tuned["onnx"] * tuned.tuned["onnx-int8"]).sum(axis=1).min() > 0.95
    # the ONNX graphs were exported from the tuned directory, into the private folder
    graphs = [p.name for p in (tuned.export / "models").iterdir()]
    assert any(g.startswith(f"model-delta-{tuned.delta.digest}-") for g in graphs), graphs


def test_a_bf16_encoder_embeds_its_tuned_queries_through_onnx(tuned: Tuned) -> None:
    enc = Encoder("", 128, None, backend="torch-bf16", export_dir=tuned.export, delta=tuned.delta)
    query = enc.encode_queries(TEXTS[1:2])[0]
    assert np.allclose(query, tuned.tuned["onnx"][1], atol=1e-6)


def test_cache_keys_carry_the_delta_and_the_bundled_ones_stay(tuned: Tuned, tmp_path: Path) -> None:
    assert encoder_model_id("", 128) == "sentence-transformers/all-MiniLM-L6-v2@128"
    assert encoder_model_id("", 128, "torch-bf16") == (
        "sentence-transformers/all-MiniLM-L6-v2@128+torch-bf16"
    )
    assert encoder_model_id("", 128, "onnx") == "sentence-transformers/all-MiniLM-L6-v2@128+onnx"
    assert encoder_model_id("", 128, "onnx-int8") == (
        "sentence-transformers/all-MiniLM-L6-v2@128+onnx-int8:smooth50-ffn8-eager"
    )
    digest = tuned.delta.digest
    assert encoder_model_id("", 128, "torch", digest) == (
        f"sentence-transformers/all-MiniLM-L6-v2+delta:{digest}@128"
    )
    other = read_delta(write_delta(tmp_path / "other.npz", seed=2), BASE)
    for backend in BACKENDS:
        ids = {
            Encoder("", 128, None, backend=backend, delta=d).model_id
            for d in (None, tuned.delta, other)
        }
        assert len(ids) == 3, ids
        assert Encoder("", 128, None, backend=backend).model_id == encoder_model_id(
            "", 128, backend
        )

    plain = EngineSettings(cache_dir=tmp_path, encoder="onnx")
    with_delta = plain.model_copy(update={"encoder_delta": str(tuned.path)})
    with_other = plain.model_copy(update={"encoder_delta": str(other.path)})
    assert settings_model_id(plain) == encoder_model_id("", 128, "onnx")
    assert settings_model_id(with_delta) == encoder_model_id("", 128, "onnx", digest)
    keys = {_vectors_key("c0ffee", s, ["a", "b"]) for s in (plain, with_delta, with_other)}
    assert len(keys) == 3
    none = plain.model_copy(update={"encoder_delta": "none"})
    assert _vectors_key("c0ffee", none, ["a", "b"]) == _vectors_key("c0ffee", plain, ["a", "b"])


def test_the_ranking_follows_the_model_file(
    tuned: Tuned, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The same index ranks differently with a strong delta: the dense scores and order
    come from the tuned weights, and the cache never hands it the bundled vectors."""
    root = write_shop(tmp_path_factory.mktemp("shop"))
    cache = tmp_path_factory.mktemp("cache")
    strong = write_delta(tmp_path_factory.mktemp("strong") / "strong.npz", seed=7, alpha=400.0)
    plain = EngineSettings(
        cache_dir=cache, onnx_dir=tuned.export, encoder="onnx", first_stage="dense"
    )
    mine = plain.model_copy(update={"encoder_delta": str(strong)})
    before = build_index(DirectorySource(root), plain)
    after = build_index(DirectorySource(root), mine)
    n = len(before.function_ids)
    assert before.stats["embedded"] == after.stats["embedded"] == n  # nothing shared
    assert after.function_ids == before.function_ids
    fs_before = first_stage(before, SHOP_ISSUE, plain)
    fs_after = first_stage(after, SHOP_ISSUE, mine)
    assert not np.allclose(fs_before.scores, fs_after.scores, atol=1e-3)
    assert list(fs_before.order) != list(fs_after.order)
    again = first_stage(build_index(DirectorySource(root), mine), SHOP_ISSUE, mine)
    assert np.array_equal(again.scores, fs_after.scores)  # deterministic, from the cache
    assert list(again.order) == list(fs_after.order)

    loc = locate(after, SHOP_ISSUE, mine)
    digest = after.encoder().delta.digest  # type: ignore[union-attr]
    assert loc.settings.encoder_delta == digest
    assert loc.settings.to_dict()["encoder_delta"] == digest
    assert f"delta {digest}" in loc.method()
    plain_loc = locate(before, SHOP_ISSUE, plain)
    assert "encoder_delta" not in plain_loc.settings.to_dict()
    assert "delta" not in plain_loc.method()


def test_model_export_exports_the_tuned_model(tuned: Tuned, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from spider.cli import app

    env = {
        "SPIDER_CACHE_DIR": str(tmp_path),
        "SPIDER_ONNX_DIR": str(tuned.export),
        "SPIDER_ENCODER_DELTA": str(tuned.path),
    }
    done = CliRunner().invoke(app, ["model", "export"], env=env)
    assert done.exit_code == 0, done.output
    assert f"models/model-delta-{tuned.delta.digest}-" in done.output
    env["SPIDER_ENCODER_DELTA"] = str(tmp_path / "missing.npz")
    done = CliRunner().invoke(app, ["model", "export"], env=env)
    assert done.exit_code != 0 and REGENERATE in done.output


# --- the setting -------------------------------------------------------------------------


def test_bundled_without_the_shipped_file_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = tmp_path / "encoder_delta.npz"
    monkeypatch.setattr(delta_module, "DELTA_FILE", shipped)
    monkeypatch.setenv("SPIDER_ENCODER_DELTA", "bundled")
    settings = EngineSettings(cache_dir=tmp_path)
    assert settings.encoder_delta == "bundled"
    with pytest.raises(EncoderDeltaError) as info:
        Encoder.from_settings(settings, None)
    assert str(shipped) in str(info.value) and REGENERATE in str(info.value)
    with pytest.raises(EncoderDeltaError, match=r"nowhere\.npz"):
        settings_model_id(
            settings.model_copy(update={"encoder_delta": str(tmp_path / "nowhere.npz")})
        )
    write_delta(shipped)
    enc = Encoder.from_settings(settings, None)
    assert enc.delta is not None and enc.delta.path == shipped
    assert f"+delta:{enc.delta.digest}@" in enc.model_id


def test_a_delta_with_a_custom_model_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPIDER_MODEL", "sentence-transformers/all-mpnet-base-v2")
    monkeypatch.setenv("SPIDER_ENCODER_DELTA", str(write_delta(tmp_path / "d.npz")))
    with pytest.raises(ValidationError, match="tunes the bundled model"):
        EngineSettings()
    monkeypatch.setenv("SPIDER_ENCODER_DELTA", "none")
    assert EngineSettings().model == "sentence-transformers/all-mpnet-base-v2"
    delta = read_delta(tmp_path / "d.npz", BASE)
    with pytest.raises(ModelLoadError, match="bundled model"):
        Encoder("sentence-transformers/all-mpnet-base-v2", 128, None, delta=delta)


def test_no_delta_reads_no_file(tmp_path: Path) -> None:
    for spec in ("", "none", "None", " "):
        settings = EngineSettings(cache_dir=tmp_path, encoder_delta=spec, encoder="onnx")
        assert Encoder.from_settings(settings, None).delta is None
        assert settings_model_id(settings) == "sentence-transformers/all-MiniLM-L6-v2@128+onnx"


def test_the_shipped_delta_fits_the_installed_weights_and_says_what_made_it() -> None:
    from spider.retrieve.delta import DELTA_FILE

    delta = read_delta(DELTA_FILE, BASE)
    check_base(delta, BASE)
    assert delta.meta["command"].startswith("spider train delta ")
    assert delta.meta["trained_on"]["pairs"]["code-text"] > 10_000
    assert not {r.lower() for r in delta.meta["trained_on"]["repositories"]} & excluded_repos()
    assert DELTA_FILE.stat().st_size < 10_000_000


def test_a_delta_with_the_query_adapter_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPIDER_QUERY_ADAPTER", "bundled")
    monkeypatch.setenv("SPIDER_ENCODER_DELTA", "bundled")
    with pytest.raises(ValidationError, match="maps the untuned model's query vectors"):
        EngineSettings()
    monkeypatch.setenv("SPIDER_ENCODER_DELTA", "none")
    assert EngineSettings().query_adapter == "bundled"
