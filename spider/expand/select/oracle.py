"""A selector that admits exactly the ground-truth neighbours: the ceiling of expansion."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from spider.expand.select.base import SelectionRequest, Selector


class OracleSelector(Selector):
    """Admits a candidate iff it is in the ground truth (benchmarks only, never in the bot).

    ``normalise`` maps a graph id to the ground truth's id convention.
    """

    name = "oracle"

    def __init__(
        self, ground_truth: Iterable[str], normalise: Callable[[str], str] | None = None
    ) -> None:
        self.truth = set(ground_truth)
        self.normalise = normalise or (lambda s: s)

    def _select(self, requests: Sequence[SelectionRequest]) -> list[list[str]]:
        return [
            [c.id for c in req.candidates if self.normalise(c.id) in self.truth] for req in requests
        ]
