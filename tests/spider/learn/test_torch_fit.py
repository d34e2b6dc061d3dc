"""The one shape of a torch fit: the holdout's seed rule, the curve, the checkpoints and
the budgeted loop (a one-tensor model: no transformer needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from spider.errors import InputError
from spider.learn.encoder_tune import split_holdout
from spider.learn.pairs import Pair
from spider.learn.torch_fit import (
    CHECKPOINT,
    STATE,
    Loop,
    append_point,
    holdout_repos,
    load_checkpoint,
    read_curve,
    run_steps,
    save_checkpoint,
    warmup_cosine,
)

torch = pytest.importorskip("torch")

REPOS = ["acme/a", "beta/b", "gamma/c", "delta/d", "eps/e", "zeta/f", "eta/g", "theta/h"]
COUNTS = {r: i + 1 for i, r in enumerate(REPOS)}
# What `encoder_tune.split_holdout` held out before the split moved to torch_fit (computed
# with the code of commit d1b69bd): the delta's rule is the one rule now.
BEFORE = {
    (0, 0.15): ["acme/a", "zeta/f"],
    (0, 0.3): ["acme/a", "eps/e", "zeta/f"],
    (1, 0.15): ["theta/h"],
    (1, 0.3): ["theta/h", "zeta/f"],
    (7, 0.15): ["beta/b", "eps/e"],
    (7, 0.3): ["beta/b", "eps/e", "eta/g"],
}


@pytest.mark.parametrize(("seed", "share"), sorted(BEFORE))
def test_the_holdout_of_fixed_repositories_is_what_it_was(seed: int, share: float) -> None:
    assert holdout_repos(COUNTS, share, seed) == BEFORE[seed, share]
    issues = [Pair("issue", r, f"{r}-{n}", "q", "p", []) for r in REPOS for n in range(COUNTS[r])]
    assert split_holdout({"issue": issues}, share, seed)[2] == BEFORE[seed, share]


def test_a_repositorys_place_does_not_depend_on_the_others() -> None:
    held = holdout_repos(COUNTS, 0.3, 0)
    fewer = {r: COUNTS[r] for r in REPOS if r not in ("beta/b", "gamma/c")}
    assert holdout_repos(fewer, 0.3, 0)[0] == held[0] and holdout_repos(COUNTS, 0.0, 0) == []


def test_no_shipped_lora_file_was_fitted_with_a_holdout() -> None:
    """The cross-encoder's split took another seed rule before; no shipped file records a
    holdout, so the one rule changes none of them."""
    shipped = sorted(Path(__file__).resolve().parents[3].glob("spider/*.npz"))
    for path in shipped:
        with np.load(path) as data:
            meta = json.loads(str(data["meta"])) if "meta" in data.files else {}
        if meta.get("kind") in ("encoder-delta", "cross-encoder"):
            assert not meta.get("trained_on", {}).get("held_out"), path


def test_the_learning_rate_warms_up_then_decays() -> None:
    assert [round(warmup_cosine(s, 10, 2), 3) for s in (0, 1, 2, 6, 10)] == [0.5, 1, 1, 0.5, 0]


def test_the_curve_keeps_the_last_point_of_each_step(tmp_path: Path) -> None:
    for step, loss in ((0, 1.0), (2, 0.5), (2, 0.4)):
        append_point(tmp_path, {"step": step, "loss": loss})
    assert read_curve(tmp_path) == [{"step": 0, "loss": 1.0}, {"step": 2, "loss": 0.4}]
    assert read_curve(tmp_path / "none") == []


def test_a_checkpoint_reads_back_and_refuses_other_settings(tmp_path: Path) -> None:
    assert load_checkpoint(tmp_path, {"rank": 4}) is None
    save_checkpoint(tmp_path, {"w": torch.ones(2)}, {"config": {"rank": 4}, "step": 3})
    saved, state = load_checkpoint(tmp_path, {"rank": 4}) or ({}, {})
    assert torch.equal(saved["w"], torch.ones(2)) and state["step"] == 3
    with pytest.raises(InputError, match="other settings"):
        load_checkpoint(tmp_path, {"rank": 8})


def _loop(tmp_path: Path, total: int, budget_s: float | None = None) -> tuple[Loop, Any, list[int]]:
    w = torch.nn.Parameter(torch.zeros(3))
    opt = torch.optim.AdamW([w], lr=0.1)
    saved: list[int] = []

    def save(step: int) -> None:
        saved.append(step)
        save_checkpoint(tmp_path, {"w": w.detach().clone()}, {"config": {}, "step": step})

    return Loop(opt, [w], [0.1], total, 2, save, [], budget_s), w, saved


def test_the_loop_steps_validates_and_checkpoints(tmp_path: Path) -> None:
    loop, w, saved = _loop(tmp_path, 5)
    target = torch.tensor([1.0, -1.0, 2.0])
    seen: list[int] = []
    step, stopped = run_steps(
        loop, 0, 5, lambda _s: ((w - target) ** 2).sum(), lambda s: warmup_cosine(s, 5, 1),
        seen.append, 3,
    )  # fmt: skip
    assert (step, stopped) == (5, False) and len(loop.losses) == 5
    assert loop.losses[-1] < loop.losses[0]
    assert seen == [3, 5] and saved == [2, 4, 5]  # every 2 steps and the last
    assert (tmp_path / CHECKPOINT).exists() and json.loads((tmp_path / STATE).read_text())[
        "step"
    ] == 5


def test_the_loop_stops_at_a_checkpoint_when_its_budget_is_spent(tmp_path: Path) -> None:
    loop, w, saved = _loop(tmp_path, 5, budget_s=0.0)
    step, stopped = run_steps(loop, 0, 5, lambda _s: (w**2).sum() + 1, lambda _s: 1.0)
    assert (step, stopped) == (1, True) and saved == [1]
