"""``POST /graphql``: which issues a pull request closes, and which pull requests closed an
issue; anything else is refused as GitHub refuses a token without the permission."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from spider_devkit.fake_github.state import GitHubState

REFUSED: dict[str, Any] = {
    "data": None,
    "errors": [{"type": "FORBIDDEN", "message": "Resource not accessible by integration"}],
}


def router(fake: GitHubState) -> APIRouter:
    """The two GraphQL queries the worker sends."""
    routes = APIRouter()

    @routes.post("/graphql")
    async def graphql(request: Request) -> JSONResponse:
        data = await request.json()
        v = data.get("variables") or {}
        repo = f"{v.get('owner')}/{v.get('name')}"
        query = str(data.get("query", ""))
        if "closingIssuesReferences" in query:
            pr = fake.pulls.get((repo, int(v.get("number", 0))))
            if pr is None or pr.closing_issues is None:
                return JSONResponse(REFUSED)
            nodes = [{"number": n} for n in pr.closing_issues]
            return JSONResponse({"data": {"repository": {"pullRequest": {
                "closingIssuesReferences": {"nodes": nodes}}}}})
        if "closedByPullRequestsReferences" in query:
            number = int(v.get("number", 0))
            found = [p for p in fake.pulls.values() if p.repo == repo
                     and p.closing_issues is not None and number in p.closing_issues]
            if not found:
                return JSONResponse(REFUSED)
            nodes = [{"number": p.number, "merged": p.merged} for p in found]
            return JSONResponse({"data": {"repository": {"issue": {
                "closedByPullRequestsReferences": {"nodes": nodes}}}}})
        return JSONResponse(REFUSED)

    return routes
