"""Repositories and their files: ``GET /repos/{owner}/{name}`` and ``.../contents/{path}``."""

from __future__ import annotations

import subprocess

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from spider_devkit.fake_github.bodies import content_json, repo_json
from spider_devkit.fake_github.git import git, show_bytes
from spider_devkit.fake_github.routes.common import not_found
from spider_devkit.fake_github.state import GitHubState


def router(fake: GitHubState) -> APIRouter:
    """A repository, and a file of it at a ref (its default branch when none) from its git."""
    routes = APIRouter()

    @routes.get("/repos/{owner}/{name}")
    async def get_repo(owner: str, name: str) -> JSONResponse:
        repo = fake.repos.get(f"{owner}/{name}")
        return JSONResponse(repo_json(fake, repo)) if repo else not_found()

    @routes.get("/repos/{owner}/{name}/contents/{path:path}")
    async def get_content(owner: str, name: str, path: str, ref: str | None = None) -> JSONResponse:
        repo = fake.repos.get(f"{owner}/{name}")
        if repo is None:
            return not_found()
        rev = ref or repo.default_branch
        try:
            data = show_bytes(repo.path, rev, path)
            sha = git(repo.path, "rev-parse", f"{rev}:{path}").strip()
        except subprocess.CalledProcessError:
            return not_found()
        return JSONResponse(content_json(fake, repo, path, rev, data, sha))

    return routes
