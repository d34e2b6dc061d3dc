"""Leave-one-repository-out cross-validation: the folds every fitting command uses.

A repository's instances share code, vocabulary and conventions, so a fold holds out a
whole repository (scikit-learn's ``LeaveOneGroupOut`` with the repository as the group):
folds come in sorted repository order, items keep their order inside a fold. With many
repositories, :func:`repository_folds` holds out groups of whole repositories instead
(``GroupKFold``), which costs K fits instead of one per repository.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from spider.errors import InputError

T = TypeVar("T")
MIN_GROUPS = 2  # one repository to hold out, at least one to fit on


def leave_one_repository_out(
    items: Sequence[T], repo: Callable[[T], str]
) -> Iterator[tuple[str, list[T], list[T]]]:
    """(held-out repository, training items, held-out items) for each fold."""
    import numpy as np
    from sklearn.model_selection import LeaveOneGroupOut

    groups = [repo(x) for x in items]
    if len(set(groups)) < MIN_GROUPS:
        raise InputError(
            f"leave-one-repository-out CV needs at least {MIN_GROUPS} repositories, "
            f"got {len(set(groups))}"
        )
    for train, test in LeaveOneGroupOut().split(np.zeros((len(groups), 1)), groups=groups):
        yield groups[test[0]], [items[i] for i in train], [items[i] for i in test]


def repository_folds(
    items: Sequence[T], repo: Callable[[T], str], folds: int = 0
) -> Iterator[tuple[str, list[T], list[T]]]:
    """Like :func:`leave_one_repository_out`, with ``folds`` groups of whole repositories
    held out in turn (0, or as many folds as repositories: one repository per fold). The
    held-out name joins the fold's repositories with ``+``."""
    groups = [repo(x) for x in items]
    if folds <= 0 or folds >= len(set(groups)):
        yield from leave_one_repository_out(items, repo)
        return
    if folds < MIN_GROUPS:
        raise InputError(f"cross-validation needs at least {MIN_GROUPS} folds, got {folds}")
    import numpy as np
    from sklearn.model_selection import GroupKFold

    for train, test in GroupKFold(n_splits=folds).split(np.zeros((len(groups), 1)), groups=groups):
        held = "+".join(sorted({groups[i] for i in test}))
        yield held, [items[i] for i in train], [items[i] for i in test]
