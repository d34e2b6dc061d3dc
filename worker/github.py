"""The worker's GitHub client: app JWT → installation token → the few REST calls a job needs.

Built on githubkit (typed, validated responses) with its own retry turned off, because the
policy here is the project's: 5xx and network errors back off exponentially with jitter;
rate limits wait exactly ``retry-after`` / ``x-ratelimit-reset`` when that is short, and
otherwise surface as :class:`RateLimited` so the task is rescheduled; other 4xx are
permanent. Installation tokens are cached in Redis (encrypted with a key derived from the
app's private key) until shortly before they expire, shared by every worker process.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import logging
import math
import random
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx
import redis
from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from githubkit import AppAuthStrategy, GitHub, TokenAuthStrategy
from githubkit.cache import MemCacheStrategy
from githubkit.exception import RateLimitExceeded, RequestError, RequestFailed
from githubkit.versions.latest.models import (
    Commit,
    ContentFile,
    DiffEntry,
    FullRepository,
    Issue,
    IssueComment,
    PullRequest,
)
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from contract.metrics import RECORDER
from contract.settings import AppSettings
from worker.errors import GitHubRefused, GitHubUnavailable, JobTransientError, RateLimited

log = logging.getLogger(__name__)
T = TypeVar("T")

USER_AGENT = "spider-bot"
COMMENTS_PER_PAGE = 100  # GitHub's maximum page size
MAX_COMMENT_PAGES = 50  # 5000 comments: past that the issue is not one to triage
MAX_PULL_FILE_PAGES = 30  # GitHub lists at most 3000 files of a pull request
MAX_PULL_COMMIT_PAGES = 3  # GitHub lists at most 250 commits of a pull request
CLOSING_REFS_FIRST = 25  # closing references read through GraphQL, per pull request or issue
_CLOSING_QUERY = """
query($owner: String!, $name: String!, $number: Int!, $first: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) { closingIssuesReferences(first: $first) { nodes { number } } }
  }
}"""
_CLOSED_BY_QUERY = """
query($owner: String!, $name: String!, $number: Int!, $first: Int!) {
  repository(owner: $owner, name: $name) {
    issue(number: $number) { closedByPullRequestsReferences(first: $first, includeClosedPrs: true) {
      nodes { number merged } } }
  }
}"""
MAX_CONFIG_BYTES = 64 * 1024  # a settings file; anything bigger is a mistake
RATE_LIMIT_JITTER_S = 1.0  # spread workers that were told the same reset time
TOKEN_KEY_PREFIX = "spider:ghtoken:"
DEFAULT_RATE_LIMIT_WAIT_S = 60.0  # GitHub's advice when a limit comes without a wait


class TokenRejected(JobTransientError):
    """GitHub answered 401: the cached installation token was revoked or has expired."""


def _translate(exc: Exception) -> Exception:
    """Map githubkit's exceptions onto the worker's transient/permanent tree."""
    if isinstance(exc, RateLimitExceeded):
        return RateLimited(
            f"GitHub rate limit ({type(exc).__name__})", exc.retry_after.total_seconds()
        )
    if isinstance(exc, RequestFailed):
        status = exc.response.status_code
        what = f"{exc.request.method} {exc.request.url.path} -> {status}"
        if status >= 500:
            return GitHubUnavailable(what)
        if status == 401:
            return TokenRejected(what)
        if status == 429 or (status == 403 and "rate limit" in exc.response.text.lower()):
            return RateLimited(what, DEFAULT_RATE_LIMIT_WAIT_S)  # a limit without a wait
        return GitHubRefused(what, status)
    if isinstance(exc, RequestError):
        return GitHubUnavailable(f"GitHub unreachable: {type(exc.exc).__name__}")
    return exc


class RetryPolicy:
    """How one GitHub call is retried in-process (tenacity), per the module docstring."""

    def __init__(self, settings: AppSettings, sleep: Callable[[float], None] = time.sleep) -> None:
        self.attempts = settings.github_attempts
        self.backoff_s = settings.github_backoff_s
        self.max_wait_s = settings.github_max_inline_wait_s
        self.sleep = sleep

    def _retryable(self, exc: BaseException, only: type[BaseException] | None = None) -> bool:
        if only is not None and not isinstance(exc, only):
            return False
        if isinstance(exc, RateLimited):
            return (exc.retry_after or 0) <= self.max_wait_s
        return isinstance(exc, GitHubUnavailable)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, RateLimited):
            return (exc.retry_after or 0) + random.uniform(0, RATE_LIMIT_JITTER_S)
        # full jitter: uniform in [0, base * 2^n] avoids workers retrying in lockstep
        return random.uniform(0, self.backoff_s * 2 ** (state.attempt_number - 1))

    def call(self, what: str, fn: Callable[[], T], only: type[BaseException] | None = None) -> T:
        """Run ``fn`` with retries; raise the worker's error when they are used up.
        With ``only``, other errors are not retried here (they were, inside ``fn``)."""

        def attempt() -> T:
            try:
                return fn()
            except (RequestError, RateLimitExceeded) as exc:
                raise _translate(exc) from exc

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            log.warning(
                "GitHub call failed, retrying",
                extra={"call": what, "error": str(exc), "attempt": state.attempt_number,
                       "wait_s": round(state.upcoming_sleep, 2)},
            )

        retrying = Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=self._wait,
            retry=retry_if_exception(lambda exc: self._retryable(exc, only)),
            sleep=self.sleep,
            before_sleep=before_sleep,
            reraise=True,
        )
        return retrying(attempt)


def retry_after_seconds(value: str, now: float | None = None) -> str:
    """``retry-after`` as whole seconds: GitHub sends seconds, but HTTP also allows a date
    (and githubkit reads it with ``int()``); anything unreadable means GitHub's one minute."""
    value = value.strip()
    if value.isdigit():
        return value
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return str(int(DEFAULT_RATE_LIMIT_WAIT_S))
    return str(max(0, math.ceil(when - (time.time() if now is None else now))))


class MeteredTransport(httpx.HTTPTransport):
    """Counts every GitHub call by status for ``/metrics`` and makes ``retry-after`` readable."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = super().handle_request(request)
        except httpx.TimeoutException:
            RECORDER.count("spider_github_calls", "timeout")
            raise
        except httpx.TransportError:
            RECORDER.count("spider_github_calls", "error")
            raise
        RECORDER.count("spider_github_calls", str(response.status_code))
        if "retry-after" in response.headers:
            response.headers["retry-after"] = retry_after_seconds(response.headers["retry-after"])
        return response


def _github(settings: AppSettings, auth: Any) -> GitHub[Any]:
    return GitHub(
        auth,
        base_url=settings.github_api_url + "/",
        user_agent=USER_AGENT,
        timeout=settings.github_timeout_s,
        http_cache=False,  # comments must be read fresh: a cached list would duplicate ours
        cache_strategy=MemCacheStrategy(),  # githubkit's default cache is process-wide: a JWT
        # signed with another key (tests, key rotation) must never be reused
        auto_retry=False,  # RetryPolicy decides
        trust_env=False,
        transport=MeteredTransport(),
    )


class TokenCache:
    """Installation tokens in Redis, encrypted, kept until ``margin`` before they expire."""

    def __init__(self, client: redis.Redis, settings: AppSettings) -> None:
        self._redis = client
        self._settings = settings
        pem = settings.private_key_pem().encode()
        key = HKDF(hashes.SHA256(), 32, salt=None, info=b"spider-bot token cache").derive(pem)
        self._fernet = Fernet(base64.urlsafe_b64encode(key))
        scope = f"{settings.github_api_url}|{settings.github_app_id}"
        self._prefix = TOKEN_KEY_PREFIX + hashlib.sha256(scope.encode()).hexdigest()[:12] + ":"

    def get(self, installation_id: int) -> str | None:
        """A cached token still valid for at least the margin, or None."""
        raw = self._redis.get(self._prefix + str(installation_id))
        if raw is None:
            return None
        try:
            return self._fernet.decrypt(raw).decode()
        except InvalidToken:
            return None

    def put(self, installation_id: int, token: str, expires_at: datetime) -> None:
        """Cache a token until ``margin`` before ``expires_at``."""
        ttl = int((expires_at - datetime.now(UTC)).total_seconds()) - self._settings.token_refresh_margin_s
        if ttl > 0:
            self._redis.set(self._prefix + str(installation_id), self._fernet.encrypt(token.encode()), ex=ttl)

    def forget(self, installation_id: int) -> None:
        """Drop a token GitHub rejected."""
        self._redis.delete(self._prefix + str(installation_id))


class InstallationTokens:
    """Installation tokens for the app: from the cache, else minted with the app's JWT."""

    def __init__(self, settings: AppSettings, cache: TokenCache, policy: RetryPolicy) -> None:
        self._settings = settings
        self._cache = cache
        self._policy = policy

    def get(self, installation_id: int, *, fresh: bool = False) -> str:
        """A token for the installation (``fresh`` skips and replaces the cached one)."""
        if not fresh:
            cached = self._cache.get(installation_id)
            if cached:
                return cached
        token, expires_at = self._mint(installation_id)
        self._cache.put(installation_id, token, expires_at)
        log.info("installation token minted", extra={"installation_id": installation_id})
        return token

    def forget(self, installation_id: int) -> None:
        """Drop the cached token (GitHub rejected it)."""
        self._cache.forget(installation_id)

    def _mint(self, installation_id: int) -> tuple[str, datetime]:
        auth = AppAuthStrategy(str(self._settings.github_app_id), self._settings.private_key_pem())

        def create() -> tuple[str, datetime]:
            with _github(self._settings, auth) as gh:
                data = gh.rest.apps.create_installation_access_token(installation_id).parsed_data
            expires = datetime.fromisoformat(data.expires_at.replace("Z", "+00:00"))
            return data.token, expires

        try:
            return self._policy.call("create installation token", create)
        except TokenRejected as exc:  # the app's own credentials: no token will fix that
            raise GitHubRefused(f"GitHub rejected the app's JWT ({exc})", 401) from exc


class GitHubClient:
    """The REST calls of one job, as one installation. Use as a context manager."""

    def __init__(self, settings: AppSettings, tokens: InstallationTokens, installation_id: int,
                 policy: RetryPolicy) -> None:
        self._settings = settings
        self._tokens = tokens
        self._installation_id = installation_id
        self._policy = policy
        self._gh: GitHub[Any] | None = None
        self._token: str | None = None

    def __enter__(self) -> GitHubClient:
        self._connect(fresh=False)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._gh is not None:
            self._gh.__exit__(None, None, None)
            self._gh = None

    def _connect(self, *, fresh: bool) -> None:
        if self._gh is not None:
            self._gh.__exit__(None, None, None)
        self._token = self._tokens.get(self._installation_id, fresh=fresh)
        self._gh = _github(self._settings, TokenAuthStrategy(self._token)).__enter__()

    @property
    def token(self) -> str:
        """The installation token (for one git fetch; never log or store it)."""
        assert self._token is not None, "use GitHubClient as a context manager"
        return self._token

    def _call(self, what: str, fn: Callable[[GitHub[Any]], T]) -> T:
        """One call with the retry policy; a 401 gets one retry with a freshly minted token."""
        try:
            return self._policy.call(what, lambda: fn(self._require()))
        except TokenRejected:
            self._tokens.forget(self._installation_id)
            self._connect(fresh=True)
            try:
                return self._policy.call(what, lambda: fn(self._require()))
            except TokenRejected as exc:
                raise GitHubRefused(str(exc), 401) from exc

    def _require(self) -> GitHub[Any]:
        assert self._gh is not None, "use GitHubClient as a context manager"
        return self._gh

    # --- the calls a job makes ---

    def repository(self, owner: str, name: str) -> FullRepository:
        """Repository metadata: default branch, html_url, size, archived."""
        return self._call("get repository", lambda gh: gh.rest.repos.get(owner, name).parsed_data)

    def file_text(self, owner: str, name: str, path: str, ref: str) -> str | None:
        """A file's text at ``ref`` via the contents API; None when it does not exist."""

        def get(gh: GitHub[Any]) -> str | None:
            try:
                data = gh.rest.repos.get_content(owner, name, path, ref=ref).parsed_data
            except RequestFailed as exc:
                if exc.response.status_code == 404:
                    return None
                raise
            if not isinstance(data, ContentFile):
                raise GitHubRefused(f"{path} is not a file", 422)
            if data.size > MAX_CONFIG_BYTES:
                raise GitHubRefused(f"{path} is larger than {MAX_CONFIG_BYTES} bytes", 413)
            return base64.b64decode(data.content).decode("utf-8", "replace")

        return self._call(f"get {path}", get)

    def issue(self, owner: str, name: str, number: int) -> Issue:
        """The issue as it is now (title, body, labels, state, lock)."""
        return self._call("get issue", lambda gh: gh.rest.issues.get(owner, name, number).parsed_data)

    def comment(self, owner: str, name: str, comment_id: int) -> IssueComment:
        """One issue comment (the `/spider` command, re-read)."""
        return self._call(
            "get comment", lambda gh: gh.rest.issues.get_comment(owner, name, comment_id).parsed_data
        )

    def comments(self, owner: str, name: str, number: int) -> Iterator[IssueComment]:
        """Every comment of the issue, oldest first, page by page."""
        for page in range(1, MAX_COMMENT_PAGES + 1):
            batch = self._call(
                "list comments",
                lambda gh, page=page: gh.rest.issues.list_comments(
                    owner, name, number, per_page=COMMENTS_PER_PAGE, page=page
                ).parsed_data,
            )
            yield from batch
            if len(batch) < COMMENTS_PER_PAGE:
                return

    def create_comment(self, owner: str, name: str, number: int, body: str) -> IssueComment:
        """Post a new comment. Not retried here: a lost answer may still have created it."""
        return self._once(
            lambda gh: gh.rest.issues.create_comment(owner, name, number, body=body).parsed_data,
        )

    def update_comment(self, owner: str, name: str, comment_id: int, body: str) -> IssueComment:
        """Replace a comment's body (idempotent, so retried)."""
        return self._call(
            "update comment",
            lambda gh: gh.rest.issues.update_comment(owner, name, comment_id, body=body).parsed_data,
        )

    def _once(self, fn: Callable[[GitHub[Any]], T]) -> T:
        """One call, no retry; errors mapped like every other call's."""
        try:
            return fn(self._require())
        except (RequestError, RateLimitExceeded) as exc:
            err = _translate(exc)
            if isinstance(err, TokenRejected):
                self._tokens.forget(self._installation_id)
            raise err from exc

    # --- the calls of a scoring job (worker/scoring.py) ---

    def pull_request(self, owner: str, name: str, number: int) -> PullRequest:
        """A pull request as it is now (merged, base commit, title, body)."""
        return self._call("get pull request",
                          lambda gh: gh.rest.pulls.get(owner, name, number).parsed_data)

    def pull_files(self, owner: str, name: str, number: int) -> list[DiffEntry]:
        """Every file of a pull request with its ``patch``, page by page."""
        out: list[DiffEntry] = []
        for page in range(1, MAX_PULL_FILE_PAGES + 1):
            batch = self._call(
                "list pull request files",
                lambda gh, page=page: gh.rest.pulls.list_files(
                    owner, name, number, per_page=COMMENTS_PER_PAGE, page=page).parsed_data,
            )
            out.extend(batch)
            if len(batch) < COMMENTS_PER_PAGE:
                break
        return out

    def pull_commit_messages(self, owner: str, name: str, number: int) -> list[str]:
        """The messages of a pull request's commits (closing keywords may be there)."""
        out: list[str] = []
        for page in range(1, MAX_PULL_COMMIT_PAGES + 1):
            batch: list[Commit] = self._call(
                "list pull request commits",
                lambda gh, page=page: gh.rest.pulls.list_commits(
                    owner, name, number, per_page=COMMENTS_PER_PAGE, page=page).parsed_data,
            )
            out.extend(c.commit.message for c in batch)
            if len(batch) < COMMENTS_PER_PAGE:
                break
        return out

    def closing_issue_numbers(self, owner: str, name: str, number: int) -> list[int] | None:
        """GraphQL ``closingIssuesReferences`` of a pull request (links made in the sidebar
        too); None when GraphQL is refused or fails: the caller falls back to keywords."""
        data = self._graphql(_CLOSING_QUERY, owner, name, number)
        try:
            nodes = data["repository"]["pullRequest"]["closingIssuesReferences"]["nodes"]
            return [int(n["number"]) for n in nodes]
        except (KeyError, TypeError, ValueError):
            return None

    def closing_pull_numbers(self, owner: str, name: str, number: int) -> list[int] | None:
        """GraphQL: the merged pull requests that closed an issue; None when unavailable."""
        data = self._graphql(_CLOSED_BY_QUERY, owner, name, number)
        try:
            nodes = data["repository"]["issue"]["closedByPullRequestsReferences"]["nodes"]
            return [int(n["number"]) for n in nodes if n.get("merged")]
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def _graphql(self, query: str, owner: str, name: str, number: int) -> Any:
        from githubkit.exception import GraphQLFailed

        variables = {"owner": owner, "name": name, "number": number, "first": CLOSING_REFS_FIRST}
        try:
            return self._call("graphql", lambda gh: gh.graphql.request(query, variables))
        except (GraphQLFailed, GitHubRefused, GitHubUnavailable, RateLimited) as exc:
            log.info("GraphQL unavailable, falling back to keywords",
                     extra={"error": f"{type(exc).__name__}: {exc}"[:200]})
            return None

