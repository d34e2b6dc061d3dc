"""The settings of the LLM roles: Claude through the Anthropic API, or any OpenAI-compatible
server (Ollama, llama.cpp, vLLM, LM Studio, a proxy), and what each issue may spend."""


from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import NoDecode

from spider.errors import InvalidSetting
from spider.settings.choices import AUTO, LLMFormat, LLMRole, parse_roles
from spider.settings.concern import Concern

# The LLM roles that run when ``llm_roles`` is auto, per configured backend. A server
# (``llm``): only the roles that paid on both dev sets (raised one of R@20/MRR@20 and
# lowered neither) with the local models measured here: none did (Qwen2.5-Coder 0.5B and
# 1.5B on a CPU, docs/benchmark.md), so a server runs the roles SPIDER_LLM_ROLES names. Claude (``anthropic``): the paper's
# selector, as before (the API is unreachable here: that rests on the paper's figures).
PAYING_ROLES: dict[str, tuple[str, ...]] = {"llm": (), "anthropic": ("select",)}


class AnthropicSettings(Concern):
    """Claude as the paper's selector (the Messages API)."""

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

    @field_validator("anthropic_api_key", mode="after")
    @classmethod
    def _key(cls, v: SecretStr | None) -> SecretStr | None:
        # an empty SPIDER_ANTHROPIC_API_KEY= is no key: auto must not pick Claude for it
        return v if v is not None and v.get_secret_value().strip() else None


class LLMServerSettings(Concern):
    """An OpenAI-compatible server, the roles it plays and the budget of one issue."""

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


class LLMSettings(AnthropicSettings, LLMServerSettings):
    """Which LLM is configured, and the roles it plays."""

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

    def configured_roles(self) -> tuple[str, ...]:
        """The roles the configured LLM is asked to play: the explicit ``llm_roles``, or for
        ``auto`` the roles that paid (:data:`PAYING_ROLES`); none without an LLM."""
        backend = self.llm_backend
        if backend is None:
            return ()
        return PAYING_ROLES[backend] if self.llm_roles == AUTO else tuple(self.llm_roles)
