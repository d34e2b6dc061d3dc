"""Prepare the transformer for int8: SmoothQuant scales and the FFN's widest channels apart.

ONNX Runtime's dynamic quantization gives every MatMul's input one int8 scale per batch, so
a few wide input channels coarsen the steps of all the others. Two changes, made on the
torch model before it is exported for quantization, keep that from costing accuracy:

- **Smoothing** (SmoothQuant, Xiao et al. 2023, alpha 0.5): the inputs of the query, key,
  value, attention-output and FFN up-projections are divided per channel by
  ``s = max|x|^alpha / max|w|^(1 - alpha)`` (measured on the calibration texts) and the
  weights' input rows multiplied by it: the same function in fp32, narrower inputs in int8.
- **The FFN down-projection's widest channels in fp32.** Its input (after GELU) is where
  smoothing moves the error into the weights instead; so the up-projection is split in two,
  and the ``FP32_CHANNELS`` input channels of the down-projection with the widest range
  (per layer) run through a small fp32 MatMul beside the int8 one over the rest. No copy of
  the activations is made: each half computes its own channels.

On 2,048 sympy function texts (2-core AMD EPYC, ONNX fp32 = 1.00x): the earlier scheme
(per-channel weights, every down-projection fp32) gave cosine 0.9973 to fp32 (minimum
0.9935) at 1.5-1.6x; every MatMul in int8 unprepared 0.9941 at 2.1-2.2x; this scheme
0.9989 (minimum 0.9974) at 2.1-2.2x, and an int8 vector moves less with its batch-mates
(cosine 0.9987 between batch 1 and batch 32, against 0.9964). docs/benchmark.md has the
figures and the development sets.

The calibration texts ship with the package (``int8_calibration.json.gz``: 256 functions of
this project's own code, 512 characters each), so a graph quantized on any machine is the
same; scales measured on Python's standard library gave the same cosine. Imports torch:
used only by :func:`spider.retrieve.onnx_encoder.export_onnx`.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import torch

ALPHA = 0.5
FP32_CHANNELS = 8  # per layer: 4, 8 and 32 gave cosine 0.9988-0.9990 on the sympy texts
FP32_NODE_PART = "down_fp32"  # names the MatMuls quantization must leave in fp32
CALIBRATION_FILE = Path(__file__).with_name("int8_calibration.json.gz")
CALIBRATION_BATCH = 32
CALIBRATION_TOKENS = 128
SMOOTHED = ("query", "key", "value", "attention.output.dense", "intermediate.dense")


def calibration_texts() -> list[str]:
    """The texts whose activations set the scales (shipped with the package)."""
    with gzip.open(CALIBRATION_FILE, "rt", encoding="utf-8") as fh:
        texts = json.load(fh)
    return [str(t) for t in texts]


class SmoothedLinear(torch.nn.Module):
    """``linear(x / s)`` with the weight's input rows multiplied by ``s``: the same values
    as ``linear`` in exact arithmetic, a narrower input for int8."""

    def __init__(self, linear: torch.nn.Linear, scale: torch.Tensor) -> None:
        super().__init__()
        self.inverse = torch.nn.Parameter((1.0 / scale).float(), requires_grad=False)
        self.linear = torch.nn.Linear(linear.in_features, linear.out_features)
        with torch.no_grad():
            self.linear.weight.copy_(linear.weight * scale[None, :])
            self.linear.bias.copy_(linear.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The wrapped projection of ``x``."""
        out: torch.Tensor = self.linear(x * self.inverse)
        return out


class SplitFeedForward(torch.nn.Module):
    """``down(act(up(x)))`` with the down-projection's ``wide`` input channels computed
    apart: ``down_fp32`` stays fp32, ``down_int8`` (and both up halves) are quantized."""

    def __init__(
        self, up: torch.nn.Module, down: torch.nn.Linear, act: Any, wide: torch.Tensor
    ) -> None:
        super().__init__()
        inner = up.linear if isinstance(up, SmoothedLinear) else up
        assert isinstance(inner, torch.nn.Linear)
        self.inverse = up.inverse if isinstance(up, SmoothedLinear) else None
        keep = torch.ones(inner.out_features, dtype=torch.bool)
        keep[wide] = False
        narrow = keep.nonzero().flatten()
        self.act = act
        self.up_int8 = torch.nn.Linear(inner.in_features, len(narrow))
        self.up_wide = torch.nn.Linear(inner.in_features, len(wide))
        self.down_int8 = torch.nn.Linear(len(narrow), down.out_features)
        self.down_fp32 = torch.nn.Linear(len(wide), down.out_features, bias=False)
        with torch.no_grad():
            self.up_int8.weight.copy_(inner.weight[narrow])
            self.up_int8.bias.copy_(inner.bias[narrow])
            self.up_wide.weight.copy_(inner.weight[wide])
            self.up_wide.bias.copy_(inner.bias[wide])
            self.down_int8.weight.copy_(down.weight[:, narrow])
            self.down_int8.bias.copy_(down.bias)
            self.down_fp32.weight.copy_(down.weight[:, wide])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The feed-forward block's output (before its residual and LayerNorm)."""
        if self.inverse is not None:
            x = x * self.inverse
        narrow = self.down_int8(self.act(self.up_int8(x)))
        out: torch.Tensor = narrow + self.down_fp32(self.act(self.up_wide(x)))
        return out


def input_ranges(bert: torch.nn.Module, tokenizer: Any, texts: list[str]) -> dict[str, Any]:
    """Per input channel, the largest absolute value each encoder-layer Linear sees on
    ``texts`` (batches of 32, cut at 128 tokens)."""
    ranges: dict[str, torch.Tensor] = {}
    hooks = []
    for name, module in bert.named_modules():
        if isinstance(module, torch.nn.Linear) and ".layer." in f".{name}":

            def hook(_m: Any, inputs: Any, _out: Any, name: str = name) -> None:
                x = inputs[0].detach().abs().reshape(-1, inputs[0].shape[-1]).amax(0)
                ranges[name] = torch.maximum(ranges[name], x) if name in ranges else x

            hooks.append(module.register_forward_hook(hook))
    try:
        with torch.no_grad():
            for start in range(0, len(texts), CALIBRATION_BATCH):
                batch = tokenizer(
                    texts[start : start + CALIBRATION_BATCH],
                    truncation=True,
                    max_length=CALIBRATION_TOKENS,
                    padding=True,
                    return_tensors="pt",
                )
                bert(**batch)
    finally:
        for h in hooks:
            h.remove()
    return ranges


def preparable(bert: torch.nn.Module) -> bool:
    """Whether ``bert`` has BERT's layout (what :func:`prepare_for_int8` rewrites): MiniLM,
    the cross-encoder and other BERT-family models do; others are quantized unprepared."""
    try:
        layers: Any = bert.get_submodule("encoder.layer")
        return all(
            isinstance(layer.attention.self.query, torch.nn.Linear)
            and isinstance(layer.intermediate.dense, torch.nn.Linear)
            and isinstance(layer.output.dense, torch.nn.Linear)
            for layer in layers
        )
    except AttributeError:
        return False


def prepare_for_int8(bert: torch.nn.Module, tokenizer: Any) -> torch.nn.Module:
    """Rewrite ``bert`` (a transformers BertModel, in place) for dynamic int8: smoothed
    projections and split feed-forward blocks; returns it. Its fp32 outputs stay the same
    up to rounding."""
    ranges = input_ranges(bert, tokenizer, calibration_texts())
    weight_ranges = {
        name: module.weight.detach().abs().amax(0)
        for name, module in bert.named_modules()
        if isinstance(module, torch.nn.Linear)
    }
    for name, x_range in ranges.items():
        if not name.endswith(SMOOTHED):
            continue
        parent_name, attr = name.rsplit(".", 1)
        parent = bert.get_submodule(parent_name)
        if attr in ("query", "key", "value"):  # one input: one scale for the three
            w_range = torch.stack(
                [weight_ranges[f"{parent_name}.{a}"] for a in ("query", "key", "value")]
            ).amax(0)
        else:
            w_range = weight_ranges[name]
        scale = x_range.clamp(min=1e-5) ** ALPHA / w_range.clamp(min=1e-5) ** (1 - ALPHA)
        setattr(parent, attr, SmoothedLinear(getattr(parent, attr), scale.clamp(min=1e-5)))
    layers: Any = bert.get_submodule("encoder.layer")
    for i, layer in enumerate(layers):
        down_range = ranges[f"encoder.layer.{i}.output.dense"]
        wide = down_range.argsort(descending=True)[:FP32_CHANNELS].sort().values
        layer.output.dense = SplitFeedForward(
            layer.intermediate.dense,
            layer.output.dense,
            layer.intermediate.intermediate_act_fn,
            wide,
        )
        layer.intermediate = torch.nn.Identity()  # the split block computes the whole FFN
    return bert
