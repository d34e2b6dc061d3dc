"""What the CPU offers that changes how the encoder should run."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

# Flags of x86 CPUs that multiply bfloat16 natively (Intel AMX, AVX-512 BF16): there,
# PyTorch's bf16 autocast embeds ~2.7x faster than fp32 (README, `spider bench speed`);
# elsewhere it is emulated and slower than fp32.
BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})


@lru_cache(maxsize=1)
def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The feature flags of the first CPU in ``cpuinfo`` (empty where there is no such file)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def has_native_bf16(flags: frozenset[str] | None = None) -> bool:
    """Whether bf16 matrix products run natively on this CPU."""
    return bool(BF16_FLAGS & (cpu_flags() if flags is None else flags))


def default_encoder(flags: frozenset[str] | None = None, *, onnx: bool = True) -> str:
    """The encoder ``auto`` stands for: documents in bf16 where the CPU multiplies it
    natively, else fp32 (through ONNX when ``onnx``: the model is a local directory the
    graph can be exported from; through torch otherwise)."""
    if has_native_bf16(flags):
        return "torch-bf16"
    return "onnx" if onnx else "torch"
