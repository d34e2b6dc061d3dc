"""What the CPU offers that changes how the encoder should run."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

# Flags of x86 CPUs that multiply bfloat16 natively (Intel AMX, AVX-512 BF16).
BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})
# Where bf16 documents (PyTorch autocast) embed faster than fp32: with AMX, 2.6-2.9x ONNX
# fp32; with AVX-512 BF16 alone, 1.3-1.6x on an AMD Zen 4 but 0.6-0.7x on an Intel Xeon
# (its bf16 matrix products no faster than fp32, the casts on top): docs/benchmark.md, "Speed".
AMX_FLAGS = frozenset({"amx_bf16"})
BF16_FAST_WITHOUT_AMX = frozenset({"AuthenticAMD"})
# What sets an encoder's speed, widest first, as a speed report names it.
VECTOR_FEATURES = (
    ("amx_bf16", "AMX"),
    ("avx512_bf16", "AVX-512 BF16"),
    ("avx512_vnni", "AVX-512 VNNI"),
    ("avx512f", "AVX-512"),
    ("avx2", "AVX2"),
)


def _cpuinfo_fields(cpuinfo: Path) -> dict[str, str]:
    """Each field's first value in ``cpuinfo`` (the first CPU's; empty: no such file)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def _flags(fields: dict[str, str]) -> frozenset[str]:
    return frozenset(fields.get("flags", "").split())


@lru_cache(maxsize=1)
def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The feature flags of the first CPU in ``cpuinfo`` (empty where there is no such file)."""
    return _flags(_cpuinfo_fields(cpuinfo))


@lru_cache(maxsize=1)
def cpu_vendor(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The first CPU's vendor as ``cpuinfo`` names it (``GenuineIntel``, ``AuthenticAMD``;
    empty where it says nothing)."""
    return _cpuinfo_fields(cpuinfo).get("vendor_id", "")


def cpu_summary(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name and the vector features that set an encoder's speed, e.g.
    ``AMD EPYC (AVX-512 BF16, AVX-512 VNNI, AVX-512, AVX2)``; ``unknown CPU`` where
    ``cpuinfo`` says nothing."""
    fields = _cpuinfo_fields(cpuinfo)  # read once, model and flags together
    flags = _flags(fields)
    features = ", ".join(label for flag, label in VECTOR_FEATURES if flag in flags)
    model = fields.get("model name") or "unknown CPU"
    return f"{model} ({features})" if features else model


def has_native_bf16(flags: frozenset[str] | None = None) -> bool:
    """Whether bf16 matrix products run natively on this CPU."""
    return bool(BF16_FLAGS & (cpu_flags() if flags is None else flags))


def bf16_is_faster(flags: frozenset[str] | None = None, vendor: str | None = None) -> bool:
    """Whether documents embed faster in bf16 than in fp32 on this CPU: with AMX, or with
    native bf16 on a vendor whose AVX-512 BF16 was measured faster (AMD)."""
    flags = cpu_flags() if flags is None else flags
    vendor = cpu_vendor() if vendor is None else vendor
    return bool(AMX_FLAGS & flags) or (has_native_bf16(flags) and vendor in BF16_FAST_WITHOUT_AMX)


def default_encoder(
    flags: frozenset[str] | None = None, *, onnx: bool = True, vendor: str | None = None
) -> str:
    """The encoder ``auto`` stands for: documents in bf16 where that is faster than fp32
    (:func:`bf16_is_faster`), else fp32 (through ONNX when ``onnx``: the model is a local
    directory the graph can be exported from; through torch otherwise). int8 documents
    are never chosen: they lowered a development set's MRR@20 (docs/benchmark.md)."""
    if bf16_is_faster(flags, vendor):
        return "torch-bf16"
    return "onnx" if onnx else "torch"


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the system has one), at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)
