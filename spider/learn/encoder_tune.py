"""Tune both sides of the bundled encoder on training pairs; write a LoRA delta.

    spider train delta --pairs DIR --work DIR [--write-weights]

The bundled all-MiniLM-L6-v2 gets low-rank adapters (LoRA, through ``peft``) on every
linear map of its six layers; queries and documents go through the same tuned model, so
the function vectors of an index change too (an index is re-embedded: the cache is keyed
by the delta's digest). The loss is the contrastive one of sentence-transformers'
MultipleNegativesRankingLoss: each query against its positive, every other positive of
the batch and the hard negatives drawn from the same repository at the same commit
(:mod:`spider.learn.pairs`), with the other positives of the *same* issue masked out.
Stages run in order: code–text pairs first, then mined fix commits (a commit message or
the changelog line it adds), then real issues. Before the commit and issue stages a
consistency filter drops a pair whose positive the untuned model ranks last among itself
and its negatives (a label the base model cannot place at all is more often noise).

With ``holdout`` set, whole repositories holding that share of the issue queries are
kept out of every stage, and the run validates on their issues every ``eval_every``
steps (the positive's rank among the fix commit's hard negatives), writing its learning
curve to ``work/curve.jsonl``: training is one pass over each stage's pairs, so a point
at a quarter of the steps is the model that has seen a quarter of the pairs.

Training checkpoints every ``checkpoint_every`` steps into ``work``; the same command
resumes from the last checkpoint, so a run may span sessions. What is written is only
the adapters' factors (``spider.retrieve.delta``'s format), a few MB.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from spider.errors import InputError
from spider.learn.lora import load_trainable, lora_factors, lora_state
from spider.learn.lora import torch_module as _torch
from spider.learn.model_file import LoraBody, Provenance, write_model_file
from spider.learn.pairs import Pair
from spider.learn.torch_fit import (
    Loop,
    StepReport,
    append_point,
    holdout_repos,
    load_checkpoint,
    read_curve,
    run_steps,
    save_checkpoint,
    warmup_cosine,
)
from spider.retrieve.delta import DELTA_KIND, DELTA_SCHEMA
from spider.retrieve.dense import BUNDLED_MODEL_ID

log = logging.getLogger(__name__)

BATCHING = ("mixed", "repo")


@dataclass
class TuneConfig:
    """How the encoder is tuned (recorded in the delta file)."""

    stages: list[tuple[str, int]] = field(
        default_factory=lambda: [("code-text", 600), ("commit", 0), ("issue", 300)]
    )  # (pair kind, optimiser steps)
    batch: int = 16
    negatives: int = 1  # hard negatives per query in a batch
    batching: str = "mixed"  # "mixed": any pairs together; "repo": a batch from one repository
    rank: int = 16
    alpha: float = 32.0
    dropout: float = 0.05
    lr: float = 2e-4
    warmup: int = 30
    scale: float = 20.0  # 1 / temperature
    max_query_tokens: int = 128
    max_doc_tokens: int = 128
    bf16: bool = True
    consistency: bool = True
    consistency_group: int = 8  # positive + 7 negatives ranked by the base model
    fraction: float = 1.0  # share of each stage's pairs used (the learning curve)
    holdout: float = 0.0  # share of issue queries kept out, whole repositories, to validate
    seed: int = 0
    checkpoint_every: int = 50
    eval_every: int = 100  # steps between validations on the held-out issues
    eval_queries: int = 150  # held-out pairs scored at each validation


@dataclass
class TuneResult:
    """What a run did (also the ``trained_on`` part of the delta's metadata)."""

    steps_done: int
    steps_total: int
    finished: bool
    pairs: dict[str, int]
    dropped_inconsistent: int
    seconds: float
    losses: list[float]
    holdout_repos: list[str] = field(default_factory=list)
    curve: list[dict[str, Any]] = field(default_factory=list)


def _embed(model: Any, tok: Any, texts: Sequence[str], max_tokens: int, bf16: bool) -> Any:
    """Mean-pooled, unit-norm vectors (sentence-transformers' MiniLM pipeline), with grad."""
    torch = _torch()
    enc = tok(
        list(texts), truncation=True, max_length=max_tokens, padding=True, return_tensors="pt"
    )
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        hidden = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled.float(), dim=-1)


def batch_loss(
    model: Any, tok: Any, batch: Sequence[Pair], cfg: TuneConfig, rng: random.Random
) -> Any:
    """Contrastive loss of one batch: query i against every document of the batch, its own
    positive the target; positives of another pair of the same issue are masked."""
    torch = _torch()
    docs = [p.positive for p in batch]
    for p in batch:
        docs.extend(rng.sample(p.negatives, min(cfg.negatives, len(p.negatives))))
    q = _embed(model, tok, [p.query for p in batch], cfg.max_query_tokens, cfg.bf16)
    d = _embed(model, tok, docs, cfg.max_doc_tokens, cfg.bf16)
    scores = cfg.scale * q @ d.T
    mask = torch.zeros_like(scores, dtype=torch.bool)
    for i, p in enumerate(batch):
        for j, doc in enumerate(docs):
            if j == i:
                continue
            same_issue = j < len(batch) and batch[j].source == p.source and p.kind != "code-text"
            if same_issue or doc == p.positive:
                mask[i, j] = True  # the issue's other edited function, or its own text again
    scores = scores.masked_fill(mask, -1e4)
    target = torch.arange(len(batch))
    return torch.nn.functional.cross_entropy(scores, target)


def _vectors(
    model: Any, tok: Any, texts: Sequence[str], max_tokens: int, bf16: bool, batch: int = 64
) -> dict[str, Any]:
    """Each distinct text's vector (no grad): texts shared by several pairs (an issue's
    negatives, its query) are embedded once, in batches of similar length."""
    torch = _torch()
    out: dict[str, Any] = {}
    distinct = sorted(set(texts), key=len)
    with torch.no_grad():
        for i in range(0, len(distinct), batch):
            chunk = distinct[i : i + batch]
            out.update(zip(chunk, _embed(model, tok, chunk, max_tokens, bf16), strict=True))
    return out


def _positive_ranks(
    model: Any, tok: Any, pairs: Sequence[Pair], cfg: TuneConfig, group: int
) -> list[int]:
    """Each pair's positive's rank (1 = first) among itself and its first ``group - 1``
    negatives, by the model as it is; 1 for a pair without negatives."""
    torch = _torch()
    groups = [[p.positive, *p.negatives[: group - 1]] for p in pairs]
    queries = _vectors(model, tok, [p.query for p in pairs], cfg.max_query_tokens, cfg.bf16)
    docs = _vectors(model, tok, [t for g in groups for t in g], cfg.max_doc_tokens, cfg.bf16)
    ranks: list[int] = []
    for p, g in zip(pairs, groups, strict=True):
        s = torch.stack([docs[t] for t in g]) @ queries[p.query]
        ranks.append(1 + int((s[1:] > s[0]).sum()))
    return ranks


def consistent(model: Any, tok: Any, pairs: Sequence[Pair], cfg: TuneConfig) -> list[Pair]:
    """The pairs whose positive the (untuned) model does not rank last among itself and its
    first ``consistency_group - 1`` negatives."""
    was_training = model.training
    model.eval()
    with model.disable_adapter():
        ranks = _positive_ranks(model, tok, pairs, cfg, cfg.consistency_group)
    if was_training:
        model.train()
    return [
        p
        for p, r in zip(pairs, ranks, strict=True)
        if r < 1 + min(len(p.negatives), cfg.consistency_group - 1) or not p.negatives
    ]


def split_holdout(
    pairs: dict[str, list[Pair]], share: float, seed: int = 0
) -> tuple[dict[str, list[Pair]], list[Pair], list[str]]:
    """Keep whole repositories out of every kind until they hold ``share`` of the issue
    queries; returns the training pairs, the held-out issue pairs and those repositories.

    Repositories are taken in an order fixed by the seed, so a resumed run holds out the
    same ones; the held-out repositories' code never enters training either."""
    if share <= 0:
        return pairs, [], []
    issues = pairs.get("issue", [])
    queries = Counter(p.repo for p in {p.source: p for p in issues}.values())
    held = set(holdout_repos(queries, share, seed))
    train = {kind: [p for p in rows if p.repo not in held] for kind, rows in pairs.items()}
    return train, [p for p in issues if p.repo in held], sorted(held)


def validate(model: Any, tok: Any, held: Sequence[Pair], cfg: TuneConfig) -> dict[str, float]:
    """How the current model ranks each held-out pair's positive: among itself and its hard
    negatives (the fix commit's functions BM25 ranks highest: ``mrr``, ``top1``, ``top3``),
    and among every function of the scored pairs of the same repository (its own hard
    negatives and other issues' functions, the issue's other edited functions left out:
    ``repo_mrr``, ``repo_top10``), which is closer to retrieval over a whole repository."""
    torch = _torch()
    sample = sorted(held, key=lambda p: hashlib.sha256(p.to_json().encode()).hexdigest())
    sample = [p for p in sample if p.negatives][: cfg.eval_queries]
    was_training = model.training
    model.eval()
    queries = _vectors(model, tok, [p.query for p in sample], cfg.max_query_tokens, cfg.bf16)
    texts = [t for p in sample for t in (p.positive, *p.negatives)]
    docs = _vectors(model, tok, texts, cfg.max_doc_tokens, cfg.bf16)
    if was_training:
        model.train()
    edited: dict[str, set[str]] = {}
    pools: dict[str, set[str]] = {}
    for p in sample:
        edited.setdefault(p.source, set()).add(p.positive)
        pools.setdefault(p.repo, set()).update((p.positive, *p.negatives))
    ranks, repo_ranks = [], []
    for p in sample:
        q = queries[p.query]
        own = float(docs[p.positive] @ q)
        group = torch.stack([docs[t] for t in p.negatives]) @ q
        ranks.append(1 + int((group > own).sum()))
        pool = [t for t in pools[p.repo] if t not in edited[p.source]]
        scores = torch.stack([docs[t] for t in pool]) @ q if pool else torch.zeros(0)
        repo_ranks.append(1 + int((scores > own).sum()))
    n = max(1, len(ranks))
    return {
        "queries": len(ranks),
        "mrr": round(sum(1 / r for r in ranks) / n, 4),
        "top1": round(sum(r == 1 for r in ranks) / n, 4),
        "top3": round(sum(r <= 3 for r in ranks) / n, 4),
        "repo_mrr": round(sum(1 / r for r in repo_ranks) / n, 4),
        "repo_top10": round(sum(r <= 10 for r in repo_ranks) / n, 4),
        "repo_pool": round(sum(len(v) for v in pools.values()) / max(1, len(pools))),
    }


def _curve_point(
    model: Any, tok: Any, held: Sequence[Pair], cfg: TuneConfig, work: Path, step: int,
    seen: dict[str, int], base: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """Validate and append one learning-curve point to ``work/curve.jsonl``."""
    with model.disable_adapter() if base else contextlib.nullcontext():
        scores = validate(model, tok, held, cfg)
    point = {"step": step, "seen": dict(seen), **scores}
    append_point(work, point)
    log.info("validation at step %d: %s", step, scores)
    return point


def _batches(
    pairs: Sequence[Pair], batch: int, rng: random.Random, by_repo: bool = False
) -> list[list[Pair]]:
    """One epoch's batches. ``by_repo``: each repository's pairs fill batches of their own
    (its other issues' functions are the in-batch negatives, as hard as the task's), an
    issue's pairs spread over different batches; what is left over is batched mixed."""
    order = list(pairs)
    rng.shuffle(order)
    if not by_repo:
        return [order[i : i + batch] for i in range(0, len(order) - batch + 1, batch)]
    repos: dict[str, list[Pair]] = {}
    for p in order:
        repos.setdefault(p.repo, []).append(p)
    out: list[list[Pair]] = []
    rest: list[Pair] = []
    for rows in repos.values():
        rows = _interleave_sources(rows)
        full = len(rows) - len(rows) % batch
        out.extend(rows[i : i + batch] for i in range(0, full, batch))
        rest.extend(rows[full:])
    rng.shuffle(rest)
    out.extend(rest[i : i + batch] for i in range(0, len(rest) - batch + 1, batch))
    rng.shuffle(out)
    return out


def _epoch(data: Sequence[Pair], cfg: TuneConfig, kind: str, n: int) -> list[list[Pair]]:
    """Epoch ``n``'s batches of a stage (seeded, so a resumed run draws the same ones)."""
    rng = random.Random(f"{cfg.seed}:{kind}:{n}")
    return _batches(data, cfg.batch, rng, by_repo=cfg.batching == "repo")


def _interleave_sources(rows: Sequence[Pair]) -> list[Pair]:
    """Round-robin over the issues (sources), so an issue's pairs land in different batches."""
    by_source: dict[str, list[Pair]] = {}
    for p in rows:
        by_source.setdefault(p.source, []).append(p)
    queues = list(by_source.values())
    out: list[Pair] = []
    while queues:
        out.extend(q.pop(0) for q in queues)
        queues = [q for q in queues if q]
    return out


def tune(
    pairs: dict[str, list[Pair]],
    base_dir: str,
    work: Path,
    cfg: TuneConfig,
    *,
    budget_s: float | None = None,
    on_step: StepReport | None = None,
) -> tuple[Any, TuneResult]:
    """Train (or resume training) the adapters, stage by stage, in the one training loop
    (:func:`spider.learn.torch_fit.run_steps`); returns the model and what was done.

    ``budget_s`` stops after that many seconds at a checkpoint (run again to go on)."""
    torch = _torch()
    if cfg.batching not in BATCHING:
        raise InputError(f"batching is one of {', '.join(BATCHING)}, not {cfg.batching!r}")
    torch.manual_seed(cfg.seed)
    work.mkdir(parents=True, exist_ok=True)
    pairs, held, held_repos = split_holdout(pairs, cfg.holdout, cfg.seed)
    model, tok = load_trainable(base_dir, cfg.rank, cfg.alpha, cfg.dropout)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.01)
    total = sum(steps for _, steps in cfg.stages)
    step, losses, dropped = _resume(model, opt, work, cfg, total)
    used = {kind: 0 for kind, _ in cfg.stages}

    def save(at: int) -> None:
        _save(model, opt, work, cfg, at, losses, dropped)

    loop = Loop(opt, params, [cfg.lr], total, cfg.checkpoint_every, save, losses, budget_s, on_step)
    if held and step == 0 and not read_curve(work):
        _curve_point(model, tok, held, cfg, work, 0, _seen(cfg, 0), base=True)
    model.train()
    offset, stopped = 0, False
    for kind, steps in cfg.stages:
        data = _stage_data(pairs, kind, step < offset + steps, cfg, work, (model, tok), dropped)
        used[kind] = len(data)
        if len(data) < cfg.batch:
            log.warning("stage %s: %d pairs, fewer than a batch; skipped", kind, len(data))
        else:
            stage = _Stage(model, tok, data, cfg, kind, offset, steps)
            evaluate = stage.validator(held, work) if held else None
            step, stopped = run_steps(
                loop, step, offset + steps, stage.loss, stage.lr, evaluate, cfg.eval_every
            )
            if stopped:
                break
        offset += steps
    if not stopped:
        save(step)
    result = TuneResult(
        step, total, not stopped, used, sum(dropped.values()), loop.elapsed(), losses,
        held_repos, read_curve(work),
    )  # fmt: skip
    return model, result


def _resume(
    model: Any, opt: Any, work: Path, cfg: TuneConfig, total: int
) -> tuple[int, list[float], dict[str, int]]:
    """The step, losses and consistency drops of the run in ``work`` (its tensors loaded
    into ``model`` and ``opt``); nothing done for a fresh run."""
    resumed = load_checkpoint(work, _config_key(cfg))
    if resumed is None:
        return 0, [], {}
    saved, state = resumed
    model.load_state_dict(saved["model"], strict=False)
    opt.load_state_dict(saved["optimizer"])
    log.info("resumed at step %d of %d", state["step"], total)
    return state["step"], state["losses"], state.get("dropped", {})


def _stage_data(
    pairs: dict[str, list[Pair]],
    kind: str,
    to_run: bool,
    cfg: TuneConfig,
    work: Path,
    untuned: tuple[Any, Any],
    dropped: dict[str, int],
) -> list[Pair]:
    """A stage's pairs: shuffled by the seed, ``fraction`` of them, and (for a stage still
    ``to_run`` past code-text) through the consistency filter, whose drops go to ``dropped``."""
    data = list(pairs.get(kind, []))
    random.Random(f"{cfg.seed}:{kind}").shuffle(data)
    data = data[: max(cfg.batch, int(len(data) * cfg.fraction))]
    if kind != "code-text" and cfg.consistency and to_run:
        model, tok = untuned
        before = len(data)
        data = _cached_filter(work, kind, lambda d=data: consistent(model, tok, d, cfg))
        dropped[kind] = before - len(data)
    return data


class _Stage:
    """One stage's steps for :func:`spider.learn.torch_fit.run_steps`: its batches (an
    epoch's, drawn again each epoch by the seed), its loss and its learning-rate schedule."""

    def __init__(
        self, model: Any, tok: Any, data: list[Pair], cfg: TuneConfig, kind: str, offset: int,
        steps: int,
    ) -> None:  # fmt: skip
        self.model, self.tok, self.data, self.cfg = model, tok, data, cfg
        self.kind, self.offset, self.steps = kind, offset, steps
        self.epoch = 0
        self.batches = _epoch(data, cfg, kind, 0)
        self.per_epoch = len(self.batches)  # the same every epoch: it depends on counts only

    def batch(self, step: int) -> list[Pair]:
        """The batch of run step ``step``."""
        local = step - self.offset
        if local // self.per_epoch != self.epoch:
            self.epoch = local // self.per_epoch
            self.batches = _epoch(self.data, self.cfg, self.kind, self.epoch)
        return self.batches[local % self.per_epoch]

    def loss(self, step: int) -> Any:
        """The contrastive loss of the batch of run step ``step``."""
        rng = random.Random(f"{self.cfg.seed}:{step}")
        return batch_loss(self.model, self.tok, self.batch(step), self.cfg, rng)

    def lr(self, step: int) -> float:
        """Warm-up then cosine over the stage's own steps."""
        return warmup_cosine(step - self.offset, self.steps, self.cfg.warmup)

    def validator(self, held: Sequence[Pair], work: Path) -> Callable[[int], None]:
        """A learning-curve point on ``held`` at a step."""

        def evaluate(step: int) -> None:
            _curve_point(self.model, self.tok, held, self.cfg, work, step, _seen(self.cfg, step))

        return evaluate


def _seen(cfg: TuneConfig, step: int) -> dict[str, int]:
    """Training pairs each stage has consumed after ``step`` optimiser steps."""
    out: dict[str, int] = {}
    offset = 0
    for kind, steps in cfg.stages:
        out[kind] = max(0, min(step - offset, steps)) * cfg.batch
        offset += steps
    return out


def _cached_filter(work: Path, kind: str, run: Callable[[], list[Pair]]) -> list[Pair]:
    """The consistency filter's result, computed once per run folder."""
    path = work / f"consistent-{kind}.jsonl"
    if path.exists():
        from spider.learn.pairs import read_pairs

        return read_pairs(path)
    kept = run()
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(p.to_json() + "\n" for p in kept), encoding="utf-8")
    tmp.replace(path)
    return kept


def _config_key(cfg: TuneConfig) -> dict[str, Any]:
    d = asdict(cfg)
    for how_often in ("checkpoint_every", "eval_every", "eval_queries"):  # not how it trains
        d.pop(how_often)
    d["stages"] = [list(s) for s in cfg.stages]
    if d["batching"] == "mixed":  # runs from before the option resume as they were
        d.pop("batching")
    return d


def _save(
    model: Any,
    opt: Any,
    work: Path,
    cfg: TuneConfig,
    step: int,
    losses: list[float],
    dropped: dict[str, int],
) -> None:
    tensors = {"model": lora_state(model), "optimizer": opt.state_dict()}
    state = {"config": _config_key(cfg), "step": step, "losses": losses, "dropped": dropped}
    save_checkpoint(work, tensors, state)


def write_delta(
    model: Any, path: Path, cfg: TuneConfig, base_fingerprint: str, provenance: Provenance
) -> Path:
    """Save the adapters as the delta file ``spider.retrieve.delta`` reads (float16), through
    the one model-file writer."""
    header = {
        "schema": DELTA_SCHEMA,
        "kind": DELTA_KIND,
        "base": BUNDLED_MODEL_ID,
        "base_fingerprint": base_fingerprint,
        "rank": cfg.rank,
        "alpha": cfg.alpha,
    }
    return write_model_file(path, LoraBody(header, lora_factors(model)), provenance)


@dataclass(frozen=True)
class DeltaRun:
    """What ``spider train delta`` asks for: the pairs, the run folder, the file to write
    and how to train (``tune``)."""

    pairs_dir: Path
    work: Path
    target: Path  # where the finished delta goes
    command: str  # as typed: the file's provenance
    tune: TuneConfig = field(default_factory=TuneConfig)
    excluded: tuple[Path, ...] = ()  # further lists of repositories never to train on
    budget_s: float | None = None
    on_step: StepReport | None = None


@dataclass
class DeltaFit:
    """What :func:`run` did: the training and the file written (None: stopped at a
    checkpoint; the same command goes on)."""

    training: TuneResult
    written: Path | None


def run(config: DeltaRun) -> DeltaFit:
    """Read the pairs, tune (or resume), and write the delta when the run finished."""
    from spider.learn.excluded import excluded_repos
    from spider.learn.pairs import read_pair_folder
    from spider.retrieve.delta import weights_fingerprint
    from spider.retrieve.dense import bundled_model_path

    cfg = config.tune
    data = read_pair_folder(config.pairs_dir, excluded_repos(list(config.excluded)))
    base = bundled_model_path()
    model, result = tune(
        data, base, config.work, cfg, budget_s=config.budget_s, on_step=config.on_step
    )
    if not result.finished:
        return DeltaFit(result, None)
    repos = {p.repo for kind in data.values() for p in kind} - set(result.holdout_repos)
    trained_on = {
        "pairs": result.pairs,
        "dropped_inconsistent": result.dropped_inconsistent,
        "repositories": sorted(repos),
        "held_out": result.holdout_repos,
    }
    provenance = Provenance(
        command=config.command,
        comment="",
        cv={},
        extra={
            "trained_on": trained_on,
            "curve": result.curve,
            "config": {k: v for k, v in vars(cfg).items() if k != "stages"}
            | {"stages": [list(s) for s in cfg.stages]},
            "final_loss": sum(result.losses[-50:]) / max(1, len(result.losses[-50:])),
        },
    )
    write_delta(model, config.target, cfg, weights_fingerprint(Path(base)), provenance)
    return DeltaFit(result, config.target)
