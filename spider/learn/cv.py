"""Leave-one-repository-out cross-validation: the folds every fitting command uses.

A repository's instances share code, vocabulary and conventions, so a fold holds out a
whole repository (scikit-learn's ``LeaveOneGroupOut`` with the repository as the group):
folds come in sorted repository order, items keep their order inside a fold. With many
repositories, :func:`repository_folds` holds out groups of whole repositories instead
(``GroupKFold``), which costs K fits instead of one per repository.

Every fit's ``cross_validate`` returns one :class:`CVReport`: what it chose (typed per
fit), the instances and folds, and its figures as the command writes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from spider.errors import InputError

T = TypeVar("T")
C = TypeVar("C")  # what a cross-validation chooses
MIN_GROUPS = 2  # one repository to hold out, at least one to fit on


@dataclass(frozen=True)
class CVReport(Mapping[str, Any], Generic[C]):
    """What every ``cross_validate`` returns: the choice it made (``chosen``: the pool
    ranker's parameters and calibration, the adapter's parameters, the head's (pool, C),
    the selector's margin, the calibration, the fusion weights), how many ``instances``,
    how the ``folds`` were made, and the ``figures`` as its JSON report holds them.

    It reads as that report (a read-only mapping of ``figures``), so a command prints and
    writes the figures as before; :meth:`to_json` is a copy to write or to extend."""

    chosen: C
    instances: int
    folds: str
    figures: Mapping[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.figures[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.figures)

    def __len__(self) -> int:
        return len(self.figures)

    def to_json(self) -> dict[str, Any]:
        """The figures as a new dict (the JSON report)."""
        return dict(self.figures)


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
    items: Sequence[T], repo: Callable[[T], str], folds: int = 0, shuffle: int | None = None
) -> Iterator[tuple[str, list[T], list[T]]]:
    """Like :func:`leave_one_repository_out`, with ``folds`` groups of whole repositories
    held out in turn (0, or as many folds as repositories: one repository per fold). The
    held-out name joins the fold's repositories with ``+``. ``shuffle``: a seed that draws
    which repositories share a fold (None: the same size-balanced split every time; one
    repository per fold has only one split)."""
    groups = [repo(x) for x in items]
    if folds <= 0 or folds >= len(set(groups)):
        yield from leave_one_repository_out(items, repo)
        return
    if folds < MIN_GROUPS:
        raise InputError(f"cross-validation needs at least {MIN_GROUPS} folds, got {folds}")
    import numpy as np
    from sklearn.model_selection import GroupKFold

    split = (
        GroupKFold(n_splits=folds)
        if shuffle is None
        else GroupKFold(n_splits=folds, shuffle=True, random_state=shuffle)
    )
    for train, test in split.split(np.zeros((len(groups), 1)), groups=groups):
        held = "+".join(sorted({groups[i] for i in test}))
        yield held, [items[i] for i in train], [items[i] for i in test]
