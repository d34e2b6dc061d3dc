"""Per-repository settings in ``.github/spider.yml`` on the default branch.

Example::

    enabled: true            # false opts the whole repository out
    k: 10                    # functions listed (1-50)
    selector: auto           # auto (the operator's LLM when its select role is on, else offline) | offline | none | anthropic | llm
    edges: [contains, invokes]  # or none; auto (unset): contains + invokes with an LLM selector, none with offline
    llm: true                # false: no LLM pass on this repository's issues (the server is the operator's)
    include: ["src/**"]      # only these paths
    exclude: ["docs/**"]     # never these paths
    skip_label: "spider:skip"
    triggers: [opened]       # issue actions that run it: opened, reopened, edited
    min_issue_length: 30     # characters of title + body below which an issue is skipped
    shown: 5                 # functions listed in full; the rest of k are collapsed
    min_confidence: 0.1      # stay silent when the first function's estimated chance is lower
    delay_minutes: 30        # wait this long after an issue opens; stay silent when a
                             # maintainer has labelled, assigned or answered it by then

An unreadable or invalid file never stops a job: the defaults apply and the comment says
which setting was wrong. (The key is ``triggers``, not ``on``: YAML 1.1 reads ``on`` as true.)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from contract.commands import MAX_K
from spider.settings import parse_edges_setting
from worker.errors import GitHubRefused
from worker.github import GitHubClient

log = logging.getLogger(__name__)

CONFIG_PATH = ".github/spider.yml"
DEFAULT_SKIP_LABEL = "spider:skip"
DEFAULT_MIN_ISSUE_LENGTH = 30  # shorter than a sentence: not enough to search with
DEFAULT_SHOWN = 5  # a reader looks at the first few; the rest stay one click away
MAX_GLOBS = 50  # each glob is matched against every path; keep a repo's list bounded
MAX_GLOB_CHARS = 200
MAX_DELAY_MINUTES = 24 * 60  # a day: past that the triage has happened, or will not
MAX_PROBLEMS_SHOWN = 3  # the comment names the first few validation errors, not all

Glob = Annotated[str, Field(min_length=1, max_length=MAX_GLOB_CHARS)]
Trigger = Literal["opened", "reopened", "edited"]


class RepoConfig(BaseModel):
    """The validated contents of ``.github/spider.yml`` (every field optional)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    k: int | None = Field(None, ge=1, le=MAX_K)
    selector: Literal["auto", "offline", "none", "anthropic", "llm"] | None = None
    llm: bool = True  # false: no LLM pass here (which server runs is the operator's choice)
    edges: tuple[str, ...] | Literal["auto"] | None = None  # None: the installation's
    include: list[Glob] = Field(default_factory=list, max_length=MAX_GLOBS)
    exclude: list[Glob] = Field(default_factory=list, max_length=MAX_GLOBS)
    skip_label: str = Field(DEFAULT_SKIP_LABEL, min_length=1, max_length=50)
    triggers: list[Trigger] = Field(default_factory=lambda: ["opened"])
    min_issue_length: int = Field(DEFAULT_MIN_ISSUE_LENGTH, ge=0, le=10_000)
    shown: int = Field(DEFAULT_SHOWN, ge=1, le=MAX_K)
    min_confidence: float | None = Field(None, ge=0.0, le=1.0)  # None: always comment
    delay_minutes: int = Field(0, ge=0, le=MAX_DELAY_MINUTES)  # 0: answer at once

    @field_validator("edges", mode="before")
    @classmethod
    def _edges(cls, v: Any) -> tuple[str, ...] | Literal["auto"] | None:
        return None if v is None else parse_edges_setting(v)

    @field_validator("include", "exclude", mode="before")
    @classmethod
    def _one_glob(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    def overrides(self) -> dict[str, Any]:
        """Engine settings this file changes."""
        out: dict[str, Any] = {}
        for key in ("k", "selector", "edges"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if not self.llm:
            out["llm_roles"] = ()
        if self.include:
            out["include"] = list(self.include)
        if self.exclude:
            out["exclude"] = list(self.exclude)
        return out


@dataclass(frozen=True)
class LoadedConfig:
    """The config a job uses, whether the file existed, and why it was ignored (if it was)."""

    config: RepoConfig
    found: bool
    problem: str | None = None


def parse_config(text: str | None) -> LoadedConfig:
    """Validate the file's text; on any error return the defaults with the reason."""
    if text is None:
        return LoadedConfig(RepoConfig(), found=False)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        return LoadedConfig(RepoConfig(), found=True, problem=f"it is not valid YAML{where}")
    if data is None:
        return LoadedConfig(RepoConfig(), found=True)
    if not isinstance(data, dict):
        return LoadedConfig(RepoConfig(), found=True, problem="it is not a mapping of settings")
    try:
        return LoadedConfig(RepoConfig.model_validate(data), found=True)
    except ValidationError as exc:
        return LoadedConfig(RepoConfig(), found=True, problem=_describe(exc))


def load_config(gh: GitHubClient, owner: str, name: str, branch: str) -> LoadedConfig:
    """Read and validate the file on ``branch``; GitHub refusing to serve it counts as a
    problem (the defaults apply), not as a failure of the job."""
    try:
        text = gh.file_text(owner, name, CONFIG_PATH, branch)
    except GitHubRefused as exc:
        log.warning("config unreadable", extra={"error": str(exc)})
        return LoadedConfig(RepoConfig(), found=True, problem="GitHub would not serve it")
    return parse_config(text)


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:MAX_PROBLEMS_SHOWN]:
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = "unknown setting" if err["type"] == "extra_forbidden" else err["msg"]
        parts.append(f"`{loc.replace('`', '')[:60]}`: {msg}")
    more = exc.error_count() - MAX_PROBLEMS_SHOWN
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)
