"""The settings a query reads: the budget and graph expansion, the first stage, the ranking
after it, and the cold path a first visit takes. Changing one never rebuilds an index."""


from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from spider.settings.choices import FirstStage, SelectorName, parse_edges_setting
from spider.settings.concern import Concern

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


class ExpansionSettings(Concern):
    """SpIDER's budget and graph expansion (paper defaults: K=20, C=5, d=4, N=500)."""

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

    @field_validator("edges", mode="before")
    @classmethod
    def _edges(cls, v: object) -> tuple[str, ...] | Literal["auto"]:
        return parse_edges_setting(v)


class FirstStageSettings(Concern):
    """The first stage: dense and BM25 rankings fused with the issue's signals."""

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


class RankingSettings(Concern):
    """What re-orders the first stage: the learned ranker and the tidying after it."""

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
        "signals (naming the class or function around one counts; naming its file does "
        "not); the survivor is the one the issue points at, else the outer of at most 3 "
        "helpers, else the higher one; its reason names what it stands for; a method, an "
        "object literal's member and a module-sized anonymous export's functions are never "
        "folded (spider/expand/tidy.py)",
    )
    cross_encoder: str = Field(
        "",
        description="re-score the pool ranker's top items with a cross-encoder that reads "
        "the issue and each function together (`spider train cross`; docs/learning.md): "
        "empty or none = off, bundled = spider/cross_encoder.npz, else the path of a file; "
        "how many items it reads and how much its score counts come with the file",
    )


class ColdStartSettings(Concern):
    """A first visit: rank from a pool of cheap candidates before the index is whole."""

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


class QuerySettings(ExpansionSettings, FirstStageSettings, RankingSettings, ColdStartSettings):
    """Every setting a query reads (the index's are apart: spider.settings.index)."""

    @property
    def reranks(self) -> bool:
        """Whether the head re-ranker orders the top K (it needs the hybrid first stage)."""
        return self.rerank and self.first_stage == "hybrid"
