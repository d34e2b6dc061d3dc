"""What every route module answers alike: 404s, refused JWTs, paged lists."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

MAX_PER_PAGE = 100  # GitHub caps per_page at 100


def not_found() -> JSONResponse:
    """GitHub's 404 body."""
    return JSONResponse({"message": "Not Found",
                         "documentation_url": "https://docs.github.com/rest"}, 404)


def bad_jwt() -> JSONResponse:
    """GitHub's answer to an app route called without a valid JWT."""
    return JSONResponse({"message": "A JSON web token could not be decoded"}, 401)


def page_of(request: Request, items: list[Any], page: int,
            per_page: int) -> tuple[list[Any], dict[str, str]]:
    """One page of ``items`` and its headers (a ``Link`` to the next page when there is one)."""
    per_page = max(1, min(per_page, MAX_PER_PAGE))
    chunk = items[(page - 1) * per_page: page * per_page]
    headers = {}
    if page * per_page < len(items):
        nxt = request.url.include_query_params(page=page + 1, per_page=per_page)
        headers["link"] = f'<{nxt}>; rel="next"'
    return chunk, headers
