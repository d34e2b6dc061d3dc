"""Less noise: tooling below the library's own code, a nested function folded into its outer."""

from __future__ import annotations

from spider.expand.tidy import (
    MAX_HELPERS,
    demote,
    demoted_folder,
    fold_nested,
    is_test_code,
    issue_names,
    keep_named_on_top,
    module_export,
    named_as_code,
    nested_functions,
    nested_in,
    tidy_list,
)
from spider.graph.model import CodeGraph
from tests.spider.graphs import graph_of

FUNCS = [  # path, qualified name, start, end
    ("lib/core/Axios.js", "Axios.request", 10, 80),
    ("lib/core/Axios.js", "Axios.request.onFulfilled", 20, 30),
    ("bin/GithubAPI.js", "GithubAPI.constructor", 1, 9),
    ("lib/adapters/xhr.js", "xhr", 1, 200),
    ("lib/adapters/xhr.js", "xhr.onloadend", 50, 70),
    ("lib/helpers/buildURL.js", "buildURL", 1, 40),
    ("lib/core/Axios.js", "Axios.requestAll", 90, 99),  # a sibling sharing a name prefix
    ("extras/gson/Copy.java", "Copy.toJson", 1, 9),
]


def _graph() -> tuple[CodeGraph, list[str]]:
    g, ids = graph_of(FUNCS)
    g.add_edge(ids[0], ids[1], "contains")
    g.add_edge(ids[3], ids[4], "contains")
    return g, ids


def _plugin(members: int) -> tuple[CodeGraph, str, list[str]]:
    """A dayjs-style plugin: an anonymous export defining ``members`` methods on ``proto``
    and one direct helper."""
    g = CodeGraph()
    path = "src/plugin/utc/index.js"
    outer = f"{path}:utc"
    g.add_node(outer, kind="function", path=path, name="utc", start_line=1, end_line=200)
    inner = [f"{path}:utc.helper"] + [f"{path}:utc.proto.m{i}" for i in range(members)]
    for i, nid in enumerate(inner):
        name = nid.split(":", 1)[1]
        g.add_node(nid, kind="function", path=path, name=name, start_line=2 + i, end_line=2 + i)
        g.add_edge(outer, nid, "contains")
    return g, outer, inner


def test_demoted_folder_is_the_top_level_tooling_folder() -> None:
    assert demoted_folder("bin/GithubAPI.js") == "bin"
    assert demoted_folder("extras/gson/Copy.java") == "extras"
    assert demoted_folder("lib/bin/x.js") is None  # only the top level
    assert demoted_folder("bin") is None  # a file named bin, not a folder


def test_tooling_moves_below_the_library_unless_the_issue_names_it() -> None:
    g, ids = _graph()
    order = [ids[2], ids[7], ids[0], ids[5]]
    assert demote(order, g, "requests hang", {}) == [ids[0], ids[5], ids[2], ids[7]]
    assert demote(order, g, "bin/GithubAPI.js fails to publish", {}) == [
        ids[2], ids[0], ids[5], ids[7]]
    assert demote(order, g, "`Copy.toJson` drops nulls", {}) == [ids[7], ids[0], ids[5], ids[2]]
    assert demote(order, g, "hang", {ids[2]: "frame: bin/x.js:3"})[0] == ids[2]


def test_issue_names_a_file_or_a_code_name_not_an_english_word() -> None:
    assert issue_names("see githubapi.js", "bin/GithubAPI.js", "GithubAPI.constructor")
    assert not issue_names("the constructor fails", "bin/GithubAPI.js", "GithubAPI.constructor")


def test_a_nested_function_is_folded_into_its_outer_and_the_slot_refilled() -> None:
    g, ids = _graph()
    order = [ids[1], ids[5], ids[0], ids[3], ids[4], ids[6]]
    # the inner ranked first: the outer takes its place; xhr.onloadend goes; requestAll fills
    assert fold_nested(order, g, set(), k=4) == [ids[0], ids[5], ids[3], ids[6]]


def test_a_nested_function_the_issue_points_at_stays() -> None:
    g, ids = _graph()
    order = [ids[0], ids[1], ids[5]]
    folded: dict[str, list[str]] = {}
    # only the inner has its own signal: it is the one item, at the outer's place
    assert fold_nested(order, g, {ids[1]}, k=3, folded=folded) == [ids[1], ids[5]]
    assert folded == {ids[1]: [ids[0]]}
    assert fold_nested(order, g, {ids[0], ids[1]}, k=3) == order  # both: both stay
    assert fold_nested(order, g, {ids[0]}, k=3) == [ids[0], ids[5]]
    assert fold_nested(order, g, set(), k=3) == [ids[0], ids[5]]  # nothing left to fill


def test_a_sibling_with_a_longer_name_is_not_nested() -> None:
    g, ids = _graph()
    assert fold_nested([ids[0], ids[6]], g, set(), k=2) == [ids[0], ids[6]]


def test_tidy_list_fills_from_the_pool_and_can_be_switched_off() -> None:
    g, ids = _graph()
    final = [ids[2], ids[0], ids[1]]
    pool = [ids[2], ids[0], ids[1], ids[5], ids[3]]
    assert tidy_list(final, pool, g, "hang", {}, k=3) == [ids[0], ids[5], ids[3]]
    assert tidy_list(final, pool, g, "hang", {ids[1]: "file: lib/core/Axios.js"}, k=3) == [
        ids[0], ids[5], ids[3]]  # a file mention is no evidence for the inner itself
    assert tidy_list(
        final, pool, g, "hang", {}, k=3, demote_paths=False, fold=False
    ) == final


def test_a_nested_function_whose_scope_the_issue_names_stays_an_item() -> None:
    g, ids = _graph()
    final = [ids[1], ids[0], ids[5]]  # Axios.request.onFulfilled, Axios.request, buildURL
    named = {ids[0]: "qualified: Axios.request"}
    # the issue names Axios.request: onFulfilled, inside it, has that scope as its own signal
    # (a fix often edits the nested function: sympy's Mod.eval.doit), so both stay
    inner = {ids[1]: "member: function Axios.request"}
    assert tidy_list(final, final, g, "x", named | inner, k=3, demote_paths=False) == final
    # naming only the file is no signal of the nested function's own: it folds
    in_file = {ids[1]: "file: lib/core/Axios.js"}
    assert tidy_list(final, final, g, "x", named | in_file, k=3, demote_paths=False) == [
        ids[0], ids[5]]


def test_a_member_attached_inside_a_function_is_no_helper() -> None:
    g, outer, inner = _plugin(1)  # utc.proto.m0: a method on an object, not a local helper
    assert fold_nested([outer, inner[1]], g, set(), k=2) == [outer, inner[1]]
    assert fold_nested([outer, inner[0]], g, set(), k=2) == [outer]  # utc.helper is one


def test_a_module_in_function_form_and_its_closure_are_one_item_the_higher_one() -> None:
    path = "lib/adapters/http.js"
    g, ids = graph_of([(path, "httpAdapter", 1, 700), (path, "httpAdapter.dispatch", 20, 690)]
                      + [(path, f"httpAdapter.dispatch.h{i}", 30 + i, 30 + i) for i in range(4)])
    for inner in ids[1:]:
        g.add_edge(ids[0] if inner == ids[1] else ids[1], inner, "contains")
    assert nested_functions(g, ids[0]) > MAX_HELPERS
    folded: dict[str, list[str]] = {}
    assert fold_nested([ids[1], ids[5], ids[0]], g, set(), k=3, folded=folded) == [ids[1]]
    assert folded == {ids[1]: [ids[5], ids[0]]}
    assert fold_nested([ids[0], ids[1]], g, set(), k=2) == [ids[0]]


def test_an_object_literals_member_defined_in_a_function_is_no_helper() -> None:
    path = "src/plugin/localeData/index.js"
    g, ids = graph_of([(path, "localeData", 1, 30), (path, "localeData.months", 3, 3)])
    g.add_edge(ids[0], ids[1], "contains")
    g.g.nodes[ids[1]]["member"] = True  # `return { months: instance => ... }`
    assert fold_nested([ids[0], ids[1]], g, set(), k=2) == ids


def test_a_module_sized_anonymous_export_keeps_its_nested_functions() -> None:
    path = "src/plugin/localeData/index.js"
    g, ids = graph_of([(path, "default", 1, 90)] + [
        (path, f"default.helper{i}", 2 + i, 2 + i) for i in range(MAX_HELPERS + 1)])
    for nid in ids[1:]:
        g.add_edge(ids[0], nid, "contains")
    assert module_export(g, ids[0]) and not module_export(g, ids[1])
    assert fold_nested([ids[0], ids[1]], g, set(), k=2) == [ids[0], ids[1]]


def test_a_function_nested_two_deep_through_functions_is_folded() -> None:
    path = "lib/core/Axios.js"
    g, ids = graph_of([
        (path, "forEachMethodWithData", 1, 30),
        (path, "forEachMethodWithData.generateHTTPMethod", 2, 20),
        (path, "forEachMethodWithData.generateHTTPMethod.httpMethod", 3, 10),
    ])
    assert nested_in(g, ids[2], ids[0])
    assert fold_nested([ids[0], ids[2]], g, set(), k=2) == [ids[0]]


def test_a_function_the_issue_names_as_code_stays_above_wording_only_ones() -> None:
    g, ids = _graph()
    text = "We run the app and `helpers.buildURL()` drops the query"
    evidence = {ids[5]: "backtick: buildURL", ids[3]: "file: lib/adapters/xhr.js"}
    assert named_as_code(evidence, text) == {ids[5]}
    order = [ids[0], ids[3], ids[6], ids[5]]
    # above every function with no signal listed before it, below one with a signal
    assert keep_named_on_top(order, {ids[5]}, evidence) == [ids[5], ids[0], ids[3], ids[6]]
    assert keep_named_on_top([ids[3], ids[0], ids[5]], {ids[5]}, evidence) == [
        ids[3], ids[5], ids[0]]
    final = [ids[0], ids[6], ids[5]]
    assert tidy_list(final, final, g, text, evidence, k=3, named={ids[5]})[0] == ids[5]


def test_a_prose_name_counts_as_code_only_when_written_as_code() -> None:
    _g, ids = _graph()
    called = {ids[5]: "name: buildURL"}
    assert named_as_code(called, "c.buildURL() returns the proxy address") == {ids[5]}
    assert named_as_code(called, "Url::buildURL is wrong") == {ids[5]}
    assert named_as_code(called, "buildURL returns the proxy address") == set()
    assert named_as_code(called, "buildURL() and `buildURL` are no member") == set()
    assert named_as_code({ids[0]: "member: class Axios"}, "`Axios` fails") == set()


def test_test_code_outside_the_test_folders_is_found() -> None:
    assert is_test_code("src/walk.rs", "tests.test_hidden_files")  # #[cfg(test)] mod tests
    assert not is_test_code("src/walk.rs", "WalkState.tests_passed")
    assert not is_test_code("src/tests.py", "tests.helper")  # a Python name, no Rust module
    assert is_test_code("crates/core/benches/search.rs", "bench_search")
    assert is_test_code("src/test_utils.rs", "TestEnv.new")
    assert is_test_code("pkg/testing/fake.go", "Fake.Do")
    assert not is_test_code("src/bin/fd.rs", "main")  # a Rust binary is the product


def test_rust_test_modules_move_below_the_library() -> None:
    g, ids = graph_of([("src/walk.rs", "tests.test_x", 1, 5), ("src/walk.rs", "scan", 6, 9)])
    assert demote(ids, g, "hidden files are listed", {}) == [ids[1], ids[0]]
