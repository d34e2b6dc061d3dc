"""Relations among the listed functions: each says how the graph joins it to a higher-listed
one (a call either way, or nesting), on the offline default too — no selector involved."""

from __future__ import annotations

from pathlib import Path

import pytest

from spider.comment.render import build_view, render
from spider.explain.reasons import related_reasons
from spider.graph import CodeGraph, build_graph
from spider.index import build_index
from spider.localize import locate
from spider.models import Issue, Reason
from spider.settings import EngineSettings
from spider.source import DirectorySource

SHA = "3f786850e387550fdab836ed7e6dc881de23001b"
FILES = {
    "kit/engine.py": '''
def handle_request(request):
    """Handle one HTTP request: parse the header, then answer."""
    header = parse_header(request)
    return answer(header)


def parse_header(request):
    def split_line(line):
        return line.split(":", 1)
    return dict(split_line(line) for line in request.lines)


def answer(header):
    return header
''',
    "kit/other.py": '''
def unrelated_helper(x):
    return x
''',
}
F = "kit/engine.py:handle_request"
G = "kit/engine.py:parse_header"
NESTED = "kit/engine.py:parse_header.split_line"
ANSWER = "kit/engine.py:answer"
OTHER = "kit/other.py:unrelated_helper"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kit")
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text.lstrip("\n"))
    return root


@pytest.fixture(scope="module")
def graph(root: Path) -> CodeGraph:
    return build_graph(DirectorySource(root), EngineSettings())


def test_a_called_function_names_its_caller_and_the_callers_rank(graph: CodeGraph) -> None:
    got = related_reasons(graph, [F, OTHER, G])
    assert set(got) == {G}  # the first has nothing above it; the unrelated one no edge
    assert got[G] == Reason(kind="related", centre=F, rank=1, edge="invokes", relation="called by")
    assert got[G].words() == "called by `handle_request`, listed 1st"


def test_a_caller_below_its_callee_says_it_calls_it(graph: CodeGraph) -> None:
    got = related_reasons(graph, [G, OTHER, F])
    assert got[F].relation == "calls" and got[F].centre == G and got[F].rank == 1
    assert got[F].words() == "calls `parse_header`, listed 1st"


def test_nesting_and_the_highest_listed_partner(graph: CodeGraph) -> None:
    got = related_reasons(graph, [G, F, NESTED])
    assert got[NESTED].words() == "defined inside `parse_header`, listed 1st"
    assert related_reasons(graph, [NESTED, G])[G].words() == "defines `parse_header.split_line`, listed 1st"
    # answer is called by handle_request (2nd) and by nothing higher: one relation only
    got = related_reasons(graph, [G, F, ANSWER])
    assert got[ANSWER].centre == F and got[ANSWER].rank == 2
    # both above: the higher-listed partner wins
    got = related_reasons(graph, [F, G, NESTED])
    assert got[NESTED].centre == G  # handle_request does not call split_line
    json_form = got[NESTED].to_dict()
    assert json_form["kind"] == "related" and json_form["words"] == json_form["text"]


def test_locate_lists_relations_on_the_offline_default(root: Path, tmp_path: Path) -> None:
    settings = EngineSettings(cache_dir=tmp_path, k=4, rerank=False)
    assert settings.selector_name == "offline" and not settings.expands  # the default
    index = build_index(DirectorySource(root), settings)
    loc = locate(index, Issue("handle_request loses the header", "parse_header drops a value"))
    assert loc.selector_calls == 0
    ids = [h.id for h in loc.hits]
    related = {h.id: r for h in loc.hits for r in h.reasons if r.kind == "related"}
    assert related, ids
    for hit_id, reason in related.items():
        assert reason.centre in ids[: ids.index(hit_id)]  # a higher-listed partner
        assert reason.rank == ids.index(reason.centre) + 1
    loc.commit = SHA
    body = render(build_view(loc, html_url="https://github.com/acme/kit", branch="main",
                             skip_label="spider:skip", app_name="spider-bot"))
    listed = body.split("How this list was made")[0]
    some = next(iter(related.values()))
    assert some.words() in listed


def test_an_admitted_items_route_in_plain_words() -> None:
    inside = Reason("expand", centre="a.py:outer", edge="contains", hops=1,
                    relation="defined inside")
    assert inside.words(listed={"a.py:outer": 3}.get) == (
        "found via contains from `outer` (listed 3rd), in which it is defined")
    far = Reason("expand", centre="a.py:f", edge="invokes", hops=2,
                 relation="reached through calls from")
    assert far.words() == "found via invokes from `f`, 2 calls away"
    near = Reason("expand", centre="a.py:f", edge="contains", hops=3, relation="near")
    assert near.words() == "found via contains from `f`"
    assert near.describe() == "found via contains from `f`, 3 hops"  # the details keep hops


def test_the_links_between_listed_functions(graph: CodeGraph) -> None:
    from spider.expand.select.exchange import Admission
    from spider.localize import list_links
    from spider.models import Link

    links = list_links(graph, [F, G, NESTED, OTHER], {})
    assert Link(F, G, "calls") in links and Link(G, NESTED, "contains") in links
    assert all(OTHER not in (link.source, link.target) for link in links)
    found = list_links(graph, [F, OTHER], {OTHER: Admission(OTHER, F, "invokes", 1)})
    assert found == [Link(F, OTHER, "found via")]
