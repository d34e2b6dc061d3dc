"""A fake GitHub REST API on 127.0.0.1 for the end-to-end tests and the replay command.

It implements what the worker calls (installation token, repository, contents, issue,
comments list/get/create/update) with GitHub-shaped bodies that githubkit's models
validate, checks the app's JWT against its public key and the installation token on
every other call, records every request (and every credential it was shown), and can
inject failures for the next matching requests: any status with any headers (a 500, a 403
secondary rate limit with ``retry-after``, a 429 without one), a delay longer than the
client's timeout, or a real answer that is lost on the way back. File contents are read
from the local git repository registered for each repository.

It also plays GitHub's side of the app's webhook: :meth:`FakeGitHub.send_webhook` signs and
POSTs a delivery to the app's URL and records it as GitHub does (id, guid, status code,
duration), ``GET /app/hook/deliveries`` lists those records (newest first, cursor pages via
``Link``), and ``POST /app/hook/deliveries/{id}/attempts`` answers 202 and then sends the
recorded payload again, signed with the current secret, with the same ``X-GitHub-Delivery``
guid, as a new delivery marked ``redelivery``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import re
import secrets
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import jwt
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint

HTML_ROOT = "https://github.com"
TOKEN_TTL = timedelta(hours=1)  # what GitHub gives installation tokens
_REPO_URL_FIELDS = (
    "archive", "assignees", "blobs", "branches", "collaborators", "comments", "commits",
    "compare", "contents", "contributors", "deployments", "downloads", "events", "forks",
    "git_commits", "git_refs", "git_tags", "issue_comment", "issue_events", "issues", "keys",
    "labels", "languages", "merges", "milestones", "notifications", "pulls", "releases",
    "stargazers", "statuses", "subscribers", "subscription", "tags", "teams", "trees", "hooks",
)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class FakeRepo:
    """A repository the fake serves, backed by a local git repository."""

    full_name: str
    path: Path
    default_branch: str
    id: int
    size_kb: int | None = None  # what GitHub reports; None: the packed size of the origin


@dataclass
class FakeIssue:
    """An issue (or, with ``pull_request``, a pull request) in a fake repository."""

    repo: str
    number: int
    title: str
    body: str | None
    user: str = "octocat"
    user_type: str = "User"
    labels: list[str] = field(default_factory=list)
    state: str = "open"
    locked: bool = False
    pull_request: bool = False


@dataclass
class FakeComment:
    """A comment on an issue; ``app_id`` is set on comments the app posted."""

    repo: str
    issue: int
    id: int
    body: str
    user: str
    user_type: str = "User"
    association: str = "NONE"
    app_id: int | None = None
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)


@dataclass
class FakePull:
    """A pull request: its files (REST ``DiffEntry`` fields: ``filename``, ``status``,
    ``patch``, ``previous_filename``), commit messages and, when set, what GraphQL's
    ``closingIssuesReferences`` lists (None: GraphQL refuses, as for a token without it)."""

    repo: str
    number: int
    title: str
    body: str | None
    base_sha: str
    head_sha: str
    merged: bool = True
    state: str = "closed"
    files: list[dict[str, Any]] = field(default_factory=list)
    commits: list[str] = field(default_factory=list)
    closing_issues: list[int] | None = None
    user: str = "contributor"


def files_from_diff(diff: str) -> list[dict[str, Any]]:
    """A git diff split into REST pull-request files (``filename``, ``status``, ``patch``)."""
    out: list[dict[str, Any]] = []
    for chunk in re.split(r"(?m)^(?=diff --git )", diff):
        if not chunk.startswith("diff --git "):
            continue
        old = re.search(r"(?m)^--- (?:a/)?(.+?)\t?$", chunk)
        new = re.search(r"(?m)^\+\+\+ (?:b/)?(.+?)\t?$", chunk)
        at = chunk.find("\n@@")
        old_path = old.group(1) if old else None
        new_path = new.group(1) if new else None
        status = "modified"
        if old_path == "/dev/null":
            status, old_path = "added", None
        elif new_path == "/dev/null":
            status, new_path = "removed", None
        elif old_path != new_path:
            status = "renamed"
        entry: dict[str, Any] = {"filename": new_path or old_path, "status": status}
        if at >= 0:
            entry["patch"] = chunk[at + 1:].rstrip("\n")
        if status == "renamed":
            entry["previous_filename"] = old_path
        out.append(entry)
    return out


@dataclass
class Injection:
    """Answer the next ``times`` requests matching method and path with this response."""

    method: str
    path: re.Pattern[str]
    status: int | None  # None: the real answer (after ``delay_s``)
    headers: dict[str, str]
    body: dict[str, Any]
    times: int
    apply: bool  # run the real handler first (the change happens, the answer is lost)
    delay_s: float = 0.0  # wait this long before answering (past the client's timeout)


@dataclass
class FakeDelivery:
    """One webhook delivery the fake sent to the app, recorded as GitHub records it."""

    id: int
    guid: str
    event: str
    action: str | None
    installation_id: int | None
    repository_id: int | None
    body: bytes
    redelivery: bool
    delivered_at: str
    duration: float = 0.0
    status_code: int = 0  # 0: no HTTP answer (refused, timed out)
    status: str = ""
    answer: dict[str, Any] | None = None  # the app's JSON answer, when it gave one

    @property
    def ok(self) -> bool:
        """Whether the app answered 2xx."""
        return 200 <= self.status_code < 300

    def item_json(self) -> dict[str, Any]:
        """The shape of one item of ``GET /app/hook/deliveries``."""
        return {
            "id": self.id, "guid": self.guid, "delivered_at": self.delivered_at,
            "redelivery": self.redelivery, "duration": self.duration, "status": self.status,
            "status_code": self.status_code, "event": self.event, "action": self.action,
            "installation_id": self.installation_id, "repository_id": self.repository_id,
            "throttled_at": None,
        }


@dataclass(frozen=True)
class Call:
    """One request the fake received (``at``: when it arrived; it is listed once answered)."""

    method: str
    path: str
    status: int
    at: float


class FakeGitHub:
    """State and FastAPI app of the fake API. Thread-safe; run it with :meth:`serve`."""

    def __init__(self, *, app_id: int, public_key_pem: str, installation_id: int = 1,
                 app_slug: str = "spider-bot", token_style: str = "ghs") -> None:
        self.app_id = app_id
        self.installation_id = installation_id
        self.app_slug = app_slug
        # "ghs": today's ghs_... tokens; "v1": GitHub Enterprise's older v1.<40 hex> ones,
        # which no pattern can recognise in a log line (only not logging them helps)
        self.token_style = token_style
        self.credentials: set[str] = set()  # every Authorization header value it was shown
        self._public_key = public_key_pem
        self._lock = threading.RLock()
        self.repos: dict[str, FakeRepo] = {}
        self.issues: dict[tuple[str, int], FakeIssue] = {}
        self.comments: dict[int, FakeComment] = {}
        self.pulls: dict[tuple[str, int], FakePull] = {}
        self.calls: list[Call] = []
        self._injections: list[Injection] = []
        self._tokens: dict[str, float] = {}
        self._next_id = 1000
        # the app's webhook, as registered on GitHub (the dev stack sets them)
        self.webhook_url = ""
        self.webhook_secret = ""
        self.webhook_timeout_s = 10.0  # GitHub gives up on an answer after 10 s
        self.deliveries: list[FakeDelivery] = []
        self._next_delivery_id = 90_000_000
        self._redelivery_threads: list[threading.Thread] = []
        self.base_url = ""  # set by serve()
        self.app = self._build_app()

    # --- test control ---

    def add_repo(self, full_name: str, path: str | Path, default_branch: str | None = None) -> FakeRepo:
        """Serve ``full_name`` from the local git repository at ``path``."""
        path = Path(path).resolve()
        branch = default_branch or _git(path, "symbolic-ref", "--short", "HEAD").strip()
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

    # --- the app's webhook ---

    def send_webhook(self, event: str, payload: dict[str, Any] | bytes, *,
                     guid: str | None = None, secret: str | None = None,
                     redelivery: bool = False) -> httpx.Response:
        """Sign and POST a delivery to the app's webhook URL and record it as GitHub does.
        ``secret`` overrides the registered one (a wrong signature); transport errors are
        recorded with status code 0 and raised."""
        if not self.webhook_url:
            raise RuntimeError("no webhook URL registered on the fake")
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        guid = guid or str(uuid.uuid4())
        key = (secret if secret is not None else self.webhook_secret).encode()
        headers = {
            "content-type": "application/json",
            "x-github-event": event,
            "x-github-delivery": guid,
            "x-github-hook-installation-target-type": "integration",
            "x-hub-signature-256": "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest(),
            "user-agent": "GitHub-Hookshot/fake",
        }
        meta = _delivery_meta(body)
        with self._lock:
            self._next_delivery_id += 1
            record = FakeDelivery(self._next_delivery_id, guid, event, meta[0], meta[1], meta[2],
                                  body, redelivery, _now())
        started = time.perf_counter()
        try:
            response = httpx.post(self.webhook_url, content=body, headers=headers,
                                  timeout=self.webhook_timeout_s)
        except httpx.HTTPError as exc:
            record.status = ("timed out" if isinstance(exc, httpx.TimeoutException)
                             else "failed to connect to host")
            raise
        else:
            record.status_code = response.status_code
            record.status = ("OK" if record.ok
                             else f"Invalid HTTP Response: {response.status_code}")
            with contextlib.suppress(ValueError):
                answer = response.json()
                record.answer = answer if isinstance(answer, dict) else None
            return response
        finally:
            record.duration = round(time.perf_counter() - started, 3)
            with self._lock:
                self.deliveries.append(record)

    def deliveries_of(self, guid: str) -> list[FakeDelivery]:
        """Every attempt of one delivery (the first and its redeliveries), oldest first."""
        with self._lock:
            return [d for d in self.deliveries if d.guid == guid]

    def redeliver(self, delivery_id: int) -> bool:
        """What ``POST /app/hook/deliveries/{id}/attempts`` does: send the recorded payload
        again in the background; False when no such delivery was recorded."""
        with self._lock:
            original = next((d for d in self.deliveries if d.id == delivery_id), None)
        if original is None:
            return False

        def send() -> None:
            with contextlib.suppress(httpx.HTTPError):  # recorded as failed
                self.send_webhook(original.event, original.body, guid=original.guid,
                                  redelivery=True)

        thread = threading.Thread(target=send, daemon=True, name=f"redeliver-{delivery_id}")
        with self._lock:
            self._redelivery_threads = [t for t in self._redelivery_threads if t.is_alive()]
            self._redelivery_threads.append(thread)
        thread.start()
        return True

    def wait_for_redeliveries(self, timeout_s: float = 30.0) -> None:
        """Wait until every redelivery asked for so far has been sent and answered."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            threads = list(self._redelivery_threads)
        for t in threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))

    # --- GitHub-shaped bodies ---

    def _user(self, login: str, kind: str = "User") -> dict[str, Any]:
        api = f"{self.base_url}/users/{login}"
        return {
            "login": login, "id": int(hashlib.sha1(login.encode()).hexdigest()[:6], 16),
            "node_id": "U_" + login, "avatar_url": f"{HTML_ROOT}/{login}.png", "gravatar_id": "",
            "url": api, "html_url": f"{HTML_ROOT}/{login}", "followers_url": api + "/followers",
            "following_url": api + "/following{/other_user}", "gists_url": api + "/gists{/gist_id}",
            "starred_url": api + "/starred{/owner}{/repo}", "subscriptions_url": api + "/subscriptions",
            "organizations_url": api + "/orgs", "repos_url": api + "/repos",
            "events_url": api + "/events{/privacy}", "received_events_url": api + "/received_events",
            "type": kind, "site_admin": False,
        }

    def _app_json(self) -> dict[str, Any]:
        return {
            "id": self.app_id, "slug": self.app_slug, "node_id": "A_1", "owner": self._user("spider-org", "Organization"),
            "name": "spider-bot", "description": "", "external_url": "https://example.invalid",
            "html_url": f"{HTML_ROOT}/apps/{self.app_slug}", "created_at": _now(), "updated_at": _now(),
            "permissions": {"issues": "write", "contents": "read", "metadata": "read",
                            "pull_requests": "read"},
            "events": ["issues", "issue_comment", "pull_request"],
        }

    def _repo_json(self, repo: FakeRepo) -> dict[str, Any]:
        owner, name = repo.full_name.split("/")
        api = f"{self.base_url}/repos/{repo.full_name}"
        size_kb = repo.size_kb if repo.size_kb is not None else _packed_kb(repo.path)
        body: dict[str, Any] = {
            "id": repo.id, "node_id": f"R_{repo.id}", "name": name, "full_name": repo.full_name,
            "owner": self._user(owner, "Organization"), "private": False,
            "html_url": f"{HTML_ROOT}/{repo.full_name}", "description": None, "fork": False,
            "url": api, "git_url": f"git://github.com/{repo.full_name}.git",
            "ssh_url": f"git@github.com:{repo.full_name}.git",
            "clone_url": f"{HTML_ROOT}/{repo.full_name}.git", "svn_url": f"{HTML_ROOT}/{repo.full_name}",
            "mirror_url": None, "homepage": None, "language": "Python", "forks_count": 0,
            "stargazers_count": 0, "watchers_count": 0, "size": size_kb,
            "default_branch": repo.default_branch, "open_issues_count": 0, "has_issues": True,
            "has_projects": False, "has_wiki": False, "has_pages": False, "has_discussions": False,
            "archived": False, "disabled": False, "pushed_at": _now(), "created_at": _now(),
            "updated_at": _now(), "subscribers_count": 0, "network_count": 0, "license": None,
            "forks": 0, "open_issues": 0, "watchers": 0,
        }
        for key in _REPO_URL_FIELDS:
            body[f"{key}_url"] = f"{api}/{key}"
        return body

    def _issue_json(self, issue: FakeIssue) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{issue.repo}/issues/{issue.number}"
        body: dict[str, Any] = {
            "id": 10_000 + issue.number, "node_id": f"I_{issue.number}", "url": api,
            "repository_url": f"{self.base_url}/repos/{issue.repo}", "labels_url": api + "/labels{/name}",
            "comments_url": api + "/comments", "events_url": api + "/events",
            "html_url": f"{HTML_ROOT}/{issue.repo}/issues/{issue.number}", "number": issue.number,
            "state": issue.state, "title": issue.title, "body": issue.body,
            "user": self._user(issue.user, issue.user_type),
            "labels": [{"id": i + 1, "node_id": f"L_{i}", "url": f"{api}/labels/{n}", "name": n,
                        "description": None, "color": "ededed", "default": False}
                       for i, n in enumerate(issue.labels)],
            "milestone": None, "locked": issue.locked, "comments": len(self.comments_on(issue.repo, issue.number)),
            "closed_at": None, "created_at": _now(), "updated_at": _now(), "author_association": "NONE",
        }
        if issue.pull_request:
            body["pull_request"] = {"url": api.replace("/issues/", "/pulls/"), "html_url": None,
                                    "diff_url": None, "patch_url": None}
        return body

    def _pull_json(self, pr: FakePull) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{pr.repo}/pulls/{pr.number}"
        issue_api = f"{self.base_url}/repos/{pr.repo}/issues/{pr.number}"
        html = f"{HTML_ROOT}/{pr.repo}/pull/{pr.number}"
        repo = self.repos.get(pr.repo)
        repo_json = self._repo_json(repo) if repo else None
        owner = pr.repo.split("/")[0]

        def end(ref: str, sha: str) -> dict[str, Any]:
            return {"label": f"{owner}:{ref}", "ref": ref, "sha": sha, "repo": repo_json,
                    "user": self._user(owner, "Organization")}

        link = {"href": api}
        closed = _now() if pr.state == "closed" else None
        additions = sum(str(f.get("patch", "")).count("\n+") for f in pr.files)
        deletions = sum(str(f.get("patch", "")).count("\n-") for f in pr.files)
        return {
            "url": api, "id": 50_000 + pr.number, "node_id": f"PR_{pr.number}", "html_url": html,
            "diff_url": html + ".diff", "patch_url": html + ".patch", "issue_url": issue_api,
            "commits_url": api + "/commits", "review_comments_url": api + "/comments",
            "review_comment_url": f"{self.base_url}/repos/{pr.repo}/pulls/comments{{/number}}",
            "comments_url": issue_api + "/comments",
            "statuses_url": f"{self.base_url}/repos/{pr.repo}/statuses/{pr.head_sha}",
            "number": pr.number, "state": pr.state, "locked": False, "title": pr.title,
            "user": self._user(pr.user), "body": pr.body, "labels": [], "milestone": None,
            "active_lock_reason": None, "created_at": _now(), "updated_at": _now(),
            "closed_at": closed, "merged_at": closed if pr.merged else None,
            "merge_commit_sha": pr.head_sha if pr.merged else None, "assignee": None,
            "assignees": [], "requested_reviewers": [], "requested_teams": [],
            "head": end(f"fix-{pr.number}", pr.head_sha),
            "base": end(repo.default_branch if repo else "main", pr.base_sha),
            "_links": {"self": link, "html": {"href": html}, "issue": {"href": issue_api},
                       "comments": {"href": issue_api + "/comments"},
                       "review_comments": {"href": api + "/comments"},
                       "review_comment": {"href": api + "/comments{/number}"},
                       "commits": {"href": api + "/commits"},
                       "statuses": {"href": f"{self.base_url}/repos/{pr.repo}/statuses/{pr.head_sha}"}},
            "author_association": "CONTRIBUTOR", "auto_merge": None, "draft": False,
            "merged": pr.merged, "mergeable": None, "rebaseable": None,
            "mergeable_state": "unknown", "merged_by": self._user("maintainer") if pr.merged else None,
            "comments": 0, "review_comments": 0, "maintainer_can_modify": False,
            "commits": len(pr.commits), "additions": additions, "deletions": deletions,
            "changed_files": len(pr.files),
        }

    def _pull_file_json(self, pr: FakePull, f: dict[str, Any]) -> dict[str, Any]:
        name = str(f["filename"])
        sha = hashlib.sha1(f"{pr.number}:{name}".encode()).hexdigest()
        patch = f.get("patch")
        body: dict[str, Any] = {
            "sha": sha, "filename": name, "status": f.get("status", "modified"),
            "additions": str(patch or "").count("\n+"), "deletions": str(patch or "").count("\n-"),
            "changes": str(patch or "").count("\n+") + str(patch or "").count("\n-"),
            "blob_url": f"{HTML_ROOT}/{pr.repo}/blob/{pr.head_sha}/{name}",
            "raw_url": f"{HTML_ROOT}/{pr.repo}/raw/{pr.head_sha}/{name}",
            "contents_url": f"{self.base_url}/repos/{pr.repo}/contents/{name}?ref={pr.head_sha}",
        }
        if patch is not None:
            body["patch"] = patch
        if f.get("previous_filename"):
            body["previous_filename"] = f["previous_filename"]
        return body

    def _pull_commit_json(self, pr: FakePull, i: int, message: str) -> dict[str, Any]:
        sha = hashlib.sha1(f"{pr.repo}#{pr.number}/{i}".encode()).hexdigest()
        api = f"{self.base_url}/repos/{pr.repo}/commits/{sha}"
        who = {"name": pr.user, "email": f"{pr.user}@example.invalid", "date": _now()}
        return {
            "url": api, "sha": sha, "node_id": f"C_{sha[:8]}",
            "html_url": f"{HTML_ROOT}/{pr.repo}/commit/{sha}", "comments_url": api + "/comments",
            "commit": {"url": api, "author": who, "committer": who, "message": message,
                       "comment_count": 0,
                       "tree": {"sha": sha, "url": f"{self.base_url}/repos/{pr.repo}/git/trees/{sha}"}},
            "author": self._user(pr.user), "committer": self._user(pr.user),
            "parents": [],
        }

    def _comment_json(self, c: FakeComment) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{c.repo}/issues/comments/{c.id}"
        body: dict[str, Any] = {
            "id": c.id, "node_id": f"IC_{c.id}", "url": api, "body": c.body,
            "html_url": f"{HTML_ROOT}/{c.repo}/issues/{c.issue}#issuecomment-{c.id}",
            "user": self._user(c.user, c.user_type), "created_at": c.created_at,
            "updated_at": c.updated_at,
            "issue_url": f"{self.base_url}/repos/{c.repo}/issues/{c.issue}",
            "author_association": c.association,
        }
        if c.app_id is not None:
            body["performed_via_github_app"] = self._app_json()
        return body

    # --- the API ---

    def _build_app(self) -> FastAPI:
        app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
        app.add_middleware(_Recorder, fake=self)

        def not_found() -> JSONResponse:
            return JSONResponse({"message": "Not Found",
                                 "documentation_url": "https://docs.github.com/rest"}, 404)

        @app.post("/app/installations/{installation_id}/access_tokens")
        async def access_token(installation_id: int, request: Request) -> JSONResponse:
            if not self._jwt_ok(request.headers.get("authorization", "")):
                return JSONResponse({"message": "A JSON web token could not be decoded"}, 401)
            if installation_id != self.installation_id:
                return not_found()
            if self.token_style == "v1":
                token = "v1." + secrets.token_hex(20)
            else:
                token = "ghs_" + secrets.token_urlsafe(27).replace("-", "a").replace("_", "b")
            expires = datetime.now(UTC) + TOKEN_TTL
            with self._lock:
                self._tokens[token] = expires.timestamp()
            return JSONResponse({
                "token": token, "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "permissions": {"issues": "write", "contents": "read", "metadata": "read"},
                "repository_selection": "all",
            }, 201)

        @app.get("/app/hook/deliveries")
        async def list_deliveries(request: Request, per_page: int = 30,
                                  cursor: str | None = None) -> JSONResponse:
            if not self._jwt_ok(request.headers.get("authorization", "")):
                return JSONResponse({"message": "A JSON web token could not be decoded"}, 401)
            per_page = max(1, min(per_page, 100))
            with self._lock:
                newest_first = sorted(self.deliveries, key=lambda d: d.id, reverse=True)
            if cursor:  # opaque to clients: here, the id of the last item already shown
                if not cursor.isdigit():
                    return JSONResponse({"message": "Validation Failed"}, 422)
                newest_first = [d for d in newest_first if d.id < int(cursor)]
            chunk = newest_first[:per_page]
            headers = {}
            if len(newest_first) > per_page:
                nxt = (f"{self.base_url}/app/hook/deliveries?per_page={per_page}"
                       f"&cursor={quote(str(chunk[-1].id))}")
                headers["link"] = f'<{nxt}>; rel="next"'
            return JSONResponse([d.item_json() for d in chunk], headers=headers)

        @app.post("/app/hook/deliveries/{delivery_id}/attempts")
        async def redeliver(delivery_id: int, request: Request) -> JSONResponse:
            if not self._jwt_ok(request.headers.get("authorization", "")):
                return JSONResponse({"message": "A JSON web token could not be decoded"}, 401)
            return JSONResponse({}, 202) if self.redeliver(delivery_id) else not_found()

        @app.get("/repos/{owner}/{name}")
        async def get_repo(owner: str, name: str) -> JSONResponse:
            repo = self.repos.get(f"{owner}/{name}")
            return JSONResponse(self._repo_json(repo)) if repo else not_found()

        @app.get("/repos/{owner}/{name}/contents/{path:path}")
        async def get_content(owner: str, name: str, path: str, ref: str | None = None) -> JSONResponse:
            repo = self.repos.get(f"{owner}/{name}")
            if repo is None:
                return not_found()
            rev = ref or repo.default_branch
            try:
                data = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=repo.path, check=True,
                                      capture_output=True).stdout
                sha = _git(repo.path, "rev-parse", f"{rev}:{path}").strip()
            except subprocess.CalledProcessError:
                return not_found()
            api = f"{self.base_url}/repos/{repo.full_name}/contents/{path}?ref={rev}"
            html = f"{HTML_ROOT}/{repo.full_name}/blob/{rev}/{path}"
            git_url = f"{self.base_url}/repos/{repo.full_name}/git/blobs/{sha}"
            return JSONResponse({
                "type": "file", "encoding": "base64", "size": len(data), "name": path.rsplit("/", 1)[-1],
                "path": path, "content": base64.encodebytes(data).decode(), "sha": sha, "url": api,
                "git_url": git_url, "html_url": html, "download_url": None,
                "_links": {"self": api, "git": git_url, "html": html},
            })

        @app.get("/repos/{owner}/{name}/issues/comments/{comment_id}")
        async def get_comment(owner: str, name: str, comment_id: int) -> JSONResponse:
            c = self.comments.get(comment_id)
            if c is None or c.repo != f"{owner}/{name}":
                return not_found()
            return JSONResponse(self._comment_json(c))

        @app.patch("/repos/{owner}/{name}/issues/comments/{comment_id}")
        async def update_comment(owner: str, name: str, comment_id: int, request: Request) -> JSONResponse:
            data = await request.json()
            with self._lock:
                c = self.comments.get(comment_id)
                if c is None or c.repo != f"{owner}/{name}":
                    return not_found()
                c.body = str(data["body"])
                c.updated_at = _now()
                return JSONResponse(self._comment_json(c))

        def page_of(request: Request, items: list[Any], page: int,
                    per_page: int) -> tuple[list[Any], dict[str, str]]:
            per_page = max(1, min(per_page, 100))
            chunk = items[(page - 1) * per_page: page * per_page]
            headers = {}
            if page * per_page < len(items):
                nxt = request.url.include_query_params(page=page + 1, per_page=per_page)
                headers["link"] = f'<{nxt}>; rel="next"'
            return chunk, headers

        @app.get("/repos/{owner}/{name}/pulls/{number}")
        async def get_pull(owner: str, name: str, number: int) -> JSONResponse:
            pr = self.pulls.get((f"{owner}/{name}", number))
            return JSONResponse(self._pull_json(pr)) if pr else not_found()

        @app.get("/repos/{owner}/{name}/pulls/{number}/files")
        async def list_pull_files(owner: str, name: str, number: int, request: Request,
                                  page: int = 1, per_page: int = 30) -> JSONResponse:
            pr = self.pulls.get((f"{owner}/{name}", number))
            if pr is None:
                return not_found()
            chunk, headers = page_of(request, pr.files, page, per_page)
            return JSONResponse([self._pull_file_json(pr, f) for f in chunk], headers=headers)

        @app.get("/repos/{owner}/{name}/pulls/{number}/commits")
        async def list_pull_commits(owner: str, name: str, number: int, request: Request,
                                    page: int = 1, per_page: int = 30) -> JSONResponse:
            pr = self.pulls.get((f"{owner}/{name}", number))
            if pr is None:
                return not_found()
            numbered = list(enumerate(pr.commits))
            chunk, headers = page_of(request, numbered, page, per_page)
            return JSONResponse([self._pull_commit_json(pr, i, m) for i, m in chunk],
                                headers=headers)

        @app.post("/graphql")
        async def graphql(request: Request) -> JSONResponse:
            data = await request.json()
            v = data.get("variables") or {}
            repo = f"{v.get('owner')}/{v.get('name')}"
            query = str(data.get("query", ""))
            refused = {"data": None, "errors": [{"type": "FORBIDDEN",
                                                 "message": "Resource not accessible by integration"}]}
            if "closingIssuesReferences" in query:
                pr = self.pulls.get((repo, int(v.get("number", 0))))
                if pr is None or pr.closing_issues is None:
                    return JSONResponse(refused)
                nodes = [{"number": n} for n in pr.closing_issues]
                return JSONResponse({"data": {"repository": {"pullRequest": {
                    "closingIssuesReferences": {"nodes": nodes}}}}})
            if "closedByPullRequestsReferences" in query:
                number = int(v.get("number", 0))
                found = [p for p in self.pulls.values() if p.repo == repo
                         and p.closing_issues is not None and number in p.closing_issues]
                if not found:
                    return JSONResponse(refused)
                nodes = [{"number": p.number, "merged": p.merged} for p in found]
                return JSONResponse({"data": {"repository": {"issue": {
                    "closedByPullRequestsReferences": {"nodes": nodes}}}}})
            return JSONResponse(refused)

        @app.get("/repos/{owner}/{name}/issues/{number}")
        async def get_issue(owner: str, name: str, number: int) -> JSONResponse:
            issue = self.issues.get((f"{owner}/{name}", number))
            return JSONResponse(self._issue_json(issue)) if issue else not_found()

        @app.get("/repos/{owner}/{name}/issues/{number}/comments")
        async def list_comments(owner: str, name: str, number: int, request: Request,
                                page: int = 1, per_page: int = 30) -> JSONResponse:
            if (f"{owner}/{name}", number) not in self.issues:
                return not_found()
            every = self.comments_on(f"{owner}/{name}", number)
            per_page = max(1, min(per_page, 100))
            chunk = every[(page - 1) * per_page: page * per_page]
            headers = {}
            if page * per_page < len(every):
                nxt = request.url.include_query_params(page=page + 1, per_page=per_page)
                headers["link"] = f'<{nxt}>; rel="next"'
            return JSONResponse([self._comment_json(c) for c in chunk], headers=headers)

        @app.post("/repos/{owner}/{name}/issues/{number}/comments")
        async def create_comment(owner: str, name: str, number: int, request: Request) -> JSONResponse:
            data = await request.json()
            with self._lock:
                if (f"{owner}/{name}", number) not in self.issues:
                    return not_found()
                c = FakeComment(f"{owner}/{name}", number, self._new_id(), str(data["body"]),
                                user=f"{self.app_slug}[bot]", user_type="Bot", association="NONE",
                                app_id=self.app_id)
                self.comments[c.id] = c
                return JSONResponse(self._comment_json(c), 201)

        return app

    def _jwt_ok(self, header: str) -> bool:
        if not header.lower().startswith("bearer "):
            return False
        try:
            claims = jwt.decode(header[7:], self._public_key, algorithms=["RS256"],
                                options={"require": ["iat", "exp", "iss"]}, leeway=90)
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
        """The injection to apply to this request, if one matches (used up as it goes)."""
        with self._lock:
            for inj in self._injections:
                if inj.times > 0 and inj.method == method and inj.path.search(path):
                    inj.times -= 1
                    return inj
        return None

    # --- serving ---

    @contextmanager
    def serve(self, host: str = "127.0.0.1") -> Iterator[str]:
        """Serve on a free loopback port in a thread; yields the base URL."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, 0))
        self.base_url = f"http://{host}:{sock.getsockname()[1]}"
        server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", lifespan="off"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the fake GitHub server did not start")
            time.sleep(0.01)
        try:
            yield self.base_url
        finally:
            server.should_exit = True
            thread.join(timeout=5)
            sock.close()


class _Recorder(BaseHTTPMiddleware):
    """Records each call, checks the installation token, applies injected failures."""

    def __init__(self, app: Any, fake: FakeGitHub) -> None:
        super().__init__(app)
        self.fake = fake

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        method, path = request.method, request.url.path
        arrived = time.time()
        auth = request.headers.get("authorization")
        if auth:
            with self.fake._lock:
                self.fake.credentials.add(auth)
        inj = self.fake.take_injection(method, path)
        if inj is not None and inj.delay_s:
            await asyncio.sleep(inj.delay_s)
        if inj is not None and inj.status is None:
            inj = None  # a delay only: the real answer follows
        response: Response
        if inj is not None and not inj.apply:
            response = JSONResponse(inj.body, inj.status, headers=inj.headers)
        elif not path.startswith("/app/") and not self.fake.token_ok(
            request.headers.get("authorization", "")
        ):
            response = JSONResponse({"message": "Bad credentials"}, 401)
        else:
            response = await call_next(request)
            if inj is not None:
                response = JSONResponse(inj.body, inj.status, headers=inj.headers)
        with self.fake._lock:
            self.fake.calls.append(Call(method, path, response.status_code, arrived))
        return response


def _delivery_meta(body: bytes) -> tuple[str | None, int | None, int | None]:
    """(action, installation id, repository id) of a payload, as GitHub lists them."""
    try:
        data = json.loads(body)
    except ValueError:
        return None, None, None
    if not isinstance(data, dict):
        return None, None, None

    def ident(key: str) -> int | None:
        value = data.get(key)
        found = value.get("id") if isinstance(value, dict) else None
        return found if isinstance(found, int) else None

    action = data.get("action")
    return (action if isinstance(action, str) else None), ident("installation"), ident("repository")


def _packed_kb(path: Path) -> int:
    """The repository's size as GitHub measures it, roughly: its objects, in KB."""
    out = _git(path, "count-objects", "-v")
    sizes = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    return int(sizes.get("size-pack", "0")) + int(sizes.get("size", "0"))


def _git(path: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=path, check=True, capture_output=True, text=True).stdout
