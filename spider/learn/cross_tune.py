"""Train the cross-encoder: the bundled MiniLM reading an issue and a function together.

    spider train cross --corpus DIR --work DIR [--holdout 0.2] [--write-weights]

A bi-encoder embeds the issue and the function apart and compares two vectors; a
cross-encoder reads the pair as one input (``[CLS] issue [SEP] function [SEP]``), so every
word of the issue attends to every token of the code. It is too slow for a whole
repository, so it scores only the pool ranker's top ``depth`` (30) and its score joins the
ranker's (:mod:`spider.rank.cross`).

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
The split, the loop, the checkpoints and the curve are :mod:`spider.learn.torch_fit`'s, the
adapters :mod:`spider.learn.lora`'s, the file :mod:`spider.learn.model_file`'s;
:func:`run` is the whole fit the command asks for.
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from spider.errors import InputError
from spider.learn.corpus import corpus_files
from spider.learn.excluded import is_excluded
from spider.learn.lora import load_trainable, lora_factors, lora_state
from spider.learn.lora import torch_module as _torch
from spider.learn.model_file import LoraBody, Provenance, write_model_file
from spider.learn.ranker import mean_metrics, metrics
from spider.learn.torch_fit import (
    CURVE,
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
from spider.rank.cross import combined

log = logging.getLogger(__name__)

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


def split_holdout(
    groups: Sequence[Group], share: float, seed: int
) -> tuple[list[Group], list[Group], list[str]]:
    """The groups to train on, those of the kept-out repositories, and those repositories
    (:func:`spider.learn.torch_fit.holdout_repos` of the groups' issues)."""
    held = holdout_repos(Counter(g.repo for g in groups), share, seed)
    return (*split_by(groups, held), held)


def split_by(groups: Sequence[Group], held: Sequence[str]) -> tuple[list[Group], list[Group]]:
    """The groups outside the ``held`` repositories, and those inside."""
    keep = set(held)
    return [g for g in groups if g.repo not in keep], [g for g in groups if g.repo in keep]


class CrossModel:
    """The adapters, the head and the tokenizer: scores for (issue, function) pairs."""

    def __init__(self, base_dir: str, cfg: CrossConfig) -> None:
        torch = _torch()
        self.cfg = cfg
        self.model, self.tok = load_trainable(base_dir, cfg.rank, cfg.alpha, cfg.dropout)
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
    append_point(work, point)
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
    on_step: StepReport | None = None,
) -> tuple[CrossModel, CrossResult]:
    """Train (or resume) the cross-encoder on ``groups``, validating on ``held``, in the
    one training loop (:func:`spider.learn.torch_fit.run_steps`).

    ``budget_s`` stops after that many seconds at a checkpoint (run again to go on)."""
    torch = _torch()
    teach = [g for g in groups if g.positives and g.negatives]
    if len(teach) < cfg.batch:
        raise InputError(f"{len(teach)} issues with a positive and a negative: too few to train on")
    torch.manual_seed(cfg.seed)
    work.mkdir(parents=True, exist_ok=True)
    model = CrossModel(base_dir, cfg)
    lora = [p for p in model.model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(
        [
            {"params": lora, "lr": cfg.lr, "base": cfg.lr},
            {"params": [model.direction, model.bias], "lr": cfg.head_lr, "base": cfg.head_lr},
        ],
        weight_decay=0.01,
    )
    step, losses, spent = _resume(model, opt, work, cfg, teach)
    held_repos = sorted({g.repo for g in held})
    held = list(held)[: cfg.eval_issues]
    if held and step == 0:
        _curve_point(model, held, work, 0)

    def save(at: int) -> None:
        _save(model, opt, work, cfg, at, losses, spent + loop.elapsed())

    params = [*lora, model.direction, model.bias]
    loop = Loop(opt, params, [cfg.lr, cfg.head_lr], cfg.steps, cfg.checkpoint_every, save, losses,
                budget_s, on_step)  # fmt: skip
    model.model.train()

    def loss_at(at: int) -> Any:
        batch = epoch_batch(teach, cfg.batch, at, cfg.seed)
        return group_loss(model, batch, cfg, random.Random(f"{cfg.seed}:{at}"))

    def evaluate(at: int) -> None:
        _curve_point(model, held, work, at)

    step, _ = run_steps(
        loop, step, cfg.steps, loss_at, lambda at: warmup_cosine(at, cfg.steps, cfg.warmup),
        evaluate if held else None, cfg.eval_every,
    )  # fmt: skip
    result = CrossResult(
        step, cfg.steps, step >= cfg.steps, len(teach), len({g.repo for g in teach}),
        spent + loop.elapsed(), losses, held_repos, read_curve(work),
    )  # fmt: skip
    return model, result


def _resume(
    model: CrossModel, opt: Any, work: Path, cfg: CrossConfig, teach: Sequence[Group]
) -> tuple[int, list[float], float]:
    """The step, losses and seconds of the run in ``work``, its tensors loaded into
    ``model`` and ``opt``; a fresh run starts its curve and probes the head instead."""
    resumed = load_checkpoint(work, _config_key(cfg))
    if resumed is None:
        (work / CURVE).unlink(missing_ok=True)
        model.probe(teach, 128, random.Random(cfg.seed))
        return 0, [], 0.0
    saved, state = resumed
    model.model.load_state_dict(saved["model"], strict=False)
    model.direction.data.copy_(saved["direction"])
    model.bias.data.copy_(saved["bias"])
    opt.load_state_dict(saved["optimizer"])
    log.info("resumed at step %d of %d", state["step"], cfg.steps)
    return state["step"], state["losses"], float(state.get("seconds", 0.0))


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
    tensors = {
        "model": lora_state(model.model),
        "direction": model.direction.detach().clone(),
        "bias": model.bias.detach().clone(),
        "optimizer": opt.state_dict(),
    }
    state = {"config": _config_key(cfg), "step": step, "losses": losses, "seconds": seconds}
    save_checkpoint(work, tensors, state)


def write_cross(
    model: CrossModel, path: Path, base_fingerprint: str, weight: float, provenance: Provenance
) -> Path:
    """Save the adapters and the head as the file :mod:`spider.rank.cross` reads (float16
    factors, float32 head), through the one model-file writer."""
    from spider.rank.cross import CROSS_KIND, DIRECTION
    from spider.retrieve.delta import DELTA_SCHEMA
    from spider.retrieve.dense import BUNDLED_MODEL_ID

    cfg = model.cfg
    direction, bias = model.head()
    header = {
        "schema": DELTA_SCHEMA,
        "kind": CROSS_KIND,
        "base": BUNDLED_MODEL_ID,
        "base_fingerprint": base_fingerprint,
        "rank": cfg.rank,
        "alpha": cfg.alpha,
        "bias": round(bias, 6),
        "scale": cfg.scale,
        "max_tokens": cfg.max_tokens,
        "depth": cfg.depth,
        "weight": weight,
    }
    body = LoraBody(header, lora_factors(model.model), {DIRECTION: direction.astype(np.float32)})
    return write_model_file(path, body, provenance)


RANKER_PARAMS = (7, 200, 1.0)  # leaves, trees, prior: the shipped pool ranker's settings


@dataclass(frozen=True)
class CrossRun:
    """What ``spider train cross`` asks for: the corpus, the run folder, the file to write,
    how to train (``train``) and the weight of its score (None: the holdout's best)."""

    corpus: Path
    work: Path
    target: Path  # where the finished file goes
    command: str  # as typed: the file's provenance
    train: CrossConfig = field(default_factory=CrossConfig)
    weight: float | None = None
    excluded: tuple[Path, ...] = ()  # further lists of repositories never to train on
    budget_s: float | None = None
    on_step: StepReport | None = None
    dev_corpus: Path | None = None  # development pools to score the written file on
    export_dir: Path | None = None  # where the engine's scorer exports its ONNX graph


@dataclass(frozen=True)
class DevScores:
    """The written file's R@20 / MRR@20 on development pools, per weight (:func:`evaluate`)."""

    corpus: Path
    issues: int
    by: dict[str, dict[str, float]]
    weight: float  # the file's


@dataclass
class CrossFit:
    """What :func:`run` did: the training, the issues held out and left out, the file
    written with its weight (None: stopped at a checkpoint) and the development scores."""

    training: CrossResult
    held_issues: int
    dropped: int  # issues of excluded repositories
    depth: int  # the pool ranker's top items it re-scores
    written: Path | None = None
    weight: float | None = None
    dev: DevScores | None = None


def run(config: CrossRun) -> CrossFit:
    """Order each issue's pool by the pool ranker (refitted without the held-out
    repositories when there are some), train (or resume), and write the file when the
    run finished; then score it on the development pools, if given."""
    from spider.retrieve.delta import weights_fingerprint
    from spider.retrieve.dense import bundled_model_path

    cfg = config.train
    if cfg.holdout <= 0 and config.weight is None:
        raise InputError("without a holdout, give the weight (the value a holdout run chose)")
    teach, held, dropped = _split_groups(config)
    base = bundled_model_path()
    model, result = train(
        teach, held, base, config.work, cfg, budget_s=config.budget_s, on_step=config.on_step
    )
    fit = CrossFit(result, len(held), dropped, cfg.depth)
    if not result.finished:
        return fit
    best = result.curve[-1]["best_weight"] if config.weight is None else config.weight
    fit.weight = float(best)
    trained_on = {
        "issues": result.issues,
        "repositories": result.repos,
        "held_out": result.holdout_repos,
    }
    provenance = Provenance(
        command=config.command,
        comment="",
        cv={},
        extra={
            "trained_on": trained_on,
            "curve": result.curve,
            "config": vars(cfg),
            "final_loss": sum(result.losses[-50:]) / max(1, len(result.losses[-50:])),
            "seconds": round(result.seconds),
        },
    )
    fingerprint = weights_fingerprint(Path(base))
    fit.written = write_cross(model, config.target, fingerprint, fit.weight, provenance)
    if config.dev_corpus is not None and config.export_dir is not None:
        fit.dev = score_dev(fit.written, config.dev_corpus, config.export_dir)
    return fit


def _split_groups(config: CrossRun) -> tuple[list[Group], list[Group], int]:
    """The groups to train on and to validate on, and the issues excluded repositories
    lost. The held-out repositories are chosen once, on the corpus's teaching rows; their
    pools are ordered by a pool ranker refitted without them."""
    from spider.learn.corpus import read_corpus
    from spider.learn.excluded import excluded_repos
    from spider.learn.ranker import Params, fit, training_rows
    from spider.rank.pool_rank import default_ranker

    cfg = config.train
    skip = excluded_repos(list(config.excluded))
    ranker = default_ranker()
    rows, _ = training_rows(read_corpus(config.corpus))
    rows = [r for r in rows if r.positives > 0 and not is_excluded(r.repo, skip)]
    held_repos = holdout_repos(Counter(r.repo for r in rows), cfg.holdout, cfg.seed)
    if held_repos:
        leaves, trees, prior = RANKER_PARAMS
        teaching = [r for r in rows if r.repo not in held_repos]
        ranker = fit(teaching, Params(leaves, trees, prior=prior))
    rank = ranker.scores if ranker else None
    groups, dropped = read_groups(config.corpus, skip, rank, cfg.depth)
    teach, held = split_by(groups, held_repos)
    return teach, held, dropped


def score_dev(path: Path, dev: Path, export_dir: Path) -> DevScores:
    """R@20 / MRR@20 of the development pools, ordered by the shipped ranker, re-sorted by
    the written file through the engine's own scorer (ONNX) at each weight."""
    from spider.rank.cross import CrossScorer, read_cross
    from spider.rank.pool_rank import default_ranker
    from spider.retrieve.dense import bundled_model_path

    model = read_cross(path, bundled_model_path())
    scorer = CrossScorer(model, export_dir)
    ranker = default_ranker()
    groups, _ = read_groups(dev, frozenset(), ranker.scores if ranker else None, model.depth)
    by = evaluate(groups, [scorer.scores(g.query, list(g.texts)) for g in groups])
    return DevScores(dev, len(groups), by, model.weight)


__all__ = [
    "CROSS_ONLY",
    "CrossConfig",
    "CrossFit",
    "CrossModel",
    "CrossResult",
    "CrossRun",
    "DevScores",
    "Group",
    "best_weight",
    "epoch_batch",
    "evaluate",
    "group_loss",
    "read_groups",
    "run",
    "score_dev",
    "split_by",
    "split_holdout",
    "train",
    "write_cross",
]
