"""Which encoder ``auto`` picks from the CPU's flags."""

from __future__ import annotations

import os
from pathlib import Path

from spider.cpu import (
    bf16_is_faster,
    cpu_flags,
    cpu_summary,
    cpu_vendor,
    default_encoder,
    has_native_bf16,
    usable_cores,
)
from spider.settings import EngineSettings, onnx_exportable

SAPPHIRE = frozenset({"avx2", "avx512f", "avx512_vnni", "amx_bf16", "amx_int8", "amx_tile"})
COOPER = frozenset({"avx2", "avx512f", "avx512_bf16"})
SKYLAKE = frozenset({"avx2", "avx512f", "avx512_vnni"})
ZEN4 = frozenset({"avx2", "avx512f", "avx512_vnni", "avx512_bf16"})
INTEL, AMD = "GenuineIntel", "AuthenticAMD"


def test_native_bf16_needs_amx_or_avx512_bf16() -> None:
    assert has_native_bf16(SAPPHIRE) and has_native_bf16(COOPER)
    assert not has_native_bf16(SKYLAKE) and not has_native_bf16(frozenset())


def test_bf16_is_faster_with_amx_or_amds_avx512_bf16() -> None:
    assert bf16_is_faster(SAPPHIRE, INTEL) and bf16_is_faster(SAPPHIRE, AMD)
    assert bf16_is_faster(ZEN4, AMD)  # 1.3-1.6x ONNX fp32
    assert not bf16_is_faster(COOPER, INTEL)  # an Intel Xeon without AMX: 0.6-0.7x
    assert not bf16_is_faster(SKYLAKE, INTEL) and not bf16_is_faster(SKYLAKE, AMD)
    assert not bf16_is_faster(frozenset(), "")


def test_auto_is_bf16_documents_only_where_bf16_is_faster() -> None:
    assert default_encoder(SAPPHIRE, vendor=INTEL) == "torch-bf16"
    assert default_encoder(ZEN4, vendor=AMD) == "torch-bf16"
    assert default_encoder(COOPER, vendor=INTEL) == "onnx"
    assert default_encoder(SKYLAKE, vendor=INTEL) == "onnx"
    assert default_encoder(ZEN4, vendor=INTEL) == "onnx"  # never int8: it lowered MRR@20


def test_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: X\nflags\t\t: fpu avx2 amx_bf16\n\n"
                    "processor\t: 1\nflags\t\t: fpu\n")  # fmt: skip
    assert cpu_flags.__wrapped__(info) == frozenset({"fpu", "avx2", "amx_bf16"})
    assert cpu_flags.__wrapped__(tmp_path / "absent") == frozenset()
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t: avx2\n")
    assert cpu_vendor.__wrapped__(info) == AMD
    assert cpu_vendor.__wrapped__(tmp_path / "absent") == ""


def test_settings_resolve_auto_to_a_concrete_backend() -> None:
    assert EngineSettings(encoder="auto").encoder == default_encoder()
    assert EngineSettings().encoder in ("torch-bf16", "onnx")
    assert EngineSettings(encoder="onnx-int8").encoder == "onnx-int8"


def test_auto_never_picks_onnx_for_a_model_it_cannot_export(tmp_path: Path) -> None:
    assert default_encoder(SKYLAKE, onnx=False, vendor=INTEL) == "torch"
    assert default_encoder(COOPER, onnx=False, vendor=INTEL) == "torch"
    assert default_encoder(SAPPHIRE, onnx=False, vendor=INTEL) == "torch-bf16"  # queries: torch
    assert onnx_exportable("") and onnx_exportable(str(tmp_path))
    assert not onnx_exportable("sentence-transformers/all-mpnet-base-v2")
    hub = EngineSettings(model="sentence-transformers/all-mpnet-base-v2").encoder
    assert hub == default_encoder(onnx=False) and hub != "onnx"


def test_the_summary_names_the_model_and_what_sets_the_encoders_speed(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: AMD EPYC\n"
                    "flags\t\t: fpu avx2 avx512f avx512_bf16 avx512_vnni\n")  # fmt: skip
    assert cpu_summary(info) == "AMD EPYC (AVX-512 BF16, AVX-512 VNNI, AVX-512, AVX2)"
    info.write_text("model name\t: Xeon\nflags\t: avx2 avx512f amx_bf16 avx512_bf16\n")
    assert cpu_summary(info) == "Xeon (AMX, AVX-512 BF16, AVX-512, AVX2)"
    info.write_text("flags\t: fpu sse2\n")  # no model name, none of the vector features
    assert cpu_summary(info) == "unknown CPU"
    assert cpu_summary(tmp_path / "absent") == "unknown CPU"


def test_usable_cores_are_the_affinity_not_the_machine() -> None:
    assert usable_cores() == len(os.sched_getaffinity(0)) >= 1
