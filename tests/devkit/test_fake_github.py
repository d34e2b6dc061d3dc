"""The fake GitHub package: its public names, and every concern's routes wired in."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

import spider_devkit.fake_github as fake_github
from spider_devkit.fake_github import FakeGitHub, files_from_diff
from tests.worker.helpers import make_repo

APP_ID = 4242
# the public names of spider_devkit.fake_github when it was one module, plus the state class
PUBLIC = {
    "CHAOS_KINDS", "Chaos", "HTML_ROOT", "TOKEN_TTL", "Call", "FakeComment", "FakeDelivery", "FakeGitHub", "FakeIssue",
    "FakePull", "FakeRepo", "GitHubState", "Injection", "files_from_diff",
}


def test_the_package_exports_what_it_lists() -> None:
    assert set(fake_github.__all__) == PUBLIC
    assert all(hasattr(fake_github, name) for name in fake_github.__all__)
    assert files_from_diff("") == []


def test_every_route_answers_behind_the_token_check(tmp_path: Path) -> None:
    fake = FakeGitHub(app_id=APP_ID, public_key_pem="unused: no JWT is checked here")
    make_repo(tmp_path / "repo")
    fake.add_repo("acme/httpkit", tmp_path / "repo")
    fake.add_issue("acme/httpkit", 1, "A title", "A body")
    client = TestClient(fake.app)
    assert client.get("/repos/acme/httpkit").status_code == 401  # no installation token
    token, _ = fake.mint_token()
    auth = {"authorization": f"token {token}"}
    assert client.get("/repos/acme/httpkit", headers=auth).json()["full_name"] == "acme/httpkit"
    assert client.get("/repos/acme/httpkit/issues/1", headers=auth).json()["number"] == 1
    created = client.post("/repos/acme/httpkit/issues/1/comments", json={"body": "hi"},
                          headers=auth)
    assert created.status_code == 201 and fake.bot_comments("acme/httpkit", 1)[0].body == "hi"
    assert client.get("/repos/acme/httpkit/pulls/9", headers=auth).status_code == 404
    assert client.post("/graphql", json={"query": "{ viewer }"},
                       headers=auth).json()["errors"][0]["type"] == "FORBIDDEN"
    assert client.get("/app/hook/deliveries").status_code == 401  # the app's JWT routes
    assert [c.status for c in fake.requests()] == [401, 200, 200, 201, 404, 200, 401]
    assert f"token {token}" in fake.credentials


def test_the_installation_and_an_issues_age_and_assignees_validate_as_githubs(
        tmp_path: Path) -> None:
    from githubkit.versions.latest.models import Installation, Issue

    from spider_devkit.fake_github.bodies import installation_json, issue_json

    fake = FakeGitHub(app_id=APP_ID, public_key_pem="unused: no JWT is valid here",
                      installation_id=7)
    fake.installation_created_at = "2026-06-01T00:00:00Z"
    issue = fake.add_issue("acme/httpkit", 1, "A title", None, assignees=["x"],
                           created_at="2025-01-01T00:00:00Z")
    installation = Installation.model_validate(installation_json(fake))
    assert (installation.id, installation.created_at.year) == (7, 2026)
    parsed = Issue.model_validate(issue_json(fake, issue))
    assert [a.login for a in parsed.assignees or []] == ["x"] and parsed.created_at.year == 2025
    client = TestClient(fake.app)
    assert client.get("/app/installations/7").status_code == 401  # the app's JWT only


def test_chaos_fails_a_share_of_requests_in_every_kind(tmp_path: Path) -> None:
    from spider_devkit.fake_github import CHAOS_KINDS, Chaos

    fake = FakeGitHub(app_id=APP_ID, public_key_pem="unused: no JWT is checked here")
    make_repo(tmp_path / "repo")
    fake.add_repo("acme/httpkit", tmp_path / "repo")
    token, _ = fake.mint_token()
    auth = {"authorization": f"token {token}"}
    client = TestClient(fake.app)
    fake.set_chaos(Chaos(rate=0.5, kinds=("5xx", "429", "403-secondary"), seed=3))
    answers = [client.get("/repos/acme/httpkit", headers=auth) for _ in range(200)]
    failed = [a for a in answers if a.status_code != 200]
    assert 60 < len(failed) < 140 and sum(fake.chaos_counts.values()) == len(failed)
    assert {a.status_code for a in failed} <= {429, 403, 502, 503}
    assert all(a.headers["retry-after"] == "1" for a in failed if a.status_code in (403, 429))
    assert "secondary rate limit" in next(a for a in failed if a.status_code == 403).json()["message"]
    fake.set_chaos(Chaos(rate=1.0, kinds=("timeout",), timeout_s=0.01))
    assert client.get("/repos/acme/httpkit", headers=auth).status_code == 200  # late, real
    assert fake.chaos_counts["timeout"] == 1 and set(CHAOS_KINDS) >= set(fake.chaos_counts)
    fake.set_chaos(None)
    assert all(client.get("/repos/acme/httpkit", headers=auth).status_code == 200
               for _ in range(20))
