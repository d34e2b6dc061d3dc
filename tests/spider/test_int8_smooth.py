"""The int8 graph's preparation: smoothing and the split feed-forward blocks change no fp32
output, the quantizer leaves exactly the wide channels' MatMuls in fp32, and the int8
documents stay close to fp32 while queries run in fp32."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from spider.retrieve.dense import Encoder, bundled_model_path
from spider.retrieve.int8_smooth import (
    FP32_CHANNELS,
    FP32_NODE_PART,
    SmoothedLinear,
    SplitFeedForward,
    calibration_texts,
    prepare_for_int8,
)
from spider.retrieve.onnx_encoder import export_onnx, onnx_paths

CODE_TEXTS = [
    "requests/models.py\nResponse.iter_content\ndef iter_content(self, chunk_size=1):\n"
    "    return self.raw.read(chunk_size)",
    "src/lib.rs\nBytes::slice\npub fn slice(&self, range: impl RangeBounds<usize>) -> Self {\n"
    "    let len = self.len();\n    assert!(begin <= end);\n}",
    "lib/router/index.js\nproto.handle\nproto.handle = function handle(req, res, out) {\n"
    "  var self = this;\n  next();\n}",
    "sympy/core/expr.py\nExpr.as_coeff_Mul\ndef as_coeff_Mul(self, rational=False):\n"
    "    return S.One, self",
    "a short one",
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache directory holding the bundled model's ONNX graphs (exported once)."""
    root = tmp_path_factory.mktemp("onnx")
    export_onnx(Path(bundled_model_path()), root)
    return root


def _hidden(model: torch.nn.Module, tokenizer: Any, texts: list[str]) -> torch.Tensor:
    batch = tokenizer(texts, truncation=True, max_length=128, padding=True, return_tensors="pt")
    with torch.no_grad():
        out: torch.Tensor = model(**batch).last_hidden_state
    return out


def test_calibration_texts_ship_with_the_package() -> None:
    texts = calibration_texts()
    assert len(texts) == 256 and all(isinstance(t, str) and t for t in texts)


def test_preparing_for_int8_changes_no_fp32_output() -> None:
    path = bundled_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    plain = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    before = _hidden(plain, tokenizer, CODE_TEXTS)
    prepared = prepare_for_int8(plain, tokenizer)
    after = _hidden(prepared, tokenizer, CODE_TEXTS)
    assert torch.allclose(before, after, atol=2e-4), (before - after).abs().max()
    smoothed = [m for m in prepared.modules() if isinstance(m, SmoothedLinear)]
    split = [m for m in prepared.modules() if isinstance(m, SplitFeedForward)]
    assert len(smoothed) == 6 * 4  # query, key, value and the attention output per layer
    assert len(split) == 6 and all(m.down_fp32.in_features == FP32_CHANNELS for m in split)
    assert all(m.inverse is not None for m in split)  # the up-projection's input smoothed too
    # the smoothing did something: the divisors are not all one
    assert any(not torch.allclose(m.inverse, torch.ones_like(m.inverse)) for m in smoothed)


def test_the_quantizer_leaves_only_the_wide_channels_in_fp32(exported: Path) -> None:
    _, int8 = onnx_paths(Path(bundled_model_path()), exported)
    graph = onnx.load(str(int8), load_external_data=False).graph
    fp32_matmuls = [n.name for n in graph.node if n.op_type == "MatMul"]
    weights = {i.name for i in graph.initializer}
    # attention's own products (Q K^T and the weights times V) take no weight: never quantized
    with_weight = [
        n.name for n in graph.node if n.op_type == "MatMul" and any(i in weights for i in n.input)
    ]
    assert with_weight and all(FP32_NODE_PART in name for name in with_weight)
    assert len(with_weight) == 6, with_weight
    assert len(fp32_matmuls) == 6 + 2 * 6
    quantized = [n for n in graph.node if n.op_type in ("MatMulInteger", "DynamicQuantizeMatMul")]
    assert len(quantized) == 6 * 7  # q, k, v, attention out, both up halves, down per layer


def test_int8_documents_stay_close_to_fp32_and_queries_run_in_fp32(exported: Path) -> None:
    fp32 = Encoder("", 128, None, backend="onnx", export_dir=exported)
    int8 = Encoder("", 128, None, backend="onnx-int8", export_dir=exported)
    a, b = fp32.encode(CODE_TEXTS), int8.encode(CODE_TEXTS)
    cos = (a * b).sum(axis=1)
    assert cos.min() > 0.995 and not np.array_equal(a, b), cos
    assert int8.query_backend() == "onnx"
    q = "Response.iter_content hangs when the stream is closed"
    assert np.array_equal(int8.encode_query(q), fp32.encode_query(q))
