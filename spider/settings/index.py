"""The settings an :class:`~spider.index.Index` reads when it is built: the graph, the encoder,
history at inference and where vectors are kept. A query never changes them, so every
method of one benchmark run ranks one shared index, and the worker's index cache is keyed
by exactly these (:data:`INDEX_SETTINGS`)."""


from pathlib import Path
from typing import Annotated

from pydantic import Field, ValidationInfo, field_validator
from pydantic_settings import NoDecode

from spider.cpu import default_encoder
from spider.settings.choices import EncoderBackend
from spider.settings.concern import Concern
from spider.settings.excludes import DEFAULT_EXCLUDES, is_test_glob


def onnx_exportable(model: str) -> bool:
    """Whether the ONNX encoder can serve ``model``: the bundled one, or a local directory
    (a hub name would need a download, which the ONNX exporter never does)."""
    return not model or Path(model).is_dir()


class GraphSettings(Concern):
    """What the code graph holds: which files are parsed and how calls are linked (the
    graph's cache key)."""

    invokes_max_candidates: int = Field(
        3, ge=1, description="a call name matching more definitions than this is not linked"
    )
    max_file_bytes: int = Field(
        1_000_000, ge=1, description="source files above this size are skipped"
    )
    max_line_chars: int = Field(
        5_000, ge=80, description="files with a longer average line are treated as minified"
    )
    parse_timeout_s: float = Field(5.0, gt=0, description="per-file tree-sitter time budget")
    exclude_tests: bool = Field(
        True, description="leave test files and folders out of the graph (a fix is rarely "
        "to a test)"
    )
    exclude: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="extra glob exclusions"
    )
    include: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="if set, only paths matching these globs"
    )

    @field_validator("exclude", "include", mode="before")
    @classmethod
    def _globs(cls, v: object) -> object:
        if isinstance(v, str):
            return [g.strip() for g in v.split(",") if g.strip()]
        return v

    def exclusion_globs(self) -> list[str]:
        """The default exclusions plus the configured ones."""
        base = list(DEFAULT_EXCLUDES)
        if not self.exclude_tests:
            base = [g for g in base if not is_test_glob(g)]
        return base + list(self.exclude)


class EncoderSettings(Concern):
    """How functions are embedded: the model, its tuned weights and the backend."""

    model: str = Field("", description="sentence-transformers name or path; empty = bundled MiniLM")
    encoder_delta: str = Field(
        "",
        description="tuned weights of the bundled model, as a LoRA delta file (`spider train "
        "delta`; docs/learning.md): empty or none = the bundled model as is, "
        "bundled = spider/encoder_delta.npz, else the path of a delta file; every backend "
        "embeds with the merged weights and the cache keeps their vectors apart; needs the "
        "bundled model (model empty) and no query_adapter",
    )
    max_seq_length: int = Field(
        128, ge=32, le=8192, description="encoder token cap per query (MiniLM was trained at 128)"
    )
    document_seq_length: int = Field(
        128,
        ge=16,
        le=8192,
        description="encoder token cap per function text (path, name, source): an index "
        "costs about in proportion to it, and a lower cap lists worse (64: 1.66x faster on "
        "ONNX fp32, Lite dev Recall@20 lower; docs/benchmark.md); the cache keeps each cap's "
        "vectors apart",
    )
    embed_batch_size: int = Field(32, ge=1, description="functions embedded per batch")
    encoder: EncoderBackend = Field(
        "auto",
        description="how texts are embedded: torch (sentence-transformers, fp32), torch-bf16 "
        "(documents in bfloat16 autocast, queries through ONNX fp32), onnx (ONNX Runtime, "
        "fp32: the same vectors to ~1e-7), onnx-int8 (documents in int8, 1.7-2.2x ONNX fp32 "
        "on a CPU with VNNI, cosine 0.9989 to fp32, multilingual dev MRR@20 0.003 lower; queries "
        "through ONNX fp32); auto = torch-bf16 where bf16 is faster than fp32 (AMX; AVX-512 "
        "BF16 on AMD), else onnx. docs/benchmark.md: throughput and Recall@20 of each; the "
        "cache keeps them apart",
    )

    @field_validator("encoder", mode="after")
    @classmethod
    def _encoder(cls, v: str, info: ValidationInfo) -> str:
        if v != "auto":
            return v
        return default_encoder(onnx=onnx_exportable(info.data.get("model", "")))


class HistorySettings(Concern):
    """The repository's own history, read at inference."""

    history_commits: int = Field(
        2000,
        ge=0,
        description="history at inference: the last N commits before the indexed one are "
        "read for what they said about each function they edited (read only when the pool "
        "ranker uses it; needs the repository's history, not a shallow clone); 0 = off",
    )


class StoreSettings(Concern):
    """Where vectors, exported encoders and mirrors are kept."""

    embedding_cache_url: str = Field(
        "",
        description="a SQLAlchemy URL (postgresql+psycopg://...) of an embedding cache a fleet "
        "shares; empty = the local SQLite file under cache_dir",
    )
    cache_dir: Path = Field(
        default_factory=lambda: Path.home() / ".cache" / "spider",
        description="embedding cache and repository mirrors",
    )
    onnx_dir: Path | None = Field(
        None,
        description="where the ONNX graphs exported from the model live (`spider model "
        "export`; the image makes them at build time); empty = cache_dir",
    )

    def export_dir(self) -> Path:
        """The folder holding (or to hold) the exported ONNX graphs."""
        return self.onnx_dir or self.cache_dir


class WorkSettings(Concern):
    """How much of the machine building an index uses: never what the index holds."""

    parse_workers: int = Field(
        0,
        ge=0,
        description="processes that parse a commit's files, the building one included; 0 = "
        "one per usable core (at most 8) when at least 2 MB of source is to be parsed, else "
        "1 (parse in the building process alone)",
    )


class IndexSettings(GraphSettings, EncoderSettings, HistorySettings, StoreSettings, WorkSettings):
    """Every setting an index reads from its own settings, not from a query's."""


# The graph's cache key (spider.index) and the index's: derived from the classes, so a new
# field in one of them is part of the key without anyone listing it.
GRAPH_SETTINGS: tuple[str, ...] = tuple(GraphSettings.model_fields)
INDEX_SETTINGS: frozenset[str] = frozenset(IndexSettings.model_fields)
