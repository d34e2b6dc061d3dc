from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from spider.comment.render import MARKER, build_view, permalink, reason_words, render
from spider.errors import RenderError
from spider.models import CentreExpansion, Hit, Localization, PartialIndex, Reason, RunSettings

GOLDEN = Path(__file__).parent / "golden"
SHA = "3f786850e387550fdab836ed7e6dc881de23001b"
URL = "https://github.com/acme/httpkit"


SETTINGS = RunSettings(k=3, first_stage="hybrid", signals=True, query_texts=1, query_adapter="",
                       rerank="head", ranked_depth=3, selector="offline",
                       edges=("contains", "invokes"), centres=5, depth=4, pool=500,
                       model="all-MiniLM-L6-v2 (bundled)", encoder="onnx-int8")


def localization() -> Localization:
    return Localization(
        commit=SHA,
        hits=[
            Hit("httpkit/session.py:Session.send", "httpkit/session.py", "Session.send", 5, 7, 0.91,
                [Reason("mention", detail="Session.send"),
                 Reason("terms", detail="timeout, send"), Reason("wording", rank=2),
                 Reason("hybrid", rank=1, score=0.91, detail="dense 2, BM25 1")]),
            Hit("httpkit/headers.py:parse_header", "httpkit/headers.py", "parse_header", 1, 4, 0.5,
                [Reason("expand", centre="httpkit/session.py:Session.send", edge="invokes",
                        hops=1, relation="called by"),
                 Reason("hybrid", rank=31, detail="dense 40, BM25 12")]),
            Hit("httpkit/cookies.py:parse_cookie", "httpkit/cookies.py", "parse_cookie", 1, 1, 0.2,
                [Reason("traceback", detail="httpkit/cookies.py:12"),
                 Reason("related", centre="httpkit/headers.py:parse_header", rank=2,
                        edge="invokes", relation="called by"),
                 Reason("hybrid", rank=2)]),
        ],
        settings=SETTINGS,
        timings={"first_stage": 0.25, "expansion": 0.5, "total": 0.75},
        expansion=[CentreExpansion("httpkit/session.py:Session.send", offered=6, outside=4,
                                   accepted=1, admitted=1),
                   CentreExpansion("httpkit/cookies.py:parse_cookie", offered=2, outside=2,
                                   accepted=0, admitted=0)],
        selector_calls=2,
    )


def comment(**kw: object) -> str:
    args: dict[str, object] = dict(
        html_url=URL, branch="main", timings={"fetch": 1.5, "index": 12.25, "total": 14.75},
        config_found=True, skip_label="spider:skip", app_name="spider-bot",
    )
    args.update(kw)
    return render(build_view(localization(), **args))  # type: ignore[arg-type]


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("SPIDER_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"rendered comment changed; SPIDER_UPDATE_GOLDEN=1 to accept ({path})"


def test_golden_comment() -> None:
    check_golden("comment.md", comment())


def test_golden_comment_with_notes() -> None:
    notes = ["`.github/spider.yml` was ignored because `k`: Input should be less than or equal to 50; "
             "the defaults were used.", "`/spider`: ignored `foo=1`: known options are k and edges."]
    check_golden("comment_with_notes.md", comment(notes=notes, config_found=False, shown=2))


def test_permalinks_point_at_the_full_sha_and_line_range() -> None:
    body = comment()
    assert body.startswith(MARKER + "\n")
    assert f"({URL}/blob/{SHA}/httpkit/session.py#L5-L7)" in body
    assert f"({URL}/blob/{SHA}/httpkit/cookies.py#L1)" in body
    assert body.count(f"/blob/{SHA}/") == 3


def test_plain_words_in_the_list_numbers_in_the_details() -> None:
    body = comment()
    listed = body.split("<details>")[0]
    assert ("`Session.send` is named in the issue; matches the issue's terms (`timeout`, `send`); "
            "close to the issue's wording") in listed
    # an admitted item's route, and a relation to a higher-listed item, in the list itself
    assert "found via invokes from `Session.send` (listed 1st), which calls it" in listed
    assert ('in the traceback (`File "httpkit/cookies.py", line 12`); '
            "called by `parse_header`, listed 2nd") in listed
    assert "rank" not in listed and "BM25" not in listed
    details = body.split("How this list was made")[1]
    assert "2. `parse_header`: found via invokes from `Session.send`; hybrid rank 31" in details
    assert "1. `Session.send`: hybrid rank 1 (dense 2, BM25 1)" in details


def test_the_first_few_in_full_the_rest_collapsed() -> None:
    body = comment(shown=1)
    head, rest = body.split("<summary>2 more candidates</summary>")
    assert "1. [`Session.send`]" in head and "[`parse_header`]" not in head
    assert "2. [`parse_header`]" in rest.split("</details>")[0]
    assert "3. [`parse_cookie`]" in rest.split("</details>")[0]
    assert "more candidate" not in comment()  # 3 hits, 5 shown: nothing collapsed


def test_a_weak_first_match_is_said_in_one_line() -> None:
    loc = localization()
    assert "best match is weak" not in comment()  # no calibrated estimate: no claim
    loc.confidence = 0.08
    body = render(build_view(loc, html_url=URL, branch="main", skip_label="s", app_name="a"))
    assert "> The best match is weak: an estimated 8% chance that the first function" in body
    loc.confidence = 0.4
    body = render(build_view(loc, html_url=URL, branch="main", skip_label="s", app_name="a"))
    assert "best match is weak" not in body


def test_a_partial_index_is_said_in_one_line() -> None:
    loc = localization()
    assert "partial index" not in comment()
    loc.settings = replace(loc.settings, partial=PartialIndex(embedded_functions=400,
                                                              functions=15461))
    body = render(build_view(loc, html_url=URL, branch="main", skip_label="s", app_name="a"))
    assert ("Made from a partial index (the repository is being indexed: 400 of 15,461 functions "
            "embedded); a later run (`/spider`) ranks from the full index.") in body
    assert ("- Index: partial: 400 of 15,461 functions embedded, the others ranked by BM25 "
            "and the issue's signals only") in body
    assert "- Index:" not in comment()  # a full index needs no line


def test_the_details_show_evidence_not_settings() -> None:
    details = comment().split("How this list was made")[1]
    assert f"- Commit: [`{SHA}`]" in details
    assert "- Issue read as: its title and the start of its body, as one text" in details
    assert "- Method: dense retrieval and BM25, fused" in details
    for knob in ("centres=", "query_adapter=", "ranked_depth", "Settings:", "Timings:",
                 "index 12.25 s", "pool=500"):
        assert knob not in details, knob
    loc = localization()
    loc.settings = replace(loc.settings, query_texts=4)
    body = render(build_view(loc, html_url=URL, branch="main", skip_label="s", app_name="a"))
    assert "- Issue read as: 4 windows: its title, then its body in parts" in body


def test_reasons_in_words() -> None:
    assert reason_words(Reason("expand", centre="a.py:Session.send", edge="invokes")) == \
        "found via invokes from `Session.send`"
    assert reason_words(Reason("expand", centre="a.py:f", edge="contains", hops=3)) == \
        "found via contains from `f`, 3 hops"
    assert reason_words(Reason("dense", rank=3)) == "dense rank 3"
    assert reason_words(Reason("mention", detail="@all [x](http://e)")) == \
        "`@all [x](http://e)` is named in the issue"
    assert reason_words(Reason("mention", detail="backtick: Session.send")) == \
        "`Session.send` is named in the issue"
    assert reason_words(Reason("mention", detail="file: a/b.py")) == \
        "in `a/b.py`, a file named in the issue"
    assert reason_words(Reason("mention", detail="member: class iter_content")) == \
        "inside `iter_content`, which the issue names"
    assert reason_words(Reason("mention", detail="component: SeqFormula")) == \
        "named after `SeqFormula`, which the issue names"
    assert reason_words(Reason("terms", detail="decode_unicode, iter_content")) == \
        "matches the issue's terms (`decode_unicode`, `iter_content`)"
    assert reason_words(Reason("traceback", detail="a.py:12")) == \
        'in the traceback (`File "a.py", line 12`)'
    assert reason_words(Reason("traceback", detail="src/a.go:12")) == "in the traceback (`src/a.go:12`)"


def test_hostile_repository_content_is_inert() -> None:
    loc = localization()
    loc.hits[0] = Hit("x", "src/we ird(1)`.py", "evil`@everyone <img src=x> [a](http://x)", 3, 4, 1.0,
                      [Reason("expand", centre="p.py:`@team`", edge="invokes")])
    body = render(build_view(loc, html_url=URL, branch="ma`in", skip_label="@org/team",
                             app_name="bot @x", notes=["see #1 @bob"]))
    assert "/src/we%20ird%281%29%60.py#L3-L4" in body
    assert "``evil`@everyone <img src=x> [a](http://x)``" in body
    assert "`` `@team` ``" in body
    for line in body.splitlines():
        stripped = line
        for span in __import__("re").findall(r"(`+)(.+?)\1", line):
            stripped = stripped.replace(span[0] + span[1] + span[0], "")
        assert "@e" not in stripped and "@b" not in stripped and "<img" not in stripped


def test_refuses_what_it_cannot_render_in_full() -> None:
    with pytest.raises(RenderError):
        permalink("javascript:alert(1)//", SHA, "a.py", 1, 2)
    with pytest.raises(RenderError):
        permalink(URL, "main", "a.py", 1, 2)
    empty = Localization(commit=SHA, hits=[], settings=SETTINGS)
    with pytest.raises(RenderError):
        build_view(empty, html_url=URL, branch="main", skip_label="s", app_name="a")


def test_missing_template_fields_are_errors(tmp_path: Path) -> None:
    (tmp_path / "comment.md.j2").write_text(MARKER + "{{ view.nope }}")
    view = build_view(localization(), html_url=URL, branch="main", skip_label="s", app_name="a")
    with pytest.raises(RenderError):
        render(view, tmp_path)


def test_the_too_large_comment_is_polite_and_safe() -> None:
    from spider.comment.render import build_too_large_view, human_size

    view = build_too_large_view(app_name="@spider [bot](https://x.example)", skip_label="skip`me",
                                size_kb=3_500_000, limit_kb=2_000_000)
    body = render(view)
    assert body.startswith(MARKER + "\nThanks for the report.")
    assert "the repository is 3.3 GB, above the 1.9 GB this installation indexes" in body
    assert "@spider" not in body and "](https" not in body and "``skip`me``" in body
    files = render(build_too_large_view(app_name="spider-bot", skip_label="s", files=30_000,
                                        limit_files=20_000))
    assert "the repository has 30000 source files, above the 20000 this installation" in files
    assert [human_size(k) for k in (5, 1536, 2_000_000)] == ["5 KB", "1.5 MB", "1.9 GB"]


def test_the_method_line_says_what_ran() -> None:
    body = comment()
    assert ("- Method: dense retrieval and BM25, fused, plus the issue's own evidence such as "
            "tracebacks and names; the top 3 re-ranked by the head model; graph expansion over "
            "contains, invokes edges: the offline selector was offered 8 neighbours, 6 of them "
            "outside the list, and admitted 1") in body

    loc = localization()
    loc.settings = replace(loc.settings, first_stage="bm25", signals=False, rerank=None,
                           selector="none")
    loc.expansion, loc.selector_calls = [], 0
    plain_body = render(build_view(loc, html_url=URL, branch="main", skip_label="s", app_name="a"))
    assert "- Method: BM25; no graph expansion: selector none" in plain_body
    assert "selector calls" not in plain_body and "SpIDER" not in plain_body

    loc = localization()
    loc.settings = replace(loc.settings, query_texts=4)  # a long issue: 4 windows
    windows = render(build_view(loc, html_url=URL, branch="main", skip_label="s", app_name="a"))
    assert "- Method: dense retrieval over 4 windows of the issue and BM25, fused" in windows

    loc = localization()
    loc.expansion = [CentreExpansion("a.py:f", offered=41, outside=41, accepted=0, admitted=0)]
    nothing = render(build_view(loc, html_url=URL, branch="main", skip_label="s", app_name="a"))
    assert "offered 41 neighbours, 41 of them outside the list, and admitted none" in nothing


def test_the_commit_line_says_what_was_ranked() -> None:
    loc = localization()
    head = render(build_view(loc, html_url=URL, branch="main", skip_label="s", app_name="a"))
    assert "(head of `main`)" in head
    tagged = render(build_view(loc, html_url=URL, branch="main", ref="v2.10.0", skip_label="s",
                               app_name="a"))
    assert "(at `v2.10.0`)" in tagged
    assert "head of" not in tagged
