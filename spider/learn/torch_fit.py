"""The one shape of a torch fit: what the cross-encoder and the encoder delta share.

- :func:`holdout_repos`: whole repositories kept out to validate on, in an order fixed by
  the seed alone (a repository's place does not depend on which others are there), so a
  resumed run holds out the same ones;
- :class:`Loop` and :func:`run_steps`: the budgeted, resumable training loop (warm-up then
  cosine learning rate, gradients clipped to norm 1, a validation every ``eval_every``
  steps and at the end, a checkpoint every ``checkpoint_every`` steps, at the end and when
  the time budget is spent);
- :func:`save_checkpoint` / :func:`load_checkpoint`: the adapters' tensors and the
  optimiser in ``work/checkpoint.pt``, the run's state in ``work/state.json`` (refused
  when the run's settings differ);
- :func:`append_point` / :func:`read_curve`: the learning curve, ``work/curve.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spider.errors import InputError
from spider.learn.lora import torch_module

CHECKPOINT = "checkpoint.pt"
STATE = "state.json"
CURVE = "curve.jsonl"
CLIP_NORM = 1.0  # gradients of every trained tensor together

StepReport = Callable[[int, int, float], None]  # (step, steps in all, loss) after each step


def holdout_repos(counts: Mapping[str, int], share: float, seed: int) -> list[str]:
    """Whole repositories, taken in an order fixed by ``seed`` (sha256 of ``seed:repo``),
    until they hold about ``share`` of the issues (``counts``: issues per repository);
    sorted; none for a share of 0."""
    if share <= 0:
        return []
    total = sum(counts.values())
    order = sorted(counts, key=lambda r: hashlib.sha256(f"{seed}:{r}".encode()).hexdigest())
    held: list[str] = []
    for repo in order:
        if sum(counts[r] for r in held) >= share * total:
            break
        held.append(repo)
    return sorted(held)


def warmup_cosine(step: int, total: int, warmup: int) -> float:
    """The learning-rate factor at ``step``: linear warm-up, then cosine decay to 0."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def append_point(work: Path, point: Mapping[str, Any]) -> None:
    """Append one learning-curve point to ``work/curve.jsonl``."""
    with (work / CURVE).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(point) + "\n")


def read_curve(work: Path) -> list[dict[str, Any]]:
    """The learning-curve points a run has written (one per validated step)."""
    path = work / CURVE
    if not path.exists():
        return []
    points = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            p = json.loads(line)
            points[p["step"]] = p  # a resumed run may validate a step twice
    return [points[k] for k in sorted(points)]


def save_checkpoint(work: Path, tensors: Mapping[str, Any], state: Mapping[str, Any]) -> None:
    """Write ``tensors`` (the adapters, the optimiser, ...) and the run's ``state`` (its
    ``config``, ``step``, ``losses``, ...), each replacing the last atomically."""
    torch = torch_module()
    tmp = work / (CHECKPOINT + ".tmp")
    torch.save(dict(tensors), tmp)
    tmp.replace(work / CHECKPOINT)
    (work / (STATE + ".tmp")).write_text(json.dumps(state))
    (work / (STATE + ".tmp")).replace(work / STATE)


def load_checkpoint(
    work: Path, config: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The saved tensors and state of a run in ``work``, None when there is none; a run
    with another ``config`` (what it trains by) is refused."""
    state_file, ckpt = work / STATE, work / CHECKPOINT
    if not (ckpt.exists() and state_file.exists()):
        return None
    state: dict[str, Any] = json.loads(state_file.read_text())
    if state.get("config") != config:
        raise InputError(
            f"{work} holds a run with other settings; delete it or pass the same options"
        )
    saved: dict[str, Any] = torch_module().load(ckpt, weights_only=False)
    return saved, state


@dataclass
class Loop:
    """What every stretch of optimiser steps of one run shares."""

    opt: Any  # the optimiser
    params: list[Any]  # every trained tensor (clipped together)
    peaks: list[float]  # each parameter group's peak learning rate
    total: int  # the run's steps in all (a checkpoint at the last)
    checkpoint_every: int
    save: Callable[[int], None]  # writes the checkpoint at a step
    losses: list[float]  # one per step done, resumed ones included
    budget_s: float | None = None  # stop at a checkpoint after this long
    on_step: StepReport | None = None
    t0: float = field(default_factory=time.perf_counter)

    def elapsed(self) -> float:
        """Seconds since the loop started (this run only)."""
        return time.perf_counter() - self.t0

    def out_of_time(self) -> bool:
        """Whether the budget is spent."""
        return self.budget_s is not None and self.elapsed() > self.budget_s


def run_steps(
    loop: Loop,
    step: int,
    stop: int,
    loss_at: Callable[[int], Any],
    lr_at: Callable[[int], float],
    evaluate: Callable[[int], None] | None = None,
    eval_every: int = 0,
) -> tuple[int, bool]:
    """Optimiser steps from ``step`` to ``stop``: the loss of a step (``loss_at``), the
    learning rate at a step (``lr_at``: a factor of each group's peak), a validation
    (``evaluate``) every ``eval_every`` steps and at ``stop``. Returns the step reached
    and whether the budget ran out (then a checkpoint was written at that step)."""
    torch = torch_module()
    while step < stop:
        factor = lr_at(step)
        for group, peak in zip(loop.opt.param_groups, loop.peaks, strict=True):
            group["lr"] = peak * factor
        loss = loss_at(step)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(loop.params, CLIP_NORM)
        loop.opt.step()
        loop.opt.zero_grad()
        step += 1
        value = float(loss.detach())
        loop.losses.append(round(value, 4))
        if loop.on_step is not None:
            loop.on_step(step, loop.total, value)
        if evaluate is not None and (step % eval_every == 0 or step == stop):
            evaluate(step)
        out_of_time = loop.out_of_time()
        if step % loop.checkpoint_every == 0 or step == loop.total or out_of_time:
            loop.save(step)
        if out_of_time:
            return step, True
    return step, False


__all__ = [
    "CHECKPOINT",
    "CURVE",
    "STATE",
    "Loop",
    "StepReport",
    "append_point",
    "holdout_repos",
    "load_checkpoint",
    "read_curve",
    "run_steps",
    "save_checkpoint",
    "warmup_cosine",
]
