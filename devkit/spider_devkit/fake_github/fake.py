"""The fake GitHub: its state (:class:`GitHubState`) with the FastAPI app that serves it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import FastAPI

from spider_devkit.fake_github.recorder import Recorder
from spider_devkit.fake_github.routes import graphql, installations, issues, pulls, repos
from spider_devkit.fake_github.server import serving
from spider_devkit.fake_github.state import GitHubState

# The routers in the order the routes are matched.
ROUTERS = (installations.router, repos.router, issues.router, pulls.router, graphql.router)


def build_app(fake: GitHubState) -> FastAPI:
    """The fake's FastAPI app: every route behind the recording middleware."""
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(Recorder, fake=fake)
    for router in ROUTERS:
        app.include_router(router(fake))
    return app


class FakeGitHub(GitHubState):
    """State and FastAPI app of the fake API. Thread-safe; run it with :meth:`serve`."""

    def __init__(self, *, app_id: int, public_key_pem: str, installation_id: int = 1,
                 app_slug: str = "spider-bot", token_style: str = "ghs") -> None:
        super().__init__(app_id=app_id, public_key_pem=public_key_pem,
                         installation_id=installation_id, app_slug=app_slug,
                         token_style=token_style)
        self.app = build_app(self)

    @contextmanager
    def serve(self, host: str = "127.0.0.1") -> Iterator[str]:
        """Serve on a free loopback port in a thread; yields the base URL."""
        with serving(self.app, host, self._bound) as base_url:
            yield base_url

    def _bound(self, base_url: str) -> None:
        self.base_url = base_url
