"""Pull requests: one, its files and its commits (paged as GitHub pages them)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from spider_devkit.fake_github.bodies import pull_commit_json, pull_file_json, pull_json
from spider_devkit.fake_github.routes.common import not_found, page_of
from spider_devkit.fake_github.state import GitHubState


def router(fake: GitHubState) -> APIRouter:
    """``/repos/{owner}/{name}/pulls/{number}[/files|/commits]``."""
    routes = APIRouter()

    @routes.get("/repos/{owner}/{name}/pulls/{number}")
    async def get_pull(owner: str, name: str, number: int) -> JSONResponse:
        pr = fake.pulls.get((f"{owner}/{name}", number))
        return JSONResponse(pull_json(fake, pr)) if pr else not_found()

    @routes.get("/repos/{owner}/{name}/pulls/{number}/files")
    async def list_pull_files(owner: str, name: str, number: int, request: Request,
                              page: int = 1, per_page: int = 30) -> JSONResponse:
        pr = fake.pulls.get((f"{owner}/{name}", number))
        if pr is None:
            return not_found()
        chunk, headers = page_of(request, pr.files, page, per_page)
        return JSONResponse([pull_file_json(fake, pr, f) for f in chunk], headers=headers)

    @routes.get("/repos/{owner}/{name}/pulls/{number}/commits")
    async def list_pull_commits(owner: str, name: str, number: int, request: Request,
                                page: int = 1, per_page: int = 30) -> JSONResponse:
        pr = fake.pulls.get((f"{owner}/{name}", number))
        if pr is None:
            return not_found()
        numbered = list(enumerate(pr.commits))
        chunk, headers = page_of(request, numbered, page, per_page)
        return JSONResponse([pull_commit_json(fake, pr, i, m) for i, m in chunk],
                            headers=headers)

    return routes
