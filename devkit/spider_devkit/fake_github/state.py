"""The fake's state and what tests do with it: add repositories, issues, comments and pull
requests, inject failures, read what was requested; and the credential checks."""

from __future__ import annotations

import random
import re
import secrets
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt

from spider_devkit.fake_github.git import git
from spider_devkit.fake_github.records import (
    Call,
    FakeComment,
    FakeIssue,
    FakePull,
    FakeRepo,
    Injection,
    now,
)
from spider_devkit.fake_github.webhooks import WebhookSender

TOKEN_TTL = timedelta(hours=1)  # what GitHub gives installation tokens
JWT_LEEWAY_S = 90  # clock drift GitHub tolerates on an app's JWT
FIRST_ID = 1000  # ids of repositories and comments count up from here
# When the fake's installation was created: long before any issue a test adds (those are
# created "now"); a test of the no-backfill rule sets a later time, or older issues.
INSTALLED_AT = "2020-01-01T00:00:00Z"
BEARER = "bearer "
CHAOS_KINDS = ("5xx", "timeout", "429", "403-secondary")


@dataclass(frozen=True)
class Chaos:
    """Random failures on a share of every request: ``rate`` of the calls (after explicit
    injections) fail, each as one of ``kinds`` (drawn evenly): a 502 or 503; a real answer
    sent only after ``timeout_s`` (past the client's timeout: the change still happens);
    a 429 or a 403 secondary rate limit, each with ``retry-after: retry_after_s``."""

    rate: float
    kinds: tuple[str, ...] = CHAOS_KINDS
    timeout_s: float = 3.0
    retry_after_s: int = 1
    seed: int = 0


class GitHubState(WebhookSender):
    """Everything the fake knows and records. Thread-safe (one lock guards it all)."""

    def __init__(self, *, app_id: int, public_key_pem: str, installation_id: int = 1,
                 app_slug: str = "spider-bot", token_style: str = "ghs") -> None:
        super().__init__()
        self.app_id = app_id
        self.installation_id = installation_id
        self.app_slug = app_slug
        self.installation_created_at = INSTALLED_AT  # GitHub's timestamp (records.TIMESTAMP)
        # "ghs": today's ghs_... tokens; "v1": GitHub Enterprise's older v1.<40 hex> ones,
        # which no pattern can recognise in a log line (only not logging them helps)
        self.token_style = token_style
        self.credentials: set[str] = set()  # every Authorization header value it was shown
        self._public_key = public_key_pem
        self.repos: dict[str, FakeRepo] = {}
        self.issues: dict[tuple[str, int], FakeIssue] = {}
        self.comments: dict[int, FakeComment] = {}
        self.pulls: dict[tuple[str, int], FakePull] = {}
        self.calls: list[Call] = []
        self._injections: list[Injection] = []
        self._chaos: Chaos | None = None
        self._chaos_rng = random.Random(0)
        self.chaos_counts: Counter[str] = Counter()  # failures chaos injected, by kind
        self._tokens: dict[str, float] = {}
        self._next_id = FIRST_ID
        self.base_url = ""  # set by serve()

    # --- test control ---

    def add_repo(self, full_name: str, path: str | Path, default_branch: str | None = None) -> FakeRepo:
        """Serve ``full_name`` from the local git repository at ``path``."""
        path = Path(path).resolve()
        branch = default_branch or git(path, "symbolic-ref", "--short", "HEAD").strip()
        with self._lock:
            repo = FakeRepo(full_name, path, branch, self._new_id())
            self.repos[full_name] = repo
            return repo

    def add_issue(self, repo: str, number: int, title: str, body: str | None, **kw: Any) -> FakeIssue:
        """Create or replace an issue."""
        with self._lock:
            issue = FakeIssue(repo, number, title, body, **kw)
            self.issues[(repo, number)] = issue
            return issue

    def add_comment(self, repo: str, issue: int, body: str, *, user: str = "maintainer",
                    association: str = "OWNER", comment_id: int | None = None,
                    user_type: str = "User") -> FakeComment:
        """A comment written by a person (e.g. a ``/spider`` command)."""
        with self._lock:
            comment = FakeComment(repo, issue, comment_id or self._new_id(), body, user,
                                  user_type=user_type, association=association)
            self.comments[comment.id] = comment
            return comment

    def add_bot_comment(self, repo: str, issue: int, body: str) -> FakeComment | None:
        """A comment the app posts on an issue; None when there is no such issue."""
        with self._lock:
            if (repo, issue) not in self.issues:
                return None
            comment = FakeComment(repo, issue, self._new_id(), body, user=f"{self.app_slug}[bot]",
                                  user_type="Bot", association="NONE", app_id=self.app_id)
            self.comments[comment.id] = comment
            return comment

    def edit_comment(self, repo: str, comment_id: int, body: str) -> FakeComment | None:
        """Replace a comment's body; None when the repository has no such comment."""
        with self._lock:
            comment = self.comments.get(comment_id)
            if comment is None or comment.repo != repo:
                return None
            comment.body = body
            comment.updated_at = now()
            return comment

    def add_pull(self, repo: str, number: int, title: str, body: str | None, *,
                 base_sha: str, head_sha: str | None = None, **kw: Any) -> FakePull:
        """Create or replace a pull request (see :class:`FakePull` for ``kw``)."""
        with self._lock:
            pull = FakePull(repo, number, title, body, base_sha, head_sha or base_sha, **kw)
            self.pulls[(repo, number)] = pull
            return pull

    def inject(self, method: str, path_pattern: str, status: int | None, *, times: int = 1,
               headers: dict[str, str] | None = None, body: dict[str, Any] | None = None,
               apply: bool = False, delay_s: float = 0.0) -> None:
        """Answer the next ``times`` matching requests with ``status`` (None: the real
        answer), after ``delay_s`` seconds."""
        with self._lock:
            self._injections.append(Injection(
                method.upper(), re.compile(path_pattern), status, headers or {},
                body or {"message": f"injected {status}"}, times, apply, delay_s))

    def set_chaos(self, chaos: Chaos | None) -> None:
        """Fail a random share of all requests from now on (None: stop); see :class:`Chaos`."""
        with self._lock:
            self._chaos = chaos
            self._chaos_rng = random.Random(chaos.seed if chaos else 0)

    def _chaos_injection(self, method: str) -> Injection | None:
        chaos = self._chaos
        if chaos is None or self._chaos_rng.random() >= chaos.rate:
            return None
        kind = self._chaos_rng.choice(chaos.kinds)
        self.chaos_counts[kind] += 1
        wait = {"retry-after": str(chaos.retry_after_s)}
        any_path = re.compile("")
        if kind == "timeout":
            return Injection(method, any_path, None, {}, {}, 1, False, chaos.timeout_s)
        if kind == "429":
            return Injection(method, any_path, 429, wait, {"message": "API rate limit exceeded"},
                             1, False)
        if kind == "403-secondary":
            return Injection(method, any_path, 403, wait, {
                "message": "You have exceeded a secondary rate limit. Please wait a few "
                           "minutes before you try again."}, 1, False)
        status = self._chaos_rng.choice((502, 503))
        return Injection(method, any_path, status, {}, {"message": f"chaos {status}"}, 1, False)

    def minted_tokens(self) -> list[str]:
        """Every installation token the fake has handed out."""
        with self._lock:
            return list(self._tokens)

    def comments_on(self, repo: str, issue: int) -> list[FakeComment]:
        """The comments of an issue, oldest first."""
        with self._lock:
            return sorted((c for c in self.comments.values() if c.repo == repo and c.issue == issue),
                          key=lambda c: c.id)

    def bot_comments(self, repo: str, issue: int) -> list[FakeComment]:
        """The comments the app posted on an issue."""
        return [c for c in self.comments_on(repo, issue) if c.app_id == self.app_id]

    def requests(self, method: str | None = None, contains: str = "", *,
                 path: str | None = None) -> list[Call]:
        """Recorded requests, optionally filtered by method, a path substring or the exact path."""
        with self._lock:
            return [c for c in self.calls if (method is None or c.method == method)
                    and contains in c.path and (path is None or c.path == path)]

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    # --- recording and credentials (the middleware and the routes call these) ---

    def record_call(self, call: Call) -> None:
        """Remember a request once it has been answered."""
        with self._lock:
            self.calls.append(call)

    def remember_credential(self, authorization: str) -> None:
        """Remember an Authorization header value as it arrives."""
        with self._lock:
            self.credentials.add(authorization)

    def mint_token(self) -> tuple[str, datetime]:
        """A new installation token of the fake's style and when it expires."""
        if self.token_style == "v1":
            token = "v1." + secrets.token_hex(20)
        else:
            token = "ghs_" + secrets.token_urlsafe(27).replace("-", "a").replace("_", "b")
        expires = datetime.now(UTC) + TOKEN_TTL
        with self._lock:
            self._tokens[token] = expires.timestamp()
        return token, expires

    def jwt_ok(self, header: str) -> bool:
        """Whether an Authorization header carries a valid JWT of the app."""
        if not header.lower().startswith(BEARER):
            return False
        try:
            claims = jwt.decode(header[len(BEARER):], self._public_key, algorithms=["RS256"],
                                options={"require": ["iat", "exp", "iss"]}, leeway=JWT_LEEWAY_S)
        except jwt.PyJWTError:
            return False
        return str(claims["iss"]) == str(self.app_id)

    def token_ok(self, header: str) -> bool:
        """Whether an Authorization header carries a live installation token."""
        kind, _, token = header.partition(" ")
        with self._lock:
            expiry = self._tokens.get(token.strip())
        return kind.lower() in ("token", "bearer") and expiry is not None and expiry > time.time()

    def take_injection(self, method: str, path: str) -> Injection | None:
        """The injection to apply to this request, if one matches (used up as it goes), else
        maybe one of chaos's random failures."""
        with self._lock:
            for inj in self._injections:
                if inj.times > 0 and inj.method == method and inj.path.search(path):
                    inj.times -= 1
                    return inj
            return self._chaos_injection(method)
