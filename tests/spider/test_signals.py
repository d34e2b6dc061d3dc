"""Issue signals: stack frames in several languages, paths and identifiers mapped onto the graph."""

from __future__ import annotations

from spider.graph.model import CodeGraph
from spider.retrieve.signals import NameTable, extract_signals, signal_scores
from tests.spider.graphs import graph_of

FUNCS = [
    ("requests/sessions.py", "Session.send", 100, 160),
    ("requests/sessions.py", "Session.request", 40, 90),
    ("requests/models.py", "Response.iter_content", 10, 60),
    ("requests/models.py", "Response.iter_content.generate", 20, 40),
    ("requests/utils.py", "get_encoding_from_headers", 5, 20),
    ("src/main/java/com/acme/Parser.java", "Parser.parse", 12, 30),
    ("lib/router.js", "handle", 3, 25),
    ("src/x.rs", "parse_args", 1, 40),
]


def _graph() -> tuple[CodeGraph, list[str]]:
    return graph_of(FUNCS)


def _scores(text: str) -> dict[str, tuple[float, str]]:
    g, ids = _graph()
    score, why = signal_scores(NameTable(g, ids), extract_signals(text), len(ids))
    return {ids[i]: (score[i], why[i]) for i in range(len(ids)) if score[i] > 0}


def test_python_traceback_frame_maps_to_innermost_function() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/site-packages/requests/models.py", line 25, in generate\n'
        "KeyError: x\n"
    )
    got = _scores(text)
    assert got["requests/models.py:Response.iter_content.generate"][1].startswith("frame")
    assert got["requests/models.py:Response.iter_content.generate"][0] == 4.0
    # the enclosing function is only in a mentioned file, a weaker signal
    assert got.get("requests/models.py:Response.iter_content", (0, ""))[0] < 4.0


def test_java_js_rust_frames() -> None:
    got = _scores(
        "Exception in thread main\n"
        "    at com.acme.Parser.parse(Parser.java:14)\n"
        "    at handle (/srv/app/lib/router.js:7:12)\n"
        "thread 'main' panicked at src/x.rs:12:5\n"
    )
    assert got["src/main/java/com/acme/Parser.java:Parser.parse"][0] == 4.0
    assert got["lib/router.js:handle"][0] == 4.0
    assert got["src/x.rs:parse_args"][0] == 4.0


def test_identifiers_backticks_and_qualified_names() -> None:
    got = _scores("`Session.send` hangs; also get_encoding_from_headers is odd. Run it.")
    assert got["requests/sessions.py:Session.send"][0] == 3.0
    assert got["requests/utils.py:get_encoding_from_headers"][0] == 1.5
    assert "requests/sessions.py:Session.request" not in got


def test_paths_mark_their_functions_weakly() -> None:
    got = _scores("Something is wrong in requests/utils.py when headers are empty")
    assert got["requests/utils.py:get_encoding_from_headers"] == (0.5, "file: requests/utils.py")


def test_common_and_short_names_are_ignored() -> None:
    assert _scores("please run get on it, then x") == {}


def test_plain_english_words_in_prose_are_not_identifiers() -> None:
    from spider.graph.model import CodeGraph
    from spider.retrieve.signals import looks_like_code

    assert not looks_like_code("settings") and not looks_like_code("Settings")
    assert looks_like_code("send_request") and looks_like_code("getURL")
    assert looks_like_code("CodeGraph") and looks_like_code("a.b") and looks_like_code("__init__")
    g = CodeGraph()
    g.add_node(
        "a.py:settings", kind="function", path="a.py", name="settings", start_line=1, end_line=2
    )
    table = NameTable(g, ["a.py:settings"])
    score, _ = signal_scores(table, extract_signals("the settings are ignored"), 1)
    assert score == [0.0]
    score, _ = signal_scores(table, extract_signals("the `settings` are ignored"), 1)
    assert score == [2.5]


def _table(funcs: list[tuple[str, str]]) -> tuple[NameTable, list[str]]:
    g = CodeGraph()
    ids = [f"{path}:{name}" for path, name in funcs]
    for (path, name), nid in zip(funcs, ids, strict=True):
        g.add_node(nid, kind="function", path=path, name=name, start_line=1, end_line=2)
    return NameTable(g, ids), ids


def test_call_shaped_mention_marks_the_methods_of_that_class() -> None:
    table, ids = _table(
        [
            ("sympy/core/mod.py", "Mod.eval"),
            ("sympy/core/mod.py", "Mod.doit"),
            ("sympy/core/mod.py", "gcd_terms"),
            ("sympy/core/add.py", "Add.eval"),
        ]
    )
    score, why = signal_scores(table, extract_signals("Mod(x**2, x) is not always 0"), len(ids))
    assert score[:2] == [1.0, 1.0] and why[0] == "member: class Mod"
    assert score[2:] == [0.0, 0.0]
    # plain prose without code shape or a call is not a mention
    score, _ = signal_scores(table, extract_signals("Mod is not always 0"), len(ids))
    assert score == [0.0] * 4


def test_class_defined_in_many_files_is_too_ambiguous_for_members() -> None:
    table, ids = _table([(f"m{i}.py", "Printer.emit") for i in range(3)])
    score, _ = signal_scores(table, extract_signals("`Printer` drops output"), len(ids))
    assert score == [0.0, 0.0, 0.0]


def test_name_built_around_a_mentioned_name() -> None:
    table, ids = _table(
        [
            ("sympy/printing/latex.py", "LatexPrinter._print_SeqFormula"),
            ("sympy/printing/latex.py", "LatexPrinter._print_Sum"),
            ("sympy/series/sequences.py", "SeqFormula.formula"),
        ]
    )
    score, why = signal_scores(
        table, extract_signals("Display of SeqFormula() in the notebook"), len(ids)
    )
    assert score[0] == 1.0 and why[0] == "component: SeqFormula"
    assert score[1] == 0.0
    assert score[2] == 1.0 and why[2] == "member: class SeqFormula"


def test_common_english_words_in_prose_name_no_function() -> None:
    from spider.retrieve.signals import code_written_names, plain_common_word

    text = "We run gin and GET the URL; Set-Cookie is lost. See `Session.send` and run()."
    assert not {"run", "GET", "URL", "Set"} & extract_signals("We run gin and GET the URL").prose_names
    assert "run" in extract_signals(text).prose_names  # run() is written as code
    assert plain_common_word("URL") and plain_common_word("Run")
    assert not plain_common_word("runServer") and not plain_common_word("get_url")
    assert {"run", "session", "send"} <= code_written_names(text)
    assert "url" not in code_written_names(text)


def test_common_english_word_written_as_code_still_names_a_function() -> None:
    g = CodeGraph()
    ids = []
    for path, name in (("gin.go", "Engine.Run"), ("gin.go", "Engine.RunTLS"), ("url.go", "URL")):
        nid = f"{path}:{name}"
        g.add_node(nid, kind="function", path=path, name=name, start_line=1, end_line=9)
        ids.append(nid)
    table = NameTable(g, ids)
    prose, _ = signal_scores(table, extract_signals("We run gin; the URL is wrong"), len(ids))
    assert prose == [0.0, 0.0, 0.0]
    code, _ = signal_scores(table, extract_signals("`URL` is wrong; see engine.RunTLS()"), len(ids))
    assert code[1] > 0 and code[2] > 0


def test_a_scoped_name_is_read_as_a_dotted_one() -> None:
    from spider.retrieve.signals import names_written_as_code, scoped_as_dotted

    assert scoped_as_dotted("formatter::parse and a::b::c fail") == "formatter.parse and a.b.c fail"
    code = names_written_as_code(
        "We run gin and c.ClientIP() returns `RemoteIP`; Foo::bar, `Session.send`, "
        "dayjs() and parse() fail\n```\nclient.Fetch()\n```")
    assert code == {"clientip", "bar", "send"}  # members through a receiver or scope only
    usage = "`d = dayjs.duration('PT3M')` then d.format('HH') fails; see `Duration.format`"
    assert names_written_as_code(usage) == {"format"}  # a call with arguments is usage
