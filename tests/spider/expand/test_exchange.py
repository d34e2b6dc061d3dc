"""The fixed-budget exchange: budget kept, protection, placement, order."""

from __future__ import annotations

from spider.expand.select.base import Candidate, SelectionRequest
from spider.expand.select.exchange import exchange
from spider.models import Issue


def _req(centre: str, cands: list[tuple[str, int]], rank: int = 1) -> SelectionRequest:
    return SelectionRequest(
        issue=Issue("t"),
        centre=centre,
        centre_text="",
        centre_rank=rank,
        candidates=tuple(Candidate(i, "", "contains", 2, r, 0.0) for i, r in cands),
        budget_rank=5,
    )


TOP = ["a", "b", "c", "d", "e"]


def test_no_admission_keeps_list() -> None:
    final, placed = exchange(TOP, [_req("a", [("x", 7)])], [[]], 5)
    assert final == TOP
    assert placed == {}


def test_admitted_item_goes_right_below_centre_and_evicts_last() -> None:
    final, placed = exchange(TOP, [_req("b", [("x", 9)], 2)], [["x"]], 5)
    assert final == ["a", "b", "x", "c", "d"]
    assert placed["x"].centre == "b"
    assert placed["x"].edge == "contains"


def test_several_admissions_keep_candidate_rank_order_and_budget() -> None:
    req = _req("a", [("y", 12), ("x", 9)])
    final, _ = exchange(TOP, [req], [["y", "x"]], 5)
    assert final == ["a", "x", "y", "b", "c"]
    assert len(final) == 5


def test_centres_and_accepted_items_are_protected() -> None:
    # centres a, e; e accepts d (already in list) -> d and e protected; c is evicted instead.
    reqs = [_req("a", [("x", 8)]), _req("e", [("d", 4)], 5)]
    final, placed = exchange(TOP, reqs, [["x"], ["d"]], 5)
    assert final == ["a", "x", "b", "d", "e"]
    assert "d" not in placed


def test_admissions_stop_when_nothing_is_evictable() -> None:
    top = ["a", "b"]
    reqs = [_req("a", [("x", 5), ("y", 6)]), _req("b", [("z", 7)], 2)]
    final, placed = exchange(top, reqs, [["x", "y"], ["z"]], 2)
    # a and b are centres (protected): nothing can be evicted, nothing is inserted
    assert final == ["a", "b"]
    assert placed == {}


def test_inserted_items_are_never_evicted_by_later_centres() -> None:
    reqs = [_req("a", [("x", 8)]), _req("b", [("y", 9)], 2)]
    final, _ = exchange(TOP, reqs, [["x"], ["y"]], 5)
    assert final == ["a", "x", "b", "y", "c"]


def test_duplicate_admissions_are_placed_once() -> None:
    reqs = [_req("a", [("x", 8)]), _req("b", [("x", 8)], 2)]
    final, placed = exchange(TOP, reqs, [["x"], ["x"]], 5)
    assert final.count("x") == 1
    assert placed["x"].centre == "a"
    assert len(final) == 5


def test_short_list_grows_up_to_k() -> None:
    final, _ = exchange(["a", "b"], [_req("a", [("x", 3)])], [["x"]], 5)
    assert final == ["a", "x", "b"]


def test_order_by_probability_moves_admitted_items_down_not_up() -> None:
    from spider.expand.select.exchange import Admission, order_by_probability

    final = ["a", "x", "b", "y", "c"]  # x admitted by a, y admitted by b
    placed = {"x": Admission("x", "a", "contains", 2), "y": Admission("y", "b", "invokes", 1)}
    rank_of = {"a": 1, "b": 2, "c": 3}
    p_rank = {1: 0.5, 2: 0.3, 3: 0.1}.__getitem__
    # x is less likely than c: it sinks below c; y is likelier than its centre: capped below b
    got = order_by_probability(final, placed, rank_of, p_rank, {"x": 0.05, "y": 0.9})
    assert got == ["a", "b", "y", "c", "x"]
    assert sorted(got) == sorted(final)
