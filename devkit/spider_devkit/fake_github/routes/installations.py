"""The app's own routes (JWT-authenticated): installation tokens and webhook deliveries."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from spider_devkit.fake_github.bodies import installation_json
from spider_devkit.fake_github.records import TIMESTAMP
from spider_devkit.fake_github.routes.common import MAX_PER_PAGE, bad_jwt, not_found
from spider_devkit.fake_github.state import GitHubState


def router(fake: GitHubState) -> APIRouter:
    """``/app/installations/{id}[/access_tokens]`` and ``/app/hook/deliveries[/{id}/attempts]``."""
    routes = APIRouter()

    @routes.get("/app/installations/{installation_id}")
    async def get_installation(installation_id: int, request: Request) -> JSONResponse:
        if not fake.jwt_ok(request.headers.get("authorization", "")):
            return bad_jwt()
        if installation_id != fake.installation_id:
            return not_found()
        return JSONResponse(installation_json(fake))

    @routes.post("/app/installations/{installation_id}/access_tokens")
    async def access_token(installation_id: int, request: Request) -> JSONResponse:
        if not fake.jwt_ok(request.headers.get("authorization", "")):
            return bad_jwt()
        if installation_id != fake.installation_id:
            return not_found()
        token, expires = fake.mint_token()
        return JSONResponse({
            "token": token, "expires_at": expires.strftime(TIMESTAMP),
            "permissions": {"issues": "write", "contents": "read", "metadata": "read"},
            "repository_selection": "all",
        }, 201)

    @routes.get("/app/hook/deliveries")
    async def list_deliveries(request: Request, per_page: int = 30,
                              cursor: str | None = None) -> JSONResponse:
        if not fake.jwt_ok(request.headers.get("authorization", "")):
            return bad_jwt()
        per_page = max(1, min(per_page, MAX_PER_PAGE))
        newest_first = fake.deliveries_newest_first()
        if cursor:  # opaque to clients: here, the id of the last item already shown
            if not cursor.isdigit():
                return JSONResponse({"message": "Validation Failed"}, 422)
            newest_first = [d for d in newest_first if d.id < int(cursor)]
        chunk = newest_first[:per_page]
        headers = {}
        if len(newest_first) > per_page:
            nxt = (f"{fake.base_url}/app/hook/deliveries?per_page={per_page}"
                   f"&cursor={quote(str(chunk[-1].id))}")
            headers["link"] = f'<{nxt}>; rel="next"'
        return JSONResponse([d.item_json() for d in chunk], headers=headers)

    @routes.post("/app/hook/deliveries/{delivery_id}/attempts")
    async def redeliver(delivery_id: int, request: Request) -> JSONResponse:
        if not fake.jwt_ok(request.headers.get("authorization", "")):
            return bad_jwt()
        return JSONResponse({}, 202) if fake.redeliver(delivery_id) else not_found()

    return routes
