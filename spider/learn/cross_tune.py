"""Train the cross-encoder: the bundled MiniLM reading an issue and a function together.

    spider train cross --corpus DIR --work DIR [--holdout 0.2] [--write-weights]

A bi-encoder embeds the issue and the function apart and compares two vectors; a
cross-encoder reads the pair as one input (``[CLS] issue [SEP] function [SEP]``), so every
word of the issue attends to every token of the code. It is too slow for a whole
repository, so it scores only the pool ranker's top ``depth`` (30) and its score joins the
ranker's (:mod:`spider.cross`).

The model is the bundled all-MiniLM-L6-v2 with low-rank adapters (LoRA, through ``peft``,
as :mod:`spider.learn.encoder_tune`) on every linear map of its six layers, and a head:
the mean-pooled, unit-norm vector of the pair against one learned direction,
``score = scale * (v . w / |w|) + bias``. The head starts as a linear probe of the untuned
model (the direction from the mean vector of (issue, non-edited function) pairs to the
mean of (issue, edited function) pairs) rather than at random.

The data is the training corpus (``spider train corpus``, which keeps each pool's texts
and the issue's): for each issue, its edited functions in the pool are the positives and
the functions the pool ranker puts in its top ``depth`` that the fix does not edit are the
negatives, which are exactly the items the cross-encoder has to tell apart at inference.
A step takes ``batch`` issues, one positive each and ``negatives`` sampled from that
issue's negatives; the loss is the softmax cross-entropy of the positive among them.

With ``holdout``, whole repositories holding that share of the issues are kept out of
training; a pool ranker refitted without them ranks their pools, and each validation
re-ranks those top ``depth`` lists by the cross-encoder alone and by the pool ranker's
standardised score plus ``weight`` x the cross-encoder's, for a grid of weights: the
learning curve goes to ``work/curve.jsonl`` and the best weight is what the file ships
with. Training checkpoints every ``checkpoint_every`` steps; the same command resumes.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from spider.cross import combined
from spider.errors import InputError
from spider.learn.corpus import corpus_files
from spider.learn.encoder_tune import read_curve, warmup_cosine
from spider.learn.excluded import is_excluded
from spider.learn.ranker import mean_metrics, metrics

log = logging.getLogger(__name__)

CHECKPOINT = "checkpoint.pt"
STATE = "state.json"
CURVE = "curve.jsonl"
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)  # of the cross-encoder's z-score
CROSS_ONLY = "cross"  # the curve's key for the cross-encoder's order alone


@dataclass
class CrossConfig:
    """How the cross-encoder is trained (recorded in its file)."""

    steps: int = 400
    batch: int = 4  # issues per step
    negatives: int = 7  # per issue and step, sampled from its top-depth negatives
    depth: int = 30  # the pool ranker's top items it re-scores
    rank: int = 16
    alpha: float = 32.0
    dropout: float = 0.05
    lr: float = 2e-4
    head_lr: float = 2e-3
    warmup: int = 30
    scale: float = 20.0
    max_tokens: int = 192  # issue and function together (the longer is cut first)
    bf16: bool = True
    holdout: float = 0.0
    seed: int = 0
    checkpoint_every: int = 25
    eval_every: int = 100
    eval_issues: int = 120


@dataclass(frozen=True)
class Group:
    """One issue of the corpus as the cross-encoder sees it."""

    instance_id: str
    repo: str
    query: str
    positives: tuple[str, ...]  # edited functions anywhere in the pool
    negatives: tuple[str, ...]  # not edited, in the ranker's top depth, best first
    texts: tuple[str, ...]  # the ranker's top depth, best first
    labels: np.ndarray  # 1 where the fix edits texts[i]
    ranker: np.ndarray  # the ranker's score of texts[i]
    tail: np.ndarray  # labels of the pool below the top depth, in the ranker's order
    total: int  # edited functions in the graph (the recall denominator)


@dataclass
class CrossResult:
    """What a run did."""

    steps_done: int
    steps_total: int
    finished: bool
    issues: int
    repos: int
    seconds: float  # of training, over every run that resumed it
    losses: list[float]
    holdout_repos: list[str] = field(default_factory=list)
    curve: list[dict[str, Any]] = field(default_factory=list)


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - a dependency of the project
        raise InputError(
            "training the cross-encoder needs torch (pip install torch==2.13.0)"
        ) from exc
    return torch


def read_groups(
    corpus: Path,
    excluded: frozenset[str],
    rank: Callable[[np.ndarray], np.ndarray] | None,
    depth: int,
) -> tuple[list[Group], int]:
    """Every labelled issue of the corpus at ``corpus`` as a :class:`Group`, its pool
    ordered by ``rank`` (the pool ranker's scores of its feature rows; None: the first
    stage's order). Returns the groups and how many rows ``excluded`` repositories lost."""
    groups: list[Group] = []
    dropped = 0
    for path in corpus_files(corpus):
        with np.load(path, allow_pickle=False) as data:
            repo = str(data["repo"])
            if is_excluded(repo, excluded):
                dropped += 1
                continue
            if "texts" not in data.files or "issue_text" not in data.files:
                raise InputError(
                    f"{path} holds no texts (collected before the cross-encoder); delete the "
                    f"corpus folder and run `spider train corpus` again"
                )
            labels = int(data["labels"])
            y = data["y"].astype(np.int64)
            if labels <= 0 or not y.any():
                continue
            x = data["x"].astype(np.float64)
            texts = [str(t) for t in data["texts"]]
            query = str(data["issue_text"])
        scores = rank(x) if rank is not None else -np.arange(len(y), dtype=np.float64)
        order = np.argsort(-scores, kind="stable")
        top, rest = order[:depth], order[depth:]
        groups.append(
            Group(
                instance_id=path.stem,
                repo=repo,
                query=query,
                positives=tuple(texts[i] for i in np.flatnonzero(y)),
                negatives=tuple(texts[i] for i in top if not y[i]),
                texts=tuple(texts[i] for i in top),
                labels=y[top],
                ranker=scores[top],
                tail=y[rest],
                total=labels,
            )
        )
    return groups, dropped


def holdout_repos(counts: dict[str, int], share: float, seed: int) -> list[str]:
    """Whole repositories, in a seeded order, until they hold about ``share`` of the
    issues (``counts``: issues per repository); none for a share of 0."""
    if share <= 0:
        return []
    total = sum(counts.values())
    repos = sorted(counts)
    random.Random(seed).shuffle(repos)
    held: list[str] = []
    for repo in repos:
        if sum(counts[r] for r in held) >= share * total:
            break
        held.append(repo)
    return held


def split_holdout(
    groups: Sequence[Group], share: float, seed: int
) -> tuple[list[Group], list[Group], list[str]]:
    """The groups to train on, those of the kept-out repositories, and those repositories
    (:func:`holdout_repos`)."""
    held = holdout_repos(dict(Counter(g.repo for g in groups)), share, seed)
    keep = set(held)
    return [g for g in groups if g.repo not in keep], [g for g in groups if g.repo in keep], held


class CrossModel:
    """The adapters, the head and the tokenizer: scores for (issue, function) pairs."""

    def __init__(self, base_dir: str, cfg: CrossConfig) -> None:
        from spider.learn.encoder_tune import TuneConfig, load_trainable

        torch = _torch()
        self.cfg = cfg
        self.model, self.tok = load_trainable(
            base_dir, TuneConfig(rank=cfg.rank, alpha=cfg.alpha, dropout=cfg.dropout)
        )
        width = int(self.model.config.hidden_size)
        self.direction = torch.nn.Parameter(torch.zeros(width))
        self.bias = torch.nn.Parameter(torch.zeros(()))

    def vectors(self, queries: Sequence[str], docs: Sequence[str]) -> Any:
        """Mean-pooled, unit-norm vectors of the pairs (what the ONNX path computes)."""
        torch = _torch()
        enc = self.tok(
            list(queries),
            list(docs),
            truncation="longest_first",
            max_length=self.cfg.max_tokens,
            padding=True,
            return_tensors="pt",
        )
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.cfg.bf16):
            hidden = self.model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled.float(), dim=-1)

    def logits(self, queries: Sequence[str], docs: Sequence[str]) -> Any:
        """``scale * cos(v, w) + bias`` for each pair."""
        torch = _torch()
        w = torch.nn.functional.normalize(self.direction, dim=0)
        return self.cfg.scale * (self.vectors(queries, docs) @ w) + self.bias

    def score(self, query: str, docs: Sequence[str], batch: int = 32) -> np.ndarray:
        """The cross-encoder's score of each of ``docs`` for ``query`` (no gradients)."""
        torch = _torch()
        out: list[np.ndarray] = []
        was = self.model.training
        self.model.eval()
        with torch.no_grad():
            for s in range(0, len(docs), batch):
                part = docs[s : s + batch]
                out.append(self.logits([query] * len(part), part).numpy())
        self.model.train(was)
        return np.concatenate(out) if out else np.zeros(0)

    def probe(self, groups: Sequence[Group], n: int, rng: random.Random) -> None:
        """Point the head from the mean vector of (issue, non-edited) pairs to that of
        (issue, edited) pairs, under the untuned model."""
        torch = _torch()
        sample = rng.sample(list(groups), min(n, len(groups)))
        pos_q, pos_d, neg_q, neg_d = [], [], [], []
        for g in sample:
            pos_q.append(g.query)
            pos_d.append(rng.choice(g.positives))
            if g.negatives:
                neg_q.append(g.query)
                neg_d.append(g.negatives[0])
        with torch.no_grad():
            pos, neg = (
                self._vectors_in_batches(pos_q, pos_d),
                self._vectors_in_batches(neg_q, neg_d),
            )
            self.direction.copy_(torch.nn.functional.normalize(pos.mean(0) - neg.mean(0), dim=0))
            mid = ((pos + neg) / 2).mean(0) @ self.direction
            self.bias.fill_(float(-self.cfg.scale * mid))

    def _vectors_in_batches(self, queries: list[str], docs: list[str], size: int = 16) -> Any:
        torch = _torch()
        parts = range(0, len(queries), size)
        return torch.cat([self.vectors(queries[s : s + size], docs[s : s + size]) for s in parts])

    def head(self) -> tuple[np.ndarray, float]:
        """The unit direction and the bias, as the inference file stores them."""
        torch = _torch()
        w = torch.nn.functional.normalize(self.direction.detach(), dim=0)
        return w.numpy().astype(np.float32), float(self.bias.detach())


def group_loss(
    model: CrossModel, batch: Sequence[Group], cfg: CrossConfig, rng: random.Random
) -> Any:
    """Softmax cross-entropy of one positive among sampled negatives, per issue."""
    torch = _torch()
    queries: list[str] = []
    docs: list[str] = []
    for g in batch:
        negs = rng.sample(list(g.negatives), min(cfg.negatives, len(g.negatives)))
        chosen = [rng.choice(g.positives), *negs]
        chosen += [chosen[-1]] * (cfg.negatives + 1 - len(chosen))  # equal widths
        queries.extend([g.query] * len(chosen))
        docs.extend(chosen)
    logits = model.logits(queries, docs).view(len(batch), cfg.negatives + 1)
    return torch.nn.functional.cross_entropy(logits, torch.zeros(len(batch), dtype=torch.long))


def evaluate(groups: Sequence[Group], cross: Sequence[np.ndarray]) -> dict[str, dict[str, float]]:
    """R@K / MRR@20 of the top-depth lists ordered by the ranker (weight 0), by the
    ranker plus each weight of the cross-encoder, and by the cross-encoder alone."""
    out: dict[str, list[dict[str, float]]] = {}
    for g, c in zip(groups, cross, strict=True):
        orders = {f"{w:g}": combined(g.ranker, c, w) for w in WEIGHTS} | {CROSS_ONLY: c}
        for key, score in orders.items():
            order = np.argsort(-score, kind="stable")
            out.setdefault(key, []).append(
                metrics(np.concatenate([g.labels[order], g.tail]), g.total)
            )
    return {k: mean_metrics(v) for k, v in out.items()}


def best_weight(point: dict[str, dict[str, float]]) -> float:
    """The weight whose list has the highest Recall@20 + MRR@20 (the smallest on a tie)."""
    keyed = [(point[f"{w:g}"]["R@20"] + point[f"{w:g}"]["MRR@20"], -w, w) for w in WEIGHTS]
    return max(keyed)[2]


def _curve_point(model: CrossModel, held: Sequence[Group], work: Path, step: int) -> dict[str, Any]:
    t = time.perf_counter()
    scores = [model.score(g.query, list(g.texts)) for g in held]
    by = evaluate(held, scores)
    point = {"step": step, "issues": len(held), "by": by, "best_weight": best_weight(by)}
    point["seconds"] = round(time.perf_counter() - t, 1)
    with (work / CURVE).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(point) + "\n")
    return point


def _config_key(cfg: CrossConfig) -> dict[str, Any]:
    d = asdict(cfg)
    for how_often in ("checkpoint_every", "eval_every", "eval_issues"):
        d.pop(how_often)
    return d


def train(
    groups: Sequence[Group],
    held: Sequence[Group],
    base_dir: str,
    work: Path,
    cfg: CrossConfig,
    *,
    budget_s: float | None = None,
    on_step: Callable[[int, int, float], None] | None = None,
) -> tuple[CrossModel, CrossResult]:
    """Train (or resume) the cross-encoder on ``groups``, validating on ``held``.

    ``budget_s`` stops after that many seconds at a checkpoint (run again to go on).

    Long because it is the resumable training loop (checkpoint, budget, curve); issue 40 shares
    one loop between the cross-encoder and the delta."""
    torch = _torch()
    teach = [g for g in groups if g.positives and g.negatives]
    if len(teach) < cfg.batch:
        raise InputError(f"{len(teach)} issues with a positive and a negative: too few to train on")
    torch.manual_seed(cfg.seed)
    work.mkdir(parents=True, exist_ok=True)
    model = CrossModel(base_dir, cfg)
    rng = random.Random(cfg.seed)
    lora = [p for p in model.model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(
        [
            {"params": lora, "lr": cfg.lr, "base": cfg.lr},
            {"params": [model.direction, model.bias], "lr": cfg.head_lr, "base": cfg.head_lr},
        ],
        weight_decay=0.01,
    )
    step, losses, spent = 0, [], 0.0
    state_file, ckpt = work / STATE, work / CHECKPOINT
    if ckpt.exists() and state_file.exists():
        state = json.loads(state_file.read_text())
        if state.get("config") != _config_key(cfg):
            raise InputError(
                f"{work} holds a run with other settings; delete it or pass the same options"
            )
        saved = torch.load(ckpt, weights_only=False)
        model.model.load_state_dict(saved["model"], strict=False)
        model.direction.data.copy_(saved["direction"])
        model.bias.data.copy_(saved["bias"])
        opt.load_state_dict(saved["optimizer"])
        step, losses = state["step"], state["losses"]
        spent = float(state.get("seconds", 0.0))
        log.info("resumed at step %d of %d", step, cfg.steps)
    else:
        (work / CURVE).unlink(missing_ok=True)
        model.probe(teach, 128, rng)
    held_repos = sorted({g.repo for g in held})
    held = list(held)[: cfg.eval_issues]
    if held and step == 0:
        _curve_point(model, held, work, 0)
    t0 = time.perf_counter()
    model.model.train()
    while step < cfg.steps:
        batch = epoch_batch(teach, cfg.batch, step, cfg.seed)
        for g in opt.param_groups:
            g["lr"] = g["base"] * warmup_cosine(step, cfg.steps, cfg.warmup)
        loss = group_loss(model, batch, cfg, random.Random(f"{cfg.seed}:{step}"))
        loss.backward()
        torch.nn.utils.clip_grad_norm_([*lora, model.direction, model.bias], 1.0)
        opt.step()
        opt.zero_grad()
        step += 1
        value = float(loss.detach())
        losses.append(round(value, 4))
        if on_step is not None:
            on_step(step, cfg.steps, value)
        if held and (step % cfg.eval_every == 0 or step == cfg.steps):
            _curve_point(model, held, work, step)
        out_of_time = budget_s is not None and time.perf_counter() - t0 > budget_s
        if step % cfg.checkpoint_every == 0 or step == cfg.steps or out_of_time:
            _save(model, opt, work, cfg, step, losses, spent + time.perf_counter() - t0)
        if out_of_time:
            break
    done = step >= cfg.steps
    result = CrossResult(
        step, cfg.steps, done, len(teach), len({g.repo for g in teach}),
        spent + time.perf_counter() - t0,
        losses, held_repos, read_curve(work),
    )  # fmt: skip
    return model, result


def epoch_batch(groups: Sequence[Group], size: int, step: int, seed: int) -> list[Group]:
    """The issues of optimiser step ``step``: passes over ``groups`` in an order shuffled
    per pass (a function of the step alone, so a resumed run takes the same batches)."""
    per_pass = max(1, len(groups) // size)
    order = list(groups)
    random.Random(f"{seed}:pass:{step // per_pass}").shuffle(order)
    at = (step % per_pass) * size
    return order[at : at + size]


def _save(
    model: CrossModel,
    opt: Any,
    work: Path,
    cfg: CrossConfig,
    step: int,
    losses: list[float],
    seconds: float,
) -> None:
    torch = _torch()
    trainable = {k: v for k, v in model.model.state_dict().items() if "lora_" in k}
    tmp = work / (CHECKPOINT + ".tmp")
    torch.save(
        {
            "model": trainable,
            "direction": model.direction.detach().clone(),
            "bias": model.bias.detach().clone(),
            "optimizer": opt.state_dict(),
        },
        tmp,
    )
    tmp.replace(work / CHECKPOINT)
    state = {"config": _config_key(cfg), "step": step, "losses": losses, "seconds": seconds}
    (work / (STATE + ".tmp")).write_text(json.dumps(state))
    (work / (STATE + ".tmp")).replace(work / STATE)


def write_cross(
    model: CrossModel, path: Path, base_fingerprint: str, weight: float, meta: dict[str, Any]
) -> Path:
    """Save the adapters and the head as the file :mod:`spider.cross` reads (float16
    factors, float32 head)."""
    from spider.cross import CROSS_KIND, DIRECTION
    from spider.learn.encoder_tune import delta_factors
    from spider.retrieve.delta import DELTA_SCHEMA
    from spider.retrieve.dense import BUNDLED_MODEL_ID

    cfg = model.cfg
    factors = delta_factors(model.model)
    direction, bias = model.head()
    header = {
        "schema": DELTA_SCHEMA,
        "kind": CROSS_KIND,
        "base": BUNDLED_MODEL_ID,
        "base_fingerprint": base_fingerprint,
        "rank": cfg.rank,
        "alpha": cfg.alpha,
        "targets": sorted(factors),
        "bias": round(bias, 6),
        "scale": cfg.scale,
        "max_tokens": cfg.max_tokens,
        "depth": cfg.depth,
        "weight": weight,
        **meta,
    }
    arrays: dict[str, np.ndarray] = {
        "meta": np.array(json.dumps(header, sort_keys=True)),
        DIRECTION: direction.astype(np.float32),
    }
    for name, (a, b) in factors.items():
        arrays[f"{name}.lora_A"] = a.astype(np.float16)
        arrays[f"{name}.lora_B"] = b.astype(np.float16)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)
    return path


__all__ = [
    "CROSS_ONLY",
    "CrossConfig",
    "CrossModel",
    "CrossResult",
    "Group",
    "best_weight",
    "epoch_batch",
    "evaluate",
    "group_loss",
    "holdout_repos",
    "read_curve",
    "read_groups",
    "split_holdout",
    "train",
    "write_cross",
]
