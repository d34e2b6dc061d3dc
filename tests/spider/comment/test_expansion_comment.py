"""Graph expansion through the real engine, down to the rendered comment.

A small repository where the function the issue describes (``Session.send``) calls a
helper whose text shares no word with the issue (``merge_setting``): the first stage
ranks the helper outside the top K, the offline selector admits it over the invokes
edge, and the comment says so in words.
"""

from __future__ import annotations

import pytest

from spider.comment.render import build_view, render
from spider.expand.select.offline import OfflineSelector, OfflineWeights
from spider.index import Index, build_index
from spider.localize import locate
from spider.models import Issue
from spider.settings import EngineSettings
from spider.source import DirectorySource

SHA = "3f786850e387550fdab836ed7e6dc881de23001b"
FILES = {
    "httpkit/session.py": '''
class Session:
    def send(self, request, timeout=None):
        """Send the request; the timeout argument is ignored."""
        options = merge_setting(request.options, self.defaults)
        return self.adapter.send(request, options)

    def close(self):
        self.adapter.close()


def merge_setting(left, right):
    out = dict(right or {})
    out.update(left or {})
    return out
''',
    "httpkit/adapters.py": '''
class Adapter:
    def send(self, request, options):
        """Write the request to the socket and read the response."""
        return self.pool.urlopen(request.method, request.url, **options)

    def close(self):
        self.pool.clear()


def default_timeout():
    return 30.0


def request_timeout(request):
    """The timeout of one request."""
    return request.timeout or default_timeout()
''',
    "httpkit/models.py": '''
class Request:
    def prepare(self):
        return self

    def timeout_value(self):
        return self.timeout
''',
}
ISSUE = Issue("Session.send ignores the timeout", "Passing timeout=5 to send has no effect.")
# A selector that trusts invokes neighbours of the top centres: what a fitted selector
# does when its cross-validation says such a neighbour beats the rank-K item.
TRUSTS_INVOKES = OfflineWeights(
    neighbour={"bias": -4.0, "edge_invokes": 4.0},
    ranked={"bias": -1.0, "log_rank": -1.0},
    margin=0.0,
)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = tmp_path_factory.mktemp("httpkit")
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text.lstrip("\n"))
    settings = EngineSettings(  # the first stage alone: no learned model moves the list
        cache_dir=tmp_path_factory.mktemp("cache"),
        k=3,
        centres=1,
        edges=("contains", "invokes"),
        rerank=False,
    )
    return build_index(DirectorySource(root), settings)


def test_an_invokes_neighbour_outside_the_top_k_is_admitted_and_explained(index: Index) -> None:
    plain = locate(index, ISSUE, selector=OfflineSelector(OfflineWeights(
        neighbour={"bias": -30.0}, ranked={"bias": 0.0, "log_rank": -1.0}, margin=0.0)))
    plain_ids = [h.id for h in plain.hits]
    helper = "httpkit/session.py:merge_setting"
    assert plain_ids[0] == "httpkit/session.py:Session.send"
    assert helper not in plain_ids  # the first stage alone does not find it
    assert plain.expansion_summary()["admitted"] == 0
    assert plain.expansion_summary()["offered"] > 0

    loc = locate(index, ISSUE, selector=OfflineSelector(TRUSTS_INVOKES))
    ids = [h.id for h in loc.hits]
    assert helper in ids and len(ids) == 3
    hit = loc.hits[ids.index(helper)]
    assert hit.reasons[0].kind == "expand"
    assert hit.reasons[0].centre == "httpkit/session.py:Session.send"
    assert hit.reasons[0].edge == "invokes" and hit.reasons[0].hops == 1
    assert hit.reasons[0].relation == "called by"
    summary = loc.expansion_summary()
    assert summary["admitted"] == 1 and loc.selector_calls == 1
    assert summary["centres"][0]["centre"] == "httpkit/session.py:Session.send"

    loc.commit = SHA  # the fixture is a plain directory, not a git checkout
    body = render(build_view(loc, html_url="https://github.com/acme/httpkit", branch="main",
                             skip_label="spider:skip", app_name="spider-bot"))
    listed, details = body.split("How this list was made")
    # the route, in the visible list: the edge, the centre and its place, in plain words
    assert "found via invokes from `Session.send` (listed 1st), which calls it" in listed
    assert "found via invokes from `Session.send`" in details
    assert "and admitted 1" in details
    assert loc.to_dict()["expansion"]["admitted"] == 1
