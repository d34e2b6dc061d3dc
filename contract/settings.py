"""Settings of the GitHub App (bot and worker): deployment settings, the engine's beside them.

One pydantic-settings class, read from ``SPIDER_*`` environment variables. The engine's own
settings are composed in (``settings.engine``, an :class:`~spider.settings.EngineSettings`
read from the same ``SPIDER_*`` variables: ``SPIDER_K=10`` still sets k), not inherited, so
the deployment settings stay a short list and the bot never reads a ranking knob. This
module is import-light (pydantic and the engine's ``spider.settings`` only): the bot
imports it too.
Secrets are checked when a process starts (:meth:`AppSettings.check_bot`,
:meth:`AppSettings.check_worker`), not at import, so tests and tools can build settings freely.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from spider.settings import DEFAULT_COLD_POOL, EngineSettings

# Values people paste from examples; refusing them makes a misconfigured deploy fail loudly.
PLACEHOLDER_SECRET = re.compile(
    r"^\s*$|^(change-?me|changeit|secret|password|todo|xxx+|dummy|example|placeholder)$"
    r"|^<.*>$|^your[-_ ]",
    re.IGNORECASE,
)
MIN_WEBHOOK_SECRET_CHARS = 16  # GitHub recommends a long random secret; short ones are guessable
VISIBILITY_MARGIN_S = 600  # slack between a task's longest legitimate wait and a redelivery


class SettingsError(RuntimeError):
    """The process cannot start with these settings (missing or placeholder secrets)."""


class AppSettings(BaseSettings):
    """Settings of the bot and the worker (``SPIDER_`` environment variables).

    The engine's settings are :attr:`engine`; an unknown keyword (an engine knob passed at
    the top level, say) is refused rather than silently dropped.
    """

    model_config = SettingsConfigDict(env_prefix="SPIDER_", extra="forbid")

    engine: EngineSettings = Field(
        default_factory=EngineSettings,
        description="the engine's settings (k, selector, cache_dir...), read from the same "
        "SPIDER_* variables",
    )

    # --- shared ---
    redis_url: str = Field(
        "redis://127.0.0.1:6379/0", description="broker, locks, dedupe; with Sentinel, "
        "sentinel://host:port;sentinel://host:port[/db] (see contract.redis_client)"
    )
    redis_sentinel_master: str = Field(
        "mymaster", description="the Sentinel master name (only for sentinel:// URLs)"
    )
    log_level: str = Field(
        "INFO", description="the lowest log level written: DEBUG, INFO, WARNING or ERROR"
    )
    log_json: bool = Field(True, description="one JSON object per log line")

    # --- bot ---
    webhook_secret: SecretStr | None = Field(
        None,
        description="the GitHub App's webhook secret: the bot checks every delivery's "
        "X-Hub-Signature-256 against it and refuses to start without it",
    )
    webhook_max_body_bytes: int = Field(
        2 * 1024 * 1024,
        ge=1024,
        description="issue and comment payloads are far smaller; GitHub caps deliveries at 25 MB",
    )
    delivery_ttl_s: int = Field(
        3 * 24 * 3600, ge=60, description="a delivery id is remembered this long (redeliveries)"
    )

    # --- GitHub ---
    github_app_id: int | None = Field(
        None, description="the GitHub App's id (its settings page); the worker needs it"
    )
    github_private_key: SecretStr | None = Field(
        None,
        description="the GitHub App's private key, PEM text (newlines may be written \\n); "
        "or set github_private_key_path",
    )
    github_private_key_path: Path | None = Field(
        None, description="a file holding the GitHub App's private key (PEM), read at start"
    )
    github_api_url: str = Field(
        "https://api.github.com",
        description="the GitHub REST API's base URL; GitHub Enterprise Server: "
        "https://HOST/api/v3",
    )
    git_url_template: str = Field(
        "https://github.com/{owner}/{name}.git",
        description="where mirrors are fetched from; an absolute local path is allowed for tests",
    )
    github_timeout_s: float = Field(30.0, gt=0, description="per HTTP request")
    github_attempts: int = Field(4, ge=1, description="tries per GitHub call on 5xx/network errors")
    github_backoff_s: float = Field(1.0, ge=0, description="first backoff; doubles, with jitter")
    github_max_inline_wait_s: float = Field(
        90.0,
        ge=0,
        description="rate-limit waits up to this are slept in the task; longer ones reschedule it",
    )
    token_refresh_margin_s: int = Field(
        300, ge=0, description="an installation token is replaced this long before it expires"
    )
    max_repo_kb: int = Field(
        2_000_000, ge=1, description="repositories above this size (GitHub's `size`, then the "
        "fetched mirror's) get a polite comment instead of a list"
    )
    max_source_files: int = Field(
        20_000, ge=1, description="so do repositories with more source files to index than this "
        "(on 2 cores MiniLM embeds ~30 functions/s: a bigger first index outlasts the time limit)"
    )
    git_timeout_s: int = Field(900, ge=10, description="one git fetch")

    # --- worker reliability ---
    task_soft_time_limit_s: int = Field(900, ge=10, description="the task is told to stop")
    task_time_limit_s: int = Field(960, ge=10, description="the worker process is killed")
    max_retries: int = Field(5, ge=0, description="task retries on transient errors")
    retry_backoff_s: float = Field(15.0, ge=0, description="first task retry delay; doubles")
    retry_backoff_max_s: float = Field(
        3600.0, ge=0, description="cap of one retry delay (GitHub's primary limit resets hourly)"
    )
    max_deliveries: int = Field(
        3, ge=1, description="starts of one message before it is dropped: a worker lost, or "
        "Redis away when a retry was due, each cost one (a job that kills workers must stop)"
    )
    lock_wait_s: float = Field(
        120.0, ge=0, description="how long a job waits for another job indexing the same repo"
    )
    lease_ttl_s: int = Field(
        60, ge=2, description="locks and job slots of a dead worker free themselves after this "
        "(a live holder renews them every third of it)"
    )
    broker_visibility_timeout_s: int | None = Field(
        None, ge=2, description="Redis redelivers a message unacknowledged this long (a worker "
        "that died); default: the hard time limit or the longest retry delay, plus a margin"
    )
    broker_restore_interval_s: int = Field(
        60, ge=1, description="how often each worker looks for messages to redeliver"
    )
    lost_job_after_s: float = Field(
        60.0, gt=0, description="a job the bot published that is in no queue and not "
        "unacknowledged at two looks this far apart (lost between a worker's BRPOP and its "
        "record of the message, by a kill) is published again (worker/rescue.py)"
    )
    # --- redelivery of failed webhook deliveries (worker/redeliver.py) ---
    redeliver_enabled: bool = Field(
        True, description="ask GitHub to redeliver deliveries the bot could not take (a 503 "
        "while Redis was away); GitHub never retries a failed delivery by itself"
    )
    redeliver_interval_s: float = Field(
        300.0, ge=1, description="how often one worker of the fleet (a Redis lock) looks"
    )
    redeliver_window_s: int = Field(
        3 * 24 * 3600, ge=60, description="only deliveries this recent (GitHub keeps 3 days)"
    )
    redeliver_max_attempts: int = Field(
        3, ge=1, description="redeliveries asked for one delivery (by guid) before giving up"
    )
    redeliver_max_pages: int = Field(
        20, ge=1, description="pages of 100 deliveries read per run (bounded work per run)"
    )

    # --- limits ---
    max_jobs_per_installation: int = Field(
        4, ge=1, description="jobs of one installation running at once (others wait their turn)"
    )
    max_jobs_per_repo: int = Field(
        2, ge=1, description="jobs of one repository running at once (others wait their turn)"
    )
    defer_delay_s: float = Field(
        10.0, ge=0, description="first wait of a job that found its slot or lock taken; grows 1.5x"
    )
    defer_delay_max_s: float = Field(300.0, ge=0, description="cap of one such wait")
    max_deferrals: int = Field(
        60, ge=0, description="waits for a slot or lock before the job gives up (hours at the cap)"
    )

    # --- indexing before the issue (worker/indexing.py) and the first comment fast ---
    issue_cold_pool: int = Field(
        DEFAULT_COLD_POOL, ge=0, description="an issue job on a repository whose functions are mostly not "
        "embedded yet ranks with BM25 and the issue's signals and embeds only this many best "
        "candidates (the comment says so; the full index is queued); 0 = it embeds them all"
    )
    issue_embed_max: int = Field(
        500, ge=0, description="an issue job embeds up to this many missing functions itself "
        "(a push since the last index: seconds; MiniLM on 2 cores ~75/s fp32, ~260/s bf16 on "
        "CPUs with AMX), or up to 1.5x issue_cold_pool (a pool would cost nearly as much); "
        "more, and it takes the cold path above"
    )
    worker_index_cache_functions: int = Field(
        60_000, ge=0, description="a worker process keeps the indexes it answered from in "
        "memory, up to this many functions in all (least recently used dropped first; about "
        "10-15 KB each: vectors, graph, BM25), so a warm answer reads nothing from disk; 0 = off"
    )
    index_pending_ttl_s: int = Field(
        6 * 3600, ge=60, description="a queued index job keeps others of its repository from "
        "being queued this long at most (a lost job frees the way after it)"
    )

    # --- scoring merged fixes (worker/store, worker/scoring.py) ---
    database_url: str | None = Field(
        None, description="where comments and scored fixes are recorded (SQLAlchemy URL, e.g. "
        "postgresql+psycopg://user:pass@host/db); default: SQLite in the cache directory"
    )
    fix_max_retries: int = Field(
        20, ge=0, description="retries of a scoring job while the database or GitHub is away "
        "(backoff from SPIDER_RETRY_BACKOFF_S, capped by SPIDER_RETRY_BACKOFF_MAX_S)"
    )
    fix_max_files: int = Field(
        300, ge=1, description="a pull request changing more files than this is not scored "
        "(GitHub lists at most 3000; a vendored drop says nothing about the issue)"
    )

    # --- rendering ---
    template_dir: Path | None = Field(
        None,
        description="a directory whose templates (comment.md.j2, too_large.md.j2, "
        "could_not_finish.md.j2, report.html.j2) override the shipped ones, file by file",
    )
    app_name: str = Field("spider-bot", description="shown in the comment")

    @field_validator("github_api_url")
    @classmethod
    def _api_url(cls, v: str) -> str:
        if not re.match(r"^https?://", v):
            raise ValueError("SPIDER_GITHUB_API_URL must be an http(s) URL")
        return v.rstrip("/")

    def with_engine(self, **changes: Any) -> AppSettings:
        """A copy whose engine settings have ``changes`` (e.g. ``k=5``)."""
        return self.model_copy(update={"engine": self.engine.model_copy(update=changes)})

    @property
    def database_url_or_default(self) -> str:
        """SPIDER_DATABASE_URL, else an SQLite file in the cache directory."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{Path(self.engine.cache_dir).expanduser().resolve() / 'spider-bot.db'}"

    @property
    def mirror_dir(self) -> Path:
        """Bare repository mirrors live here, one per repository."""
        return Path(self.engine.cache_dir) / "mirrors"

    @property
    def longest_wait_s(self) -> float:
        """The longest a message may legitimately stay unacknowledged: a task running to its
        hard limit, or a retry or deferral held by a worker until its countdown ends."""
        return max(self.task_time_limit_s, self.retry_backoff_max_s, self.defer_delay_max_s * 2)

    @property
    def visibility_timeout_s(self) -> int:
        """Redis redelivers an unacknowledged task after this; it must exceed
        :attr:`longest_wait_s`, or a running task would be handed out twice."""
        if self.broker_visibility_timeout_s is not None:
            return self.broker_visibility_timeout_s
        return int(self.longest_wait_s + VISIBILITY_MARGIN_S)

    def private_key_pem(self) -> str:
        """The app's private key, from the variable or the file; raise SettingsError if absent."""
        if self.github_private_key is not None:
            pem = self.github_private_key.get_secret_value().replace("\\n", "\n")
        elif self.github_private_key_path is not None:
            try:
                pem = self.github_private_key_path.read_text()
            except OSError as exc:
                raise SettingsError(
                    f"SPIDER_GITHUB_PRIVATE_KEY_PATH cannot be read: {exc.strerror}"
                ) from exc
        else:
            raise SettingsError(
                "set SPIDER_GITHUB_PRIVATE_KEY (PEM text) or SPIDER_GITHUB_PRIVATE_KEY_PATH"
            )
        if "PRIVATE KEY-----" not in pem:
            raise SettingsError("the GitHub App private key is not a PEM private key")
        return pem

    def check_bot(self) -> None:
        """Refuse to serve webhooks without a real secret."""
        secret = self.webhook_secret.get_secret_value() if self.webhook_secret else ""
        if PLACEHOLDER_SECRET.search(secret):
            raise SettingsError("SPIDER_WEBHOOK_SECRET is missing or a placeholder")
        if len(secret) < MIN_WEBHOOK_SECRET_CHARS:
            raise SettingsError(
                f"SPIDER_WEBHOOK_SECRET must be at least {MIN_WEBHOOK_SECRET_CHARS} characters"
            )

    def check_worker(self) -> None:
        """Refuse to run jobs without the app's identity and sane limits."""
        if self.github_app_id is None:
            raise SettingsError("SPIDER_GITHUB_APP_ID is missing")
        self.private_key_pem()
        if self.task_soft_time_limit_s >= self.task_time_limit_s:
            raise SettingsError("the soft time limit must be below the hard time limit")
        if self.visibility_timeout_s <= self.longest_wait_s:
            raise SettingsError(
                "SPIDER_BROKER_VISIBILITY_TIMEOUT_S must exceed the hard time limit, the longest "
                f"retry delay and the longest deferral ({self.longest_wait_s:.0f} s), or a job "
                "still running would be handed to a second worker"
            )
        if self.engine.selector == "anthropic" and self.engine.anthropic_api_key is None:
            # only an explicit choice: the default (auto) runs offline without a key
            raise SettingsError(
                "SPIDER_SELECTOR=anthropic needs SPIDER_ANTHROPIC_API_KEY (unset "
                "SPIDER_SELECTOR for auto: Claude with a key, the offline selector without)"
            )
        if self.engine.selector == "llm" and self.engine.llm_base_url is None:
            raise SettingsError(
                "SPIDER_SELECTOR=llm needs SPIDER_LLM_BASE_URL (an OpenAI-compatible server; "
                "unset SPIDER_SELECTOR for auto)"
            )
        if self.engine.llm_base_url is not None and not self.engine.llm_model.strip():
            raise SettingsError(
                f"SPIDER_LLM_BASE_URL is {self.engine.llm_base_url} but SPIDER_LLM_MODEL is "
                "empty: name the model that server serves (e.g. qwen2.5-coder:7b for Ollama)"
            )
        if "{owner}" not in self.git_url_template and not Path(self.git_url_template).is_absolute():
            raise SettingsError(
                "SPIDER_GIT_URL_TEMPLATE needs {owner} and {name}, or is one local path"
            )


@lru_cache(maxsize=1)
def get_settings() -> AppSettings:
    """The process-wide settings (tests may call ``get_settings.cache_clear()``)."""
    return AppSettings()
