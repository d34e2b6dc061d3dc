"""Engine settings: one pydantic-settings class read from ``SPIDER_*`` variables.

Every ranking weight, cap and threshold the engine uses lives here (or in a named
constant beside the code that uses it) with a one-line reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from spider.cpu import default_encoder
from spider.errors import InvalidSetting

SelectorName = Literal["auto", "offline", "anthropic", "llm", "none", "oracle"]
AUTO = "auto"  # selector/edges/roles: chosen from whether an LLM is configured
LLMRole = Literal["select", "read"]
LLM_ROLE_NAMES: tuple[str, str] = ("select", "read")  # the order "both" expands to
LLMFormat = Literal["auto", "pointwise", "listwise"]
# The LLM roles that run when ``llm_roles`` is auto, per configured backend. A server
# (``llm``): only the roles that paid on both dev sets (raised one of R@20/MRR@20 and
# lowered neither) with the local models measured here: none did (Qwen2.5-Coder 0.5B and
# 1.5B on a CPU, docs/benchmark.md), so a server runs the roles SPIDER_LLM_ROLES names. Claude (``anthropic``): the paper's
# selector, as before (the API is unreachable here: that rests on the paper's figures).
PAYING_ROLES: dict[str, tuple[str, ...]] = {"llm": (), "anthropic": ("select",)}
FirstStage = Literal["dense", "bm25", "hybrid"]
EncoderBackend = Literal["auto", "torch", "torch-bf16", "onnx", "onnx-int8"]

EDGE_NAMES: tuple[str, str] = ("contains", "invokes")  # the order "both" expands to
EXPANDABLE_EDGES: frozenset[str] = frozenset(EDGE_NAMES)
# The edges expanded when ``edges`` is auto and an LLM selector judges: the paper's best
# setting (contains + invokes: Python 0.42 -> 0.60 Recall@20 on SWE-PolyBench). With the
# offline selector auto means none: its admissions cost recall on the dev set (learning.md).
LLM_EDGES: tuple[str, ...] = ("contains", "invokes")


def onnx_exportable(model: str) -> bool:
    """Whether the ONNX encoder can serve ``model``: the bundled one, or a local directory
    (a hub name would need a download, which the ONNX exporter never does)."""
    return not model or Path(model).is_dir()


# The pool a first visit embeds. On the 86 Lite dev instances (2026-12-02, fp32 vectors) the
# default ranking's Recall@20 was 0.660 from the full index, 0.639 from a pool of 300 and
# 0.662 from 1,000; 1,000 functions cost ~4 s in bf16 (~13 s in fp32) on 2 cores.
DEFAULT_COLD_POOL = 1000
# A repository with at most this many times the pool's functions left to embed is embedded
# whole on a first visit: the pool would cost nearly as much (1,000 of 1,349 functions), and
# a full index needs no second answer, so the list is called partial only when it saves.
COLD_FULL_RATIO = 1.5


def embeds_whole(missing: int, cold_pool: int) -> bool:
    """Whether a first visit with ``missing`` functions not embedded yet embeds them all
    rather than a pool of ``cold_pool`` (0: the cold path is off, always all)."""
    return cold_pool <= 0 or missing <= cold_pool * COLD_FULL_RATIO
GRAPH_SETTINGS = (
    "invokes_max_candidates",
    "max_file_bytes",
    "max_line_chars",
    "exclude_tests",
    "exclude",
    "include",
)  # settings that change the graph, hence its cache key (spider.index)
# Every setting an Index reads from its own settings (the graph, the encoder, history at
# inference, the caches), not from the settings a query is given.
INDEX_SETTINGS = frozenset({
    *GRAPH_SETTINGS, "parse_timeout_s", "model", "encoder_delta", "max_seq_length",
    "embed_batch_size", "encoder", "history_commits", "embedding_cache_url", "cache_dir",
    "onnx_dir",
})  # fmt: skip

# Default exclusions by category (the category is the skip reason the graph's stats count).
# GitHub Linguist's vendored/generated/documentation rules, .gitattributes and the
# python-package rule come on top of these (spider/graph/exclusions.py, linguist.yml).
TEST_EXCLUDES: tuple[str, ...] = (
    # the bot points at code to fix, and the benchmark's ground truth excludes tests
    "**/test/**",
    "**/tests/**",
    "**/testing/**",
    "**/__tests__/**",
    "**/spec/**",
    "**/test_*.py",
    "**/*_test.py",
    "**/*_tests.py",
    "**/conftest.py",
    "**/*Test.java",
    "**/*Tests.java",
    "**/*.test.*",
    "**/*.spec.*",
    "**/*_test.go",
    "**/*Test.kt",
    "**/*Tests.cs",
    "**/*_spec.rb",
    "**/*Test.php",
)
BUILD_EXCLUDES: tuple[str, ...] = (
    # build output (Linguist counts dist/ as vendored; `-linguist-vendored` lifts these)
    "**/dist/**",
    "**/build/**",
    "**/target/**",
    "**/out/**",
    "**/.git/**",
)
VENDORED_EXCLUDES: tuple[str, ...] = (
    "**/node_modules/**",
    "**/vendor/**",
    "**/third_party/**",
    "**/thirdparty/**",
    "**/site-packages/**",
    "**/bower_components/**",
    "**/*.min.js",
    "**/*.min.mjs",
    "**/*.bundle.js",
)
GENERATED_EXCLUDES: tuple[str, ...] = (
    "**/*_pb2.py",
    "**/*.pb.go",
    "**/*.generated.*",
    "**/*.g.cs",
    "**/*.d.ts",
)
DEFAULT_EXCLUDES: tuple[str, ...] = (
    TEST_EXCLUDES + BUILD_EXCLUDES + VENDORED_EXCLUDES + GENERATED_EXCLUDES
)


def parse_name_set(value: object, names: tuple[str, str], what: str) -> tuple[str, ...]:
    """A set of two known ``names`` from ``"a,b"`` / ``"a+b"`` / ``"both"`` / ``"none"`` / a
    list, validated and deduplicated in order (``what`` names one item in errors)."""
    if isinstance(value, str):
        items = [v.strip() for v in value.replace("+", ",").split(",") if v.strip()]
    elif isinstance(value, (list, tuple)):
        items = [str(v).strip() for v in value]
    else:
        raise InvalidSetting(f"{what} {value!r}: expected {', '.join(names)}, both or none")
    if items == ["both"]:
        items = list(names)
    if items == ["none"]:
        return ()
    bad = [i for i in items if i not in names]
    if bad:
        raise InvalidSetting(
            f"unknown {what}(s) {bad}: expected {', '.join(names)}, both or none"
        )
    return tuple(dict.fromkeys(items))


def parse_edges(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Turn ``"contains,invokes"`` / ``"both"`` / ``"none"`` / a list into a validated edge
    tuple (``"auto"`` is not an edge list: see :func:`parse_edges_setting`)."""
    return parse_name_set(value, EDGE_NAMES, "edge type")


def parse_edges_setting(
    value: str | list[str] | tuple[str, ...] | None,
) -> tuple[str, ...] | Literal["auto"]:
    """An ``edges`` setting: ``"auto"`` (or unset) kept as is, anything else as :func:`parse_edges`."""
    if value is None or (isinstance(value, str) and value.strip().lower() == AUTO):
        return "auto"
    return parse_edges(value)


class EngineSettings(BaseSettings):
    """Settings of the localization engine (``SPIDER_`` environment variables)."""

    model_config = SettingsConfigDict(env_prefix="SPIDER_", extra="ignore")

    # --- SpIDER budget and expansion (paper defaults: K=20, C=5, d=4, N=500) ---
    k: int = Field(20, ge=1, le=200, description="results returned (the fixed budget K)")
    centres: int = Field(5, ge=0, le=50, description="top-ranked hits expanded (C)")
    depth: int = Field(4, ge=1, le=10, description="max hops along contains edges (d)")
    pool: int = Field(500, ge=1, description="first-stage list candidates must lie in (N)")
    edges: Annotated[tuple[str, ...] | Literal["auto"], NoDecode] = Field(
        "auto",
        description="edge types expanded: contains, invokes, both, none or auto; auto = "
        "contains,invokes when the anthropic selector judges (the paper's method) and none "
        "with the offline one (its admissions cost recall on the dev set: docs/learning.md); "
        "an explicit value always wins, none included",
    )
    invokes_depth: int = Field(1, ge=1, le=4, description="max hops along invokes edges")
    invokes_neighbour_cap: int = Field(
        100, ge=1, description="best-ranked invokes neighbours explored per centre (paper: 100)"
    )
    selector: SelectorName = Field(
        "auto",
        description="who judges graph neighbours: auto = anthropic when "
        "SPIDER_ANTHROPIC_API_KEY is set, else offline; offline (a fitted model, no "
        "network); anthropic (Claude, as in the paper; needs the key); none (no expansion); "
        "oracle (benchmarks only)",
    )
    placement: Literal["centre", "probability"] = Field(
        "probability",
        description="where admitted items go: below their centre (paper) or by estimated "
        "probability (offline selector only)",
    )
    first_stage: FirstStage = Field(
        "hybrid",
        description="the first stage: dense (embeddings), bm25 (code tokens) or hybrid "
        "(both fused with file BM25 and the issue's signals)",
    )
    # Fusion weights: chosen by leave-one-repository-out CV on the 33 non-sympy dev
    # instances (sympy held out); see README "Tuning". Plain RRF is k=60, weights 1/1/0/0.
    fusion_k: int = Field(10, ge=1, description="RRF constant: smaller favours each list's head")
    fusion_dense: float = Field(1.5, ge=0, description="weight of the dense ranking in RRF")
    fusion_bm25: float = Field(1.0, ge=0, description="weight of the BM25 ranking in RRF")
    fusion_file: float = Field(
        0.5, ge=0, description="weight of the file-level BM25 ranking of each function's file"
    )
    fusion_history: float = Field(
        0.0,
        ge=0,
        description="weight of history at inference in RRF: functions ranked by what earlier "
        "commits that edited them said (BM25 against the issue; see history_commits)",
    )
    fusion_signals: float = Field(
        2.0, ge=0, description="issue-signal bonus: a stack frame counts this x a rank-1 hit"
    )
    signals: bool = Field(
        True, description="fuse names, paths and stack frames found in the issue (hybrid only)"
    )
    query_windows: int = Field(
        32,
        ge=1,
        description="texts the issue is embedded as: its head, then the title with each "
        "further query_window_chars of the body; a function's dense score is its best cosine "
        "(1 = the head only: the encoder reads ~512 characters)",
    )
    query_window_chars: int = Field(400, ge=100, description="body characters per window")
    query_adapter: str = Field(
        "",
        description="a learned map of the issue's query vectors (`spider train encoder`): "
        "empty or none = the bundled model as is, bundled = spider/query_adapter.npz, else "
        "the path of an adapter file; function vectors are never changed",
    )
    rerank: bool = Field(
        True,
        description="re-order the first stage by a learned model (hybrid only): see ranker",
    )
    ranker: Literal["pool", "head"] = Field(
        "pool",
        description="pool: the learned ranker re-scores the first stage's top ranker_depth "
        "(spider/rank/pool_rank.py, trained on other projects' issues; the membership of the top "
        "K can change); head: the logistic head model re-sorts the top K only "
        "(spider/rank/rerank.py); pool falls back to head when no pool model ships",
    )
    ranker_depth: int = Field(
        0, ge=0, le=2000, description="candidates the pool ranker re-scores; 0 = the model's own"
    )
    ranker_file: str = Field(
        "",
        description="the pool ranker's model file: empty = the shipped spider/rank/pool_ranker.json, "
        "else the path of a file `spider train ranker --write-weights` wrote (one fitted on "
        "your own projects' fixed issues); the comment then names the file's digest",
    )
    demote_paths: bool = Field(
        True,
        description="after the ranker, move functions under tooling and copy folders (bin/, "
        "scripts/, tools/, extras/, benchmarks/, examples/, release/: spider/expand/tidy.py "
        "DEMOTED_PATHS), and test code outside the test folders (a Rust mod tests block, "
        "benches/ or examples/ at any depth, a test-helper module), below the library's own "
        "code, unless the issue names their file, their name or points at them by a signal",
    )
    keep_named: bool = Field(
        True,
        description="after the ranker, bring a function the issue names as code back into "
        "sight: a member through its receiver or scope (`c.ClientIP()`, `Session.send`, "
        "`Foo::bar`) naming one function, in the first stage's top K, that the ranker "
        "pushed below the first 5 moves above the functions with no issue signal that the "
        "first stage ranked below it (spider/expand/tidy.py)",
    )
    fold_nested: bool = Field(
        True,
        description="list a function and a function nested in it (through functions, at any "
        "depth) once, at the better place, unless the issue points at both by their own "
        "signals; the survivor is the one the issue points at, else the outer of at most 3 "
        "helpers, else the higher one; its reason names what it stands for; a method, an "
        "object literal's member and a module-sized anonymous export's functions are never "
        "folded (spider/expand/tidy.py)",
    )

    # --- graph ---
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

    # --- retrieval ---
    model: str = Field("", description="sentence-transformers name or path; empty = bundled MiniLM")
    encoder_delta: str = Field(
        "",
        description="tuned weights of the bundled model, as a LoRA delta file (`spider train "
        "delta`; docs/learning.md): empty or none = the bundled model as is, "
        "bundled = spider/encoder_delta.npz, else the path of a delta file; every backend "
        "embeds with the merged weights and the cache keeps their vectors apart; needs the "
        "bundled model (model empty) and no query_adapter",
    )
    cross_encoder: str = Field(
        "",
        description="re-score the pool ranker's top items with a cross-encoder that reads "
        "the issue and each function together (`spider train cross`; docs/learning.md): "
        "empty or none = off, bundled = spider/cross_encoder.npz, else the path of a file; "
        "how many items it reads and how much its score counts come with the file",
    )
    max_seq_length: int = Field(
        128, ge=32, le=8192, description="encoder token cap per text (MiniLM was trained at 128)"
    )
    embed_batch_size: int = Field(32, ge=1, description="functions embedded per batch")
    encoder: EncoderBackend = Field(
        "auto",
        description="how texts are embedded: torch (sentence-transformers, fp32), torch-bf16 "
        "(documents in bfloat16 autocast, queries through ONNX fp32), onnx (ONNX Runtime, "
        "fp32: the same vectors to ~1e-7), onnx-int8 (dynamically quantized); auto = "
        "torch-bf16 on CPUs with native bf16 (AMX, AVX-512 BF16), else onnx. README: "
        "throughput and Recall@20 of each; the cache keeps them apart",
    )
    history_commits: int = Field(
        2000,
        ge=0,
        description="history at inference: the last N commits before the indexed one are "
        "read for what they said about each function they edited (read only when the pool "
        "ranker uses it; needs the repository's history, not a shallow clone); 0 = off",
    )
    cold_pool: int = Field(
        0,
        ge=0,
        description="with no vectors yet, embed only this many best candidates of the cheap "
        "rankers (BM25, file BM25, issue signals) and mark the result partial; 0 = embed all. "
        f"Unset, `spider locate` uses {DEFAULT_COLD_POOL} (as the app's issue_cold_pool) and "
        "`spider index` and `spider bench` 0",
    )
    cold_always: bool = Field(
        False,
        description="take the cold path even when vectors exist: dense scores only the pool "
        "(the benchmark's cold method: how a first visit ranks)",
    )
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

    # --- anthropic selector ---
    anthropic_api_key: SecretStr | None = Field(
        None,
        description="an Anthropic API key: with it the default selector (auto) is Claude and "
        "expansion over contains and invokes edges is on; never logged",
    )
    anthropic_base_url: str = Field(
        "https://api.anthropic.com",
        description="the Messages API's base URL (a proxy, a test fake)",
    )
    anthropic_model: str = Field(
        "claude-sonnet-4-20250514", description="the Claude model that judges (paper: Sonnet 4)"
    )
    anthropic_timeout_s: float = Field(60.0, gt=0, description="per-request timeout")
    anthropic_max_retries: int = Field(
        3, ge=0, description="retries of a failed call; then that centre admits nothing"
    )
    anthropic_temperature: float | None = Field(
        0.1, ge=0, le=1, description="paper: 0.1; unset for models that reject it"
    )
    candidate_chars: int = Field(1500, ge=100, description="code shown per candidate (paper)")

    # --- an OpenAI-compatible LLM server (Ollama, llama.cpp, vLLM, LM Studio, a proxy) ---
    llm_base_url: str | None = Field(
        None,
        description="base URL of an OpenAI-compatible chat-completions server (e.g. "
        "http://127.0.0.1:11434/v1 for Ollama, http://127.0.0.1:8080/v1 for llama.cpp): with "
        "it, auto runs the LLM roles (llm_roles) with that server; an operator setting, never "
        "read from a repository's .github/spider.yml",
    )
    llm_model: str = Field(
        "", description="the model name the server knows (e.g. qwen2.5-coder:1.5b for Ollama)"
    )
    llm_api_key: SecretStr | None = Field(
        None, description="bearer key of the LLM server, when it asks for one; never logged"
    )
    llm_timeout_s: float = Field(
        30.0, gt=0, description="per-request timeout of the LLM server (the budget caps the sum)"
    )
    llm_max_retries: int = Field(
        2, ge=0, description="retries of a failed LLM request, with backoff; then it counts failed"
    )
    llm_roles: Annotated[tuple[LLMRole, ...] | Literal["auto"], NoDecode] = Field(
        "auto",
        description="what a configured LLM does: select (judge graph neighbours, the paper's "
        "selector), read (re-read the ranker's top llm_read_depth with the issue and re-order "
        "them), both, none, or auto = the roles that paid on both dev sets (a server: none of "
        "them with the local models measured, so name the roles; Claude: select, the paper's "
        "method)",
    )
    llm_format: LLMFormat = Field(
        "auto",
        description="how the model answers: pointwise (one yes/no per function, scored by the "
        "answer's log-probability; the issue is a shared, cached prefix), listwise (one JSON "
        "list of ids per request, constrained by a schema); auto = pointwise where the server "
        "returns log-probabilities (OpenAI-compatible), listwise for Claude",
    )
    llm_read_depth: int = Field(
        10,
        ge=2,
        le=100,
        description="how many of the ranker's top functions the reader re-reads: the head, "
        "where the order matters most (each costs a CPU model seconds; on a GPU a deeper "
        "reading, 30-50, can also pull up what the ranker left below K)",
    )
    llm_read_weight: float = Field(
        1.0,
        ge=0,
        description="weight of the model's yes/no log-odds against the ranker's order "
        "(log of the rank) when the reader re-sorts: 0 keeps the ranker's order",
    )
    llm_admit_log_odds: float = Field(
        1.0,
        description="a pointwise selector admits a neighbour only when the model's yes/no "
        "log-odds reach this (1.0: about 73% yes): conservative, as a swap must beat rank K",
    )
    llm_code_chars: int = Field(
        400, ge=100, description="code shown per function to the LLM roles (a CPU model "
        "reads about 3 characters a token at 20-90 tokens/s)",
    )
    llm_prompt_cache: bool = Field(
        True,
        description="ask the server to keep the shared prefix (instructions and issue) of "
        "the pointwise questions cached between requests (llama.cpp's cache_prompt; servers "
        "that cache prefixes by themselves ignore it)",
    )
    llm_budget_tokens: int = Field(
        40_000, ge=100, description="prompt + completion tokens one issue may spend on the LLM"
    )
    llm_budget_s: float = Field(
        90.0, gt=0, description="seconds one issue's LLM pass may take; then the list stands"
    )
    max_issue_chars: int = Field(
        20_000, ge=200, description="issue text is truncated to this before any model call"
    )

    @field_validator("edges", mode="before")
    @classmethod
    def _edges(cls, v: object) -> tuple[str, ...] | Literal["auto"]:
        return parse_edges_setting(v)

    @field_validator("llm_roles", mode="before")
    @classmethod
    def _roles(cls, v: object) -> tuple[str, ...] | Literal["auto"]:
        return parse_roles(v)

    @field_validator("llm_base_url", mode="after")
    @classmethod
    def _base_url(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        if not v.strip().lower().startswith(("http://", "https://")):
            raise InvalidSetting(f"llm_base_url {v!r} is not an http(s) URL")
        return v.strip().rstrip("/")

    @field_validator("anthropic_api_key", mode="after")
    @classmethod
    def _key(cls, v: SecretStr | None) -> SecretStr | None:
        # an empty SPIDER_ANTHROPIC_API_KEY= is no key: auto must not pick Claude for it
        return v if v is not None and v.get_secret_value().strip() else None

    @field_validator("encoder", mode="after")
    @classmethod
    def _encoder(cls, v: str, info: ValidationInfo) -> str:
        if v != "auto":
            return v
        return default_encoder(onnx=onnx_exportable(info.data.get("model", "")))

    @model_validator(mode="after")
    def _delta_needs_the_bundled_model(self) -> EngineSettings:
        if self.model.strip() and self.encoder_delta.strip().lower() not in ("", "none"):
            raise InvalidSetting(
                f"encoder_delta {self.encoder_delta!r} tunes the bundled model, but model is "
                f"{self.model!r}: unset SPIDER_ENCODER_DELTA or SPIDER_MODEL"
            )
        delta_on = self.encoder_delta.strip().lower() not in ("", "none")
        if delta_on and self.query_adapter.strip().lower() not in ("", "none"):
            raise InvalidSetting(
                f"query_adapter {self.query_adapter!r} maps the untuned model's query vectors, "
                f"but encoder_delta {self.encoder_delta!r} changes them: unset "
                "SPIDER_QUERY_ADAPTER or SPIDER_ENCODER_DELTA"
            )
        return self

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
            base = [g for g in base if not _is_test_glob(g)]
        return base + list(self.exclude)

    @property
    def reranks(self) -> bool:
        """Whether the head re-ranker orders the top K (it needs the hybrid first stage)."""
        return self.rerank and self.first_stage == "hybrid"

    @property
    def llm_backend(self) -> Literal["llm", "anthropic"] | None:
        """The LLM that is configured: the OpenAI-compatible server (``llm``) when its URL
        is set, else Claude (``anthropic``) with a key, else None."""
        if self.llm_base_url is not None:
            return "llm"
        return "anthropic" if self.anthropic_api_key is not None else None

    @property
    def llm_model_name(self) -> str:
        """The model the configured LLM asks (``""`` without one)."""
        if self.llm_backend == "llm":
            return self.llm_model.strip()
        return self.anthropic_model if self.llm_backend == "anthropic" else ""

    @property
    def active_llm_roles(self) -> tuple[str, ...]:
        """The LLM roles that run: the explicit ``llm_roles``, or for ``auto`` the roles
        that paid (:data:`PAYING_ROLES`); none without a configured LLM. The select role
        runs only when the selector that runs is an LLM."""
        backend = self.llm_backend
        if backend is None:
            return ()
        roles = PAYING_ROLES[backend] if self.llm_roles == AUTO else tuple(self.llm_roles)
        return tuple(
            r for r in roles if r != "select" or self.selector_name in ("llm", "anthropic")
        )

    @property
    def selector_name(self) -> str:
        """The selector that runs: ``auto`` made concrete: the configured LLM when its
        select role is on (:attr:`llm_backend`), else offline."""
        if self.selector != AUTO:
            return self.selector
        backend = self.llm_backend
        if backend is None:
            return "offline"
        roles = PAYING_ROLES[backend] if self.llm_roles == AUTO else tuple(self.llm_roles)
        return backend if "select" in roles else "offline"

    def expansion_edges(self, selector: str | None = None) -> tuple[str, ...]:
        """The edge types expanded: the explicit ``edges``, or for ``auto`` :data:`LLM_EDGES`
        when ``selector`` (default: :attr:`selector_name`) is an LLM and none otherwise."""
        if self.edges != AUTO:
            return tuple(self.edges)
        return LLM_EDGES if (selector or self.selector_name) in ("anthropic", "llm") else ()

    def resolved(self, selector: str | None = None) -> EngineSettings:
        """These settings with ``auto`` made concrete (the selector, and the edges for
        ``selector``, the name of the one that runs when the caller built it), so that every
        later stage reads plain values; the same object when nothing is auto."""
        update: dict[str, object] = {}
        if self.selector == AUTO:
            update["selector"] = self.selector_name
        if self.llm_roles == AUTO:
            update["llm_roles"] = self.active_llm_roles
        if self.edges == AUTO:
            update["edges"] = self.expansion_edges(selector)
        return self.model_copy(update=update) if update else self

    @property
    def expands(self) -> bool:
        """Whether graph expansion runs at all (some edge type and at least one centre)."""
        return bool(self.expansion_edges()) and self.centres > 0 and self.selector_name != "none"


def parse_roles(value: object) -> tuple[str, ...] | Literal["auto"]:
    """``llm_roles`` from a comma list (``select,read``), ``both``, ``none`` or ``auto``
    (case-insensitive)."""
    if isinstance(value, str):
        value = value.strip().lower()
        if value == AUTO:
            return AUTO
    elif isinstance(value, (list, tuple)):
        value = [str(p).strip().lower() for p in value]
    return parse_name_set(value, LLM_ROLE_NAMES, "role")


def _is_test_glob(glob: str) -> bool:
    g = glob.lower()
    return any(t in g for t in ("test", "spec", "conftest"))
