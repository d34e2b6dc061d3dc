"""GitHub-shaped JSON bodies of the fake's objects, complete enough for githubkit's models."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from spider_devkit.fake_github.git import packed_kb
from spider_devkit.fake_github.records import FakeComment, FakeIssue, FakePull, FakeRepo, now
from spider_devkit.fake_github.state import GitHubState

HTML_ROOT = "https://github.com"
ISSUE_ID_BASE = 10_000  # an issue's id is this plus its number
PULL_ID_BASE = 50_000  # a pull request's id is this plus its number
USER_ID_HEX_DIGITS = 6  # a user's id: this many hex digits of the SHA-1 of the login
_REPO_URL_FIELDS = (
    "archive", "assignees", "blobs", "branches", "collaborators", "comments", "commits",
    "compare", "contents", "contributors", "deployments", "downloads", "events", "forks",
    "git_commits", "git_refs", "git_tags", "issue_comment", "issue_events", "issues", "keys",
    "labels", "languages", "merges", "milestones", "notifications", "pulls", "releases",
    "stargazers", "statuses", "subscribers", "subscription", "tags", "teams", "trees", "hooks",
)


def user_json(fake: GitHubState, login: str, kind: str = "User") -> dict[str, Any]:
    """A user (or organization, or bot) named ``login``."""
    api = f"{fake.base_url}/users/{login}"
    return {
        "login": login, "id": int(hashlib.sha1(login.encode()).hexdigest()[:USER_ID_HEX_DIGITS], 16),
        "node_id": "U_" + login, "avatar_url": f"{HTML_ROOT}/{login}.png", "gravatar_id": "",
        "url": api, "html_url": f"{HTML_ROOT}/{login}", "followers_url": api + "/followers",
        "following_url": api + "/following{/other_user}", "gists_url": api + "/gists{/gist_id}",
        "starred_url": api + "/starred{/owner}{/repo}", "subscriptions_url": api + "/subscriptions",
        "organizations_url": api + "/orgs", "repos_url": api + "/repos",
        "events_url": api + "/events{/privacy}", "received_events_url": api + "/received_events",
        "type": kind, "site_admin": False,
    }


def app_json(fake: GitHubState) -> dict[str, Any]:
    """The GitHub App (``performed_via_github_app`` of its comments)."""
    return {
        "id": fake.app_id, "slug": fake.app_slug, "node_id": "A_1",
        "owner": user_json(fake, "spider-org", "Organization"),
        "name": "spider-bot", "description": "", "external_url": "https://example.invalid",
        "html_url": f"{HTML_ROOT}/apps/{fake.app_slug}", "created_at": now(), "updated_at": now(),
        "permissions": {"issues": "write", "contents": "read", "metadata": "read",
                        "pull_requests": "read"},
        "events": ["issues", "issue_comment", "pull_request"],
    }


def installation_json(fake: GitHubState) -> dict[str, Any]:
    """The app's installation (``GET /app/installations/{id}``): ``created_at`` is when
    the app came to its repositories (``GitHubState.installation_created_at``)."""
    account = user_json(fake, "acme", "Organization")
    return {
        "id": fake.installation_id, "account": account, "repository_selection": "all",
        "access_tokens_url": f"{fake.base_url}/app/installations/{fake.installation_id}/access_tokens",
        "repositories_url": f"{fake.base_url}/installation/repositories",
        "html_url": f"{HTML_ROOT}/organizations/acme/settings/installations/{fake.installation_id}",
        "app_id": fake.app_id, "app_slug": fake.app_slug, "target_id": account["id"],
        "target_type": "Organization",
        "permissions": {"issues": "write", "contents": "read", "metadata": "read",
                        "pull_requests": "read"},
        "events": ["issues", "issue_comment", "pull_request", "push"],
        "created_at": fake.installation_created_at, "updated_at": fake.installation_created_at,
        "single_file_name": None, "has_multiple_single_files": False, "single_file_paths": [],
        "suspended_by": None, "suspended_at": None,
    }


def repo_json(fake: GitHubState, repo: FakeRepo) -> dict[str, Any]:
    """A full repository (``GET /repos/{owner}/{name}``)."""
    owner, name = repo.full_name.split("/")
    api = f"{fake.base_url}/repos/{repo.full_name}"
    size_kb = repo.size_kb if repo.size_kb is not None else packed_kb(repo.path)
    body: dict[str, Any] = {
        "id": repo.id, "node_id": f"R_{repo.id}", "name": name, "full_name": repo.full_name,
        "owner": user_json(fake, owner, "Organization"), "private": False,
        "html_url": f"{HTML_ROOT}/{repo.full_name}", "description": None, "fork": False,
        "url": api, "git_url": f"git://github.com/{repo.full_name}.git",
        "ssh_url": f"git@github.com:{repo.full_name}.git",
        "clone_url": f"{HTML_ROOT}/{repo.full_name}.git", "svn_url": f"{HTML_ROOT}/{repo.full_name}",
        "mirror_url": None, "homepage": None, "language": "Python", "forks_count": 0,
        "stargazers_count": 0, "watchers_count": 0, "size": size_kb,
        "default_branch": repo.default_branch, "open_issues_count": 0, "has_issues": True,
        "has_projects": False, "has_wiki": False, "has_pages": False, "has_discussions": False,
        "archived": False, "disabled": False, "pushed_at": now(), "created_at": now(),
        "updated_at": now(), "subscribers_count": 0, "network_count": 0, "license": None,
        "forks": 0, "open_issues": 0, "watchers": 0,
    }
    for key in _REPO_URL_FIELDS:
        body[f"{key}_url"] = f"{api}/{key}"
    return body


def content_json(fake: GitHubState, repo: FakeRepo, path: str, rev: str, data: bytes,
                 sha: str) -> dict[str, Any]:
    """A file's contents (``GET /repos/{owner}/{name}/contents/{path}``), base64-encoded."""
    api = f"{fake.base_url}/repos/{repo.full_name}/contents/{path}?ref={rev}"
    html = f"{HTML_ROOT}/{repo.full_name}/blob/{rev}/{path}"
    git_url = f"{fake.base_url}/repos/{repo.full_name}/git/blobs/{sha}"
    return {
        "type": "file", "encoding": "base64", "size": len(data), "name": path.rsplit("/", 1)[-1],
        "path": path, "content": base64.encodebytes(data).decode(), "sha": sha, "url": api,
        "git_url": git_url, "html_url": html, "download_url": None,
        "_links": {"self": api, "git": git_url, "html": html},
    }


def issue_json(fake: GitHubState, issue: FakeIssue) -> dict[str, Any]:
    """An issue (a pull request's issue carries ``pull_request``)."""
    api = f"{fake.base_url}/repos/{issue.repo}/issues/{issue.number}"
    body: dict[str, Any] = {
        "id": ISSUE_ID_BASE + issue.number, "node_id": f"I_{issue.number}", "url": api,
        "repository_url": f"{fake.base_url}/repos/{issue.repo}", "labels_url": api + "/labels{/name}",
        "comments_url": api + "/comments", "events_url": api + "/events",
        "html_url": f"{HTML_ROOT}/{issue.repo}/issues/{issue.number}", "number": issue.number,
        "state": issue.state, "title": issue.title, "body": issue.body,
        "user": user_json(fake, issue.user, issue.user_type),
        "labels": [{"id": i + 1, "node_id": f"L_{i}", "url": f"{api}/labels/{n}", "name": n,
                    "description": None, "color": "ededed", "default": False}
                   for i, n in enumerate(issue.labels)],
        "assignee": user_json(fake, issue.assignees[0]) if issue.assignees else None,
        "assignees": [user_json(fake, login) for login in issue.assignees],
        "milestone": None, "locked": issue.locked,
        "comments": len(fake.comments_on(issue.repo, issue.number)),
        "closed_at": None, "created_at": issue.created_at, "updated_at": now(),
        "author_association": "NONE",
    }
    if issue.pull_request:
        body["pull_request"] = {"url": api.replace("/issues/", "/pulls/"), "html_url": None,
                                "diff_url": None, "patch_url": None}
    return body


def pull_json(fake: GitHubState, pr: FakePull) -> dict[str, Any]:
    """A pull request (``GET /repos/{owner}/{name}/pulls/{number}``)."""
    api = f"{fake.base_url}/repos/{pr.repo}/pulls/{pr.number}"
    issue_api = f"{fake.base_url}/repos/{pr.repo}/issues/{pr.number}"
    html = f"{HTML_ROOT}/{pr.repo}/pull/{pr.number}"
    repo = fake.repos.get(pr.repo)
    repo_body = repo_json(fake, repo) if repo else None
    owner = pr.repo.split("/")[0]

    def end(ref: str, sha: str) -> dict[str, Any]:
        return {"label": f"{owner}:{ref}", "ref": ref, "sha": sha, "repo": repo_body,
                "user": user_json(fake, owner, "Organization")}

    link = {"href": api}
    closed = now() if pr.state == "closed" else None
    additions = sum(str(f.get("patch", "")).count("\n+") for f in pr.files)
    deletions = sum(str(f.get("patch", "")).count("\n-") for f in pr.files)
    return {
        "url": api, "id": PULL_ID_BASE + pr.number, "node_id": f"PR_{pr.number}", "html_url": html,
        "diff_url": html + ".diff", "patch_url": html + ".patch", "issue_url": issue_api,
        "commits_url": api + "/commits", "review_comments_url": api + "/comments",
        "review_comment_url": f"{fake.base_url}/repos/{pr.repo}/pulls/comments{{/number}}",
        "comments_url": issue_api + "/comments",
        "statuses_url": f"{fake.base_url}/repos/{pr.repo}/statuses/{pr.head_sha}",
        "number": pr.number, "state": pr.state, "locked": False, "title": pr.title,
        "user": user_json(fake, pr.user), "body": pr.body, "labels": [], "milestone": None,
        "active_lock_reason": None, "created_at": now(), "updated_at": now(),
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
                   "statuses": {"href": f"{fake.base_url}/repos/{pr.repo}/statuses/{pr.head_sha}"}},
        "author_association": "CONTRIBUTOR", "auto_merge": None, "draft": False,
        "merged": pr.merged, "mergeable": None, "rebaseable": None,
        "mergeable_state": "unknown", "merged_by": user_json(fake, "maintainer") if pr.merged else None,
        "comments": 0, "review_comments": 0, "maintainer_can_modify": False,
        "commits": len(pr.commits), "additions": additions, "deletions": deletions,
        "changed_files": len(pr.files),
    }


def pull_file_json(fake: GitHubState, pr: FakePull, f: dict[str, Any]) -> dict[str, Any]:
    """One file a pull request changes (``GET .../pulls/{number}/files``)."""
    name = str(f["filename"])
    sha = hashlib.sha1(f"{pr.number}:{name}".encode()).hexdigest()
    patch = f.get("patch")
    body: dict[str, Any] = {
        "sha": sha, "filename": name, "status": f.get("status", "modified"),
        "additions": str(patch or "").count("\n+"), "deletions": str(patch or "").count("\n-"),
        "changes": str(patch or "").count("\n+") + str(patch or "").count("\n-"),
        "blob_url": f"{HTML_ROOT}/{pr.repo}/blob/{pr.head_sha}/{name}",
        "raw_url": f"{HTML_ROOT}/{pr.repo}/raw/{pr.head_sha}/{name}",
        "contents_url": f"{fake.base_url}/repos/{pr.repo}/contents/{name}?ref={pr.head_sha}",
    }
    if patch is not None:
        body["patch"] = patch
    if f.get("previous_filename"):
        body["previous_filename"] = f["previous_filename"]
    return body


def pull_commit_json(fake: GitHubState, pr: FakePull, i: int, message: str) -> dict[str, Any]:
    """The ``i``-th commit of a pull request (``GET .../pulls/{number}/commits``)."""
    sha = hashlib.sha1(f"{pr.repo}#{pr.number}/{i}".encode()).hexdigest()
    api = f"{fake.base_url}/repos/{pr.repo}/commits/{sha}"
    who = {"name": pr.user, "email": f"{pr.user}@example.invalid", "date": now()}
    return {
        "url": api, "sha": sha, "node_id": f"C_{sha[:8]}",
        "html_url": f"{HTML_ROOT}/{pr.repo}/commit/{sha}", "comments_url": api + "/comments",
        "commit": {"url": api, "author": who, "committer": who, "message": message,
                   "comment_count": 0,
                   "tree": {"sha": sha, "url": f"{fake.base_url}/repos/{pr.repo}/git/trees/{sha}"}},
        "author": user_json(fake, pr.user), "committer": user_json(fake, pr.user),
        "parents": [],
    }


def comment_json(fake: GitHubState, c: FakeComment) -> dict[str, Any]:
    """An issue comment (the app's carry ``performed_via_github_app``)."""
    api = f"{fake.base_url}/repos/{c.repo}/issues/comments/{c.id}"
    body: dict[str, Any] = {
        "id": c.id, "node_id": f"IC_{c.id}", "url": api, "body": c.body,
        "html_url": f"{HTML_ROOT}/{c.repo}/issues/{c.issue}#issuecomment-{c.id}",
        "user": user_json(fake, c.user, c.user_type), "created_at": c.created_at,
        "updated_at": c.updated_at,
        "issue_url": f"{fake.base_url}/repos/{c.repo}/issues/{c.issue}",
        "author_association": c.association,
    }
    if c.app_id is not None:
        body["performed_via_github_app"] = app_json(fake)
    return body
