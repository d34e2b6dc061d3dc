"""Issues and their comments: read an issue, list, read, create and edit comments."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from spider_devkit.fake_github.bodies import comment_json, issue_json
from spider_devkit.fake_github.routes.common import not_found, page_of
from spider_devkit.fake_github.state import GitHubState


def router(fake: GitHubState) -> APIRouter:
    """``/repos/{owner}/{name}/issues/{number}[/comments]`` and ``.../issues/comments/{id}``."""
    routes = APIRouter()

    @routes.get("/repos/{owner}/{name}/issues/comments/{comment_id}")
    async def get_comment(owner: str, name: str, comment_id: int) -> JSONResponse:
        c = fake.comments.get(comment_id)
        if c is None or c.repo != f"{owner}/{name}":
            return not_found()
        return JSONResponse(comment_json(fake, c))

    @routes.patch("/repos/{owner}/{name}/issues/comments/{comment_id}")
    async def update_comment(owner: str, name: str, comment_id: int, request: Request) -> JSONResponse:
        data = await request.json()
        c = fake.edit_comment(f"{owner}/{name}", comment_id, str(data["body"]))
        return JSONResponse(comment_json(fake, c)) if c else not_found()

    @routes.get("/repos/{owner}/{name}/issues/{number}")
    async def get_issue(owner: str, name: str, number: int) -> JSONResponse:
        issue = fake.issues.get((f"{owner}/{name}", number))
        return JSONResponse(issue_json(fake, issue)) if issue else not_found()

    @routes.get("/repos/{owner}/{name}/issues/{number}/comments")
    async def list_comments(owner: str, name: str, number: int, request: Request,
                            page: int = 1, per_page: int = 30) -> JSONResponse:
        if (f"{owner}/{name}", number) not in fake.issues:
            return not_found()
        every = fake.comments_on(f"{owner}/{name}", number)
        chunk, headers = page_of(request, every, page, per_page)
        return JSONResponse([comment_json(fake, c) for c in chunk], headers=headers)

    @routes.post("/repos/{owner}/{name}/issues/{number}/comments")
    async def create_comment(owner: str, name: str, number: int, request: Request) -> JSONResponse:
        data = await request.json()
        c = fake.add_bot_comment(f"{owner}/{name}", number, str(data["body"]))
        return JSONResponse(comment_json(fake, c), 201) if c else not_found()

    return routes
