"""The REST and GraphQL calls of one job, as one installation (:class:`GitHubClient`)."""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, TypeVar

from githubkit import GitHub, TokenAuthStrategy
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

from contract.settings import AppSettings
from worker.errors import GitHubRefused, GitHubUnavailable, RateLimited, TokenRejected
from worker.github.retry import RetryPolicy, translate
from worker.github.tokens import InstallationTokens
from worker.github.transport import github_api

log = logging.getLogger(__name__)
T = TypeVar("T")

COMMENTS_PER_PAGE = 100  # GitHub's maximum page size
MAX_COMMENT_PAGES = 50  # 5000 comments: past that the issue is not one to triage
MAX_PULL_FILE_PAGES = 30  # GitHub lists at most 3000 files of a pull request
MAX_PULL_COMMIT_PAGES = 3  # GitHub lists at most 250 commits of a pull request
CLOSING_REFS_FIRST = 25  # closing references read through GraphQL, per pull request or issue
MAX_CONFIG_BYTES = 64 * 1024  # a settings file; anything bigger is a mistake
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
        self._gh = github_api(self._settings, TokenAuthStrategy(self._token)).__enter__()

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

    def installation_created_at(self) -> datetime:
        """When this installation was created (the app's JWT, not the token)."""
        return self._tokens.installation_created_at(self._installation_id)

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
            err = translate(exc)
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
