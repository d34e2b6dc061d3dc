"""Two models scored on the same held-out instances: the mean difference per metric and its
95% interval, from a bootstrap over repositories (the unit the CV holds out)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from spider.errors import InputError

Scored = Mapping[str, tuple[str, Mapping[str, float]]]  # instance id -> (repository, metrics)

ROUNDS = 2000
SEED = 0


def mean_scored(runs: Sequence[Scored]) -> Scored:
    """Each instance's metrics averaged over ``runs`` of one model that scored the same
    instances (a repeated CV); a single run is returned as it is."""
    if not runs:
        raise InputError("no scored run to average")
    if len(runs) == 1:
        return runs[0]
    if any(set(run) != set(runs[0]) for run in runs):
        raise InputError("repeated runs must score the same instances")
    return {
        i: (repo, {k: float(np.mean([run[i][1][k] for run in runs])) for k in metrics})
        for i, (repo, metrics) in runs[0].items()
    }


def paired_deltas(
    candidate: Scored,
    baseline: Scored,
    keys: Sequence[str],
    rounds: int = ROUNDS,
    seed: int = SEED,
) -> dict[str, dict[str, float]]:
    """Per metric in ``keys``: both means, the candidate's mean minus the baseline's, and the
    2.5th and 97.5th percentiles of that difference over ``rounds`` resamples of whole
    repositories (with replacement). Both must score the same instances."""
    if set(candidate) != set(baseline):
        raise InputError("a paired comparison needs both models scored on the same instances")
    if not candidate:
        raise InputError("a paired comparison needs at least one scored instance")
    ids = sorted(candidate)
    repos = sorted({baseline[i][0] for i in ids})
    members = [np.array([n for n, i in enumerate(ids) if baseline[i][0] == r]) for r in repos]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(repos), size=(rounds, len(repos)))
    out: dict[str, dict[str, float]] = {}
    for key in keys:
        new = np.array([candidate[i][1][key] for i in ids])
        old = np.array([baseline[i][1][key] for i in ids])
        diff = new - old
        sums = np.array([diff[m].sum() for m in members])
        sizes = np.array([len(m) for m in members])
        boot = sums[picks].sum(axis=1) / sizes[picks].sum(axis=1)
        low, high = np.percentile(boot, [2.5, 97.5])
        out[key] = {
            "candidate": round(float(new.mean()), 4),
            "baseline": round(float(old.mean()), 4),
            "delta": round(float(diff.mean()), 4),
            "low": round(float(low), 4),
            "high": round(float(high), 4),
        }
    return out
