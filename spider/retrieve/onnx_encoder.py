"""The bi-encoder through ONNX Runtime and ``tokenizers``: no torch on the query path.

The ONNX graph is exported once from the bundled (or any local sentence-transformers)
weights into the cache directory (``spider model export`` or on first use; the export is
the only step that imports torch), then exported once more prepared for int8
(``int8_smooth``) and quantized by ONNX Runtime's dynamic quantization. Inference
reproduces sentence-transformers' all-MiniLM-L6-v2 pipeline: the model's own
``tokenizer.json`` truncated at ``max_seq_length``, the transformer, mean pooling over the
attention mask, L2 normalisation.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from spider.cpu import usable_cores
from spider.errors import ModelLoadError

log = logging.getLogger(__name__)

EXPORT_VERSION = "5"  # bump when an exported graph (inputs, outputs, opset, int8) changes
# Attention is traced through transformers' "eager" implementation: the SDPA one exports a
# NaN guard (IsNaN + Where) and a split scaling per layer, elementwise passes over every
# attention matrix. A full fp32 index of sympy took 237 s against 291 s (1.23x; 1.15-1.31x
# on 1,024 of its texts, docs/benchmark.md), the vectors within 1.3e-7 of the SDPA graph's:
# cached fp32 vectors of either export stay valid (the cache key does not name it).
ATTENTION = "eager"
# names the quantization (and the graph quantized) in cache keys: change it with the scheme
# of spider/retrieve/int8_smooth.py or with ATTENTION
INT8_SCHEME = "smooth50-ffn8-eager"
OPSET = 17  # every op MiniLM needs; supported by the ONNX Runtime versions we allow
ONNX_BACKENDS = ("onnx", "onnx-int8")
# int8 weights with per-channel scales on every MatMul of a graph prepared for it
# (int8_smooth.py: smoothed inputs, each feed-forward block's 8 widest channels apart in
# fp32); activation scales are per batch. Before, every FFN down-projection stayed fp32 and
# nothing was smoothed: cosine to fp32 0.9973 at 1.5-1.6x fp32, against 0.9989 at 2.1-2.2x.
INT8_OPTIONS: dict[str, Any] = {"per_channel": True, "op_types_to_quantize": ["MatMul"]}


def _int8_excluded(graph: Path, keep: str) -> list[str]:
    """MatMul nodes of ``graph`` whose names hold ``keep``: ``quantize_dynamic`` leaves
    them fp32."""
    import onnx

    model = onnx.load(str(graph), load_external_data=False)
    return [n.name for n in model.graph.node if n.op_type == "MatMul" and keep in n.name]


_EXPORT_LOCK = threading.Lock()


def model_fingerprint(model_dir: Path) -> str:
    """Hash of the weight, config and tokenizer files: an exported graph belongs to one."""
    h = hashlib.sha256(EXPORT_VERSION.encode())
    for name in ("config.json", "tokenizer.json", "model.safetensors", "pytorch_model.bin"):
        p = model_dir / name
        if p.exists():
            st = p.stat()
            h.update(f"{name}:{st.st_size}:{int(st.st_mtime)}".encode())
    return h.hexdigest()[:16]


def _check_layout(model_dir: Path) -> None:
    """Refuse models whose pooling the ONNX path does not reproduce (mean + normalise)."""
    pooling = model_dir / "1_Pooling" / "config.json"
    if not (model_dir / "tokenizer.json").exists():
        raise ModelLoadError(f"{model_dir}: no tokenizer.json, the ONNX encoder needs one")
    if pooling.exists():
        cfg = json.loads(pooling.read_text())
        if not cfg.get("pooling_mode_mean_tokens") or any(
            cfg.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens")
        ):
            raise ModelLoadError(f"{model_dir}: the ONNX encoder supports mean pooling only")


def onnx_paths(model_dir: Path, cache_dir: Path) -> tuple[Path, Path]:
    """Where the fp32 and int8 graphs of ``model_dir`` live in the cache."""
    d = cache_dir / "models" / f"{model_dir.name}-{model_fingerprint(model_dir)}"
    return d / "model.onnx", d / "model-int8.onnx"


def exported(model_dir: Path, cache_dir: Path) -> bool:
    """Whether both graphs of ``model_dir`` are in the cache (no export needed)."""
    return all(p.exists() for p in onnx_paths(model_dir, cache_dir))


def export_onnx(model_dir: Path, cache_dir: Path, *, force: bool = False) -> tuple[Path, Path]:
    """Export ``model_dir``'s transformer to ONNX (fp32) and an int8 graph of it, once.

    Needs torch and transformers (the only place the ONNX path does); files are written to
    a temporary name and renamed, so concurrent exporters never see a half-written graph.
    The int8 graph is quantized from a second export of the model prepared for it
    (:func:`spider.retrieve.int8_smooth.prepare_for_int8`), whose fp32 outputs equal the
    first's up to rounding; a model without BERT's layout is quantized as exported.
    """
    fp32, int8 = onnx_paths(model_dir, cache_dir)
    with _EXPORT_LOCK:
        if exported(model_dir, cache_dir) and not force:
            return fp32, int8
        _check_layout(model_dir)
        fp32.parent.mkdir(parents=True, exist_ok=True)
        try:
            from onnxruntime.quantization import QuantType, quantize_dynamic
            from transformers import AutoModel, AutoTokenizer
            from transformers.utils import logging as transformers_logging

            from spider.retrieve.int8_smooth import FP32_NODE_PART, preparable, prepare_for_int8
        except ImportError as exc:  # pragma: no cover - dependencies of the project
            raise ModelLoadError(
                f"exporting the ONNX encoder needs torch, transformers: {exc}"
            ) from exc
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        transformers_logging.disable_progress_bar()  # its "Loading weights" bar is noise here
        bert = AutoModel.from_pretrained(str(model_dir), attn_implementation=ATTENTION).eval()
        with tempfile.TemporaryDirectory(dir=fp32.parent) as tmp, _quiet():
            tmp_fp32 = Path(tmp) / "model.onnx"
            prepared = Path(tmp) / "model-prepared.onnx"
            tmp_int8 = Path(tmp) / "model-int8.onnx"
            _trace(bert, tmp_fp32)
            if preparable(bert):
                tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
                _trace(prepare_for_int8(bert, tokenizer), prepared)
            else:  # every MatMul quantized as it is (int8 vectors further from fp32)
                log.warning("%s is not BERT-shaped: its int8 graph is not smoothed", model_dir)
                prepared = tmp_fp32
            quantize_dynamic(
                str(prepared),
                str(tmp_int8),
                **INT8_OPTIONS,
                nodes_to_exclude=_int8_excluded(prepared, FP32_NODE_PART),
                weight_type=QuantType.QInt8,
            )
            os.replace(tmp_int8, int8)
            os.replace(tmp_fp32, fp32)
        log.info("exported ONNX encoder of %s to %s", model_dir, fp32.parent)
        return fp32, int8


def _trace(bert: Any, out: Path) -> None:
    """Write ``bert`` (a transformers model) to ``out`` as an ONNX graph with keyword
    inputs, one output and dynamic batch and token axes (torch is imported only here)."""
    import torch

    class Wrapped(torch.nn.Module):
        """Keyword inputs, one output: positional argument orders differ by version."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
            ).last_hidden_state

    ids = torch.ones((2, 16), dtype=torch.long)
    axes = {0: "batch", 1: "tokens"}
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with torch.no_grad():
        torch.onnx.export(
            Wrapped().eval(),
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(out),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={name: axes for name in [*names, "last_hidden_state"]},
            opset_version=OPSET,
            dynamo=False,
        )


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The exporter's tracer warnings and the quantizer's root-logger advice are noise to a
    user of ``spider locate``: silence them for the export only."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        root.setLevel(level)


# ONNX Runtime's worker threads spin while waiting for work by default: on a machine whose
# cores are shared (other jobs, a second worker) a spinning thread takes the CPU from the
# one it waits for. Off, fp32 embedded 1.2x faster on the 2-core machine of
# docs/benchmark.md under load (`spider bench speed`), the vectors bit for bit the same.
ALLOW_SPINNING = "0"


class OnnxModel:
    """Tokenizer + ONNX Runtime session: ``encode`` gives sentence-transformers' vectors
    (``spinning``: let idle worker threads spin, ONNX Runtime's default; see
    :data:`ALLOW_SPINNING`)."""

    def __init__(
        self, graph: Path, model_dir: Path, max_seq_length: int, *, spinning: bool = False
    ) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - dependencies of the project
            raise ModelLoadError(
                f"the ONNX encoder needs onnxruntime and tokenizers: {exc}"
            ) from exc
        self.max_seq_length = max_seq_length
        self._tokenizer_file = model_dir / "tokenizer.json"
        self._tokenizer_class = Tokenizer
        self._tokenizers: dict[int, Any] = {}
        self.tokenizer = self._tokenizer(max_seq_length)
        self.pad_id = self.tokenizer.token_to_id("[PAD]") or 0
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = usable_cores()
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        opts.add_session_config_entry(
            "session.intra_op.allow_spinning", "1" if spinning else ALLOW_SPINNING
        )
        self.session = ort.InferenceSession(
            str(graph), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self.session.get_inputs()}

    def _tokenizer(self, max_tokens: int) -> Any:
        """The model's tokenizer truncating at ``max_tokens`` (special tokens included), one
        per cap: the query cap and the documents' may differ."""
        tok = self._tokenizers.get(max_tokens)
        if tok is None:
            tok = self._tokenizer_class.from_file(str(self._tokenizer_file))
            tok.enable_truncation(max_length=max_tokens)
            tok.no_padding()  # each batch is padded to its own longest text (see _encode)
            self._tokenizers[max_tokens] = tok
        return tok

    def encode(
        self, texts: list[str], batch_size: int = 32, max_tokens: int | None = None
    ) -> np.ndarray:
        """Unit-norm float32 vectors, one row per text, each cut at ``max_tokens`` tokens
        (None: the model's ``max_seq_length``)."""
        return self._encode(texts, batch_size, max_tokens)

    def encode_pairs(self, pairs: list[tuple[str, str]], batch_size: int = 32) -> np.ndarray:
        """Unit-norm float32 vectors of text pairs (``[CLS] a [SEP] b [SEP]``, the second
        segment's type ids 1; at the token cap the longer text is cut first), one row each."""
        return self._encode(pairs, batch_size)

    def _encode(
        self, inputs: list[Any], batch_size: int, max_tokens: int | None = None
    ) -> np.ndarray:
        """Tokenize all ``inputs`` at once, then run them in batches of similar token
        counts (sorted by length: each batch is padded to its own longest, so almost no
        padding is computed; on sympy's functions batches in the callers' order of
        character length padded 11% more tokens), the rows put back in input order."""
        if not inputs:
            return np.zeros((0, 0), dtype=np.float32)
        enc = self._tokenizer(max_tokens or self.max_seq_length).encode_batch(inputs)
        order = sorted(range(len(enc)), key=lambda i: len(enc[i].ids))
        out = np.zeros((len(enc), 0), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            vecs = self._run([enc[i] for i in rows])
            if out.shape[1] == 0:
                out = np.zeros((len(enc), vecs.shape[1]), dtype=np.float32)
            out[rows] = vecs
        return out

    def _run(self, batch: list[Any]) -> np.ndarray:
        """Unit-norm mean-pooled vectors of one batch of encodings, padded on the right to
        its longest (what the tokenizer's own padding gives)."""
        width = max(len(e.ids) for e in batch)
        ids = np.full((len(batch), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        types = np.zeros((len(batch), width), dtype=np.int64)
        for r, e in enumerate(batch):
            n = len(e.ids)
            ids[r, :n], mask[r, :n], types[r, :n] = e.ids, e.attention_mask, e.type_ids
        feed: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = types
        hidden = self.session.run(None, feed)[0]
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        norm = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norm, 1e-12, None)).astype(np.float32)


# One session is made at a time: a caller that asks while another thread makes the same one
# (see :func:`preload_onnx_model`) waits for it instead of making a second.
_SESSION_LOCK = threading.Lock()


def load_onnx_model(model_dir: str, cache_dir: str, max_seq_length: int, backend: str) -> OnnxModel:
    """The ONNX model of ``model_dir`` for ``backend`` (exported on first use), once per
    process and graph folder (cache directories linking one export share one session)."""
    folder = onnx_paths(Path(model_dir), Path(cache_dir))[0].parent
    where = str(folder.resolve()) if folder.exists() else cache_dir
    with _SESSION_LOCK:
        return _load_onnx_model(model_dir, where, cache_dir, max_seq_length, backend)


def preload_onnx_model(
    model_dir: str, cache_dir: str, max_seq_length: int, backend: str
) -> threading.Thread | None:
    """Start making the session of an already exported graph in a thread and return it
    (None when there is no exported graph: exporting is left to the first real use). The
    thread is not a daemon: a process that ends sooner waits for it rather than tearing
    ONNX Runtime down under it.

    ONNX Runtime releases the GIL while it builds a session (0.1-0.2 s for MiniLM), so a
    new process that reads its index meanwhile has the session when its first query needs
    it. A failure here is only logged: the caller's own :func:`load_onnx_model` raises it."""
    if backend not in ONNX_BACKENDS or not exported(Path(model_dir), Path(cache_dir)):
        return None

    def run() -> None:
        try:
            load_onnx_model(model_dir, cache_dir, max_seq_length, backend)
        except Exception as exc:  # reported again where the model is used
            log.debug("preloading the ONNX encoder failed: %s", exc)

    thread = threading.Thread(target=run, name="spider-onnx-preload")
    thread.start()
    return thread


@lru_cache(maxsize=4)
def _load_onnx_model(
    model_dir: str, _where: str, cache_dir: str, max_seq_length: int, backend: str
) -> OnnxModel:
    if backend not in ONNX_BACKENDS:
        raise ModelLoadError(f"unknown ONNX backend {backend!r}")
    mdir = Path(model_dir)
    if not mdir.is_dir():
        raise ModelLoadError(f"the ONNX encoder needs a local model directory, not {model_dir!r}")
    fp32, int8 = onnx_paths(mdir, Path(cache_dir))
    if not exported(mdir, Path(cache_dir)):
        fp32, int8 = export_onnx(mdir, Path(cache_dir))
    try:
        return OnnxModel(int8 if backend == "onnx-int8" else fp32, mdir, max_seq_length)
    except ModelLoadError:
        raise
    except Exception as exc:  # onnxruntime raises its own types for a corrupt graph
        raise ModelLoadError(f"cannot load the ONNX encoder {fp32.parent}: {exc}") from exc
