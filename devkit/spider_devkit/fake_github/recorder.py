"""The middleware in front of every route: record the call and the credential shown, check
the installation token, apply injected failures."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint

from spider_devkit.fake_github.records import Call
from spider_devkit.fake_github.state import GitHubState

APP_ROUTES = "/app/"  # authenticated by the app's JWT (checked by the routes), not a token


class Recorder(BaseHTTPMiddleware):
    """Records each call, checks the installation token, applies injected failures."""

    def __init__(self, app: Any, fake: GitHubState) -> None:
        super().__init__(app)
        self.fake = fake

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        """Answer one request as GitHub would, or as an injection says."""
        method, path = request.method, request.url.path
        arrived = time.time()
        auth = request.headers.get("authorization")
        if auth:
            self.fake.remember_credential(auth)
        inj = self.fake.take_injection(method, path)
        if inj is not None and inj.delay_s:
            # GitHub has the request before it is slow to answer: read the body now, so a
            # create or an edit still happens after a client that timed out has gone
            await request.body()
            await asyncio.sleep(inj.delay_s)
        if inj is not None and inj.status is None:
            inj = None  # a delay only: the real answer follows
        response: Response
        if inj is not None and not inj.apply:
            response = JSONResponse(inj.body, inj.status, headers=inj.headers)
        elif not path.startswith(APP_ROUTES) and not self.fake.token_ok(
            request.headers.get("authorization", "")
        ):
            response = JSONResponse({"message": "Bad credentials"}, 401)
        else:
            response = await call_next(request)
            if inj is not None:
                response = JSONResponse(inj.body, inj.status, headers=inj.headers)
        self.fake.record_call(Call(method, path, response.status_code, arrived))
        return response
