from __future__ import annotations

import pytest

from contract.commands import MAX_K, Command, parse_command


@pytest.mark.parametrize("body", [None, "", "thanks!", "please /spider", "/spiderman", "`/spider`"])
def test_not_a_command(body: str | None) -> None:
    assert parse_command(body) is None


def test_bare_command() -> None:
    assert parse_command("/spider") == Command()
    assert parse_command("\n\n  /spider  \nmore text k=3") == Command()


def test_options() -> None:
    cmd = parse_command("/spider k=10 edges=invokes")
    assert cmd == Command(k=10, edges=("invokes",))
    assert cmd.overrides() == {"k": 10, "edges": ("invokes",)}
    assert parse_command("/SPIDER edges=both").edges == ("contains", "invokes")
    assert parse_command("/spider edges=none").edges == ()
    # auto: back to what the selector that runs expands by default (contains + invokes
    # with the Claude selector, none with the offline one)
    assert parse_command("/spider edges=auto").overrides() == {"edges": "auto"}


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("/spider k=0", "k must be 1 to"),
        (f"/spider k={MAX_K + 1}", "k must be 1 to"),
        ("/spider k=ten", "k must be 1 to"),
        ("/spider edges=imports", "edges is"),
        ("/spider selector=anthropic", "known options are k and edges"),
        ("/spider please", "key=value"),
    ],
)
def test_bad_options_are_reported_not_fatal(body: str, problem: str) -> None:
    cmd = parse_command(body + " k=7")
    assert cmd is not None
    assert any(problem in p for p in cmd.problems)
    assert cmd.k == 7 or "k=" in body


def test_problem_text_cannot_break_out_of_its_code_span() -> None:
    cmd = parse_command("/spider `@everyone`=x")
    assert cmd is not None
    (problem,) = cmd.problems
    inside = problem.split("`")[1]
    assert "@everyone" in inside and problem.count("`") == 2
