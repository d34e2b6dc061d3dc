"""Leave-one-repository-out folds: sorted repositories, items kept in order."""

from __future__ import annotations

import pytest

from spider.errors import InputError
from spider.learn.cv import leave_one_repository_out, repository_folds


def test_folds_hold_out_each_repository_in_sorted_order() -> None:
    items = ["b1", "a1", "b2", "c1", "a2"]
    folds = list(leave_one_repository_out(items, lambda x: x[0]))
    assert folds == [
        ("a", ["b1", "b2", "c1"], ["a1", "a2"]),
        ("b", ["a1", "c1", "a2"], ["b1", "b2"]),
        ("c", ["b1", "a1", "b2", "a2"], ["c1"]),
    ]


def test_one_repository_is_not_enough() -> None:
    with pytest.raises(InputError, match="at least 2 repositories"):
        list(leave_one_repository_out(["a1", "a2"], lambda x: x[0]))


def test_repository_folds_hold_out_whole_repositories_once() -> None:
    items = [(f"r{i % 5}", i) for i in range(20)]
    folds = list(repository_folds(items, lambda x: x[0], folds=2))
    assert len(folds) == 2
    held = [x for _, _, test in folds for x in test]
    assert sorted(held) == sorted(items)  # every item held out exactly once
    for name, train, test in folds:
        repos = {r for r, _ in test}
        assert name == "+".join(sorted(repos)) and not repos & {r for r, _ in train}
    # 0 folds, or as many as repositories: one repository per fold
    assert len(list(repository_folds(items, lambda x: x[0], folds=0))) == 5
    assert len(list(repository_folds(items, lambda x: x[0], folds=9))) == 5


def test_a_shuffle_seed_draws_another_split_of_whole_repositories() -> None:
    """Repeated CV: each seed groups the repositories differently, never splitting one."""
    items = [(f"r{i % 8}", i) for i in range(32)]

    def split(shuffle: int | None) -> frozenset[frozenset[str]]:
        folds = list(repository_folds(items, lambda x: x[0], folds=4, shuffle=shuffle))
        assert len(folds) == 4
        return frozenset(frozenset(r for r, _ in test) for _, _, test in folds)

    assert split(None) == split(None) and split(1) == split(1)  # each split reproducible
    assert len({split(s) for s in (None, 1, 2, 3)}) > 1
    for s in (1, 2, 3):
        held = [r for fold in split(s) for r in fold]
        assert sorted(held) == sorted({r for r, _ in items})  # each repository held out once
