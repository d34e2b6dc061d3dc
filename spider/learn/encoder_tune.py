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
import json
import logging
import math
import os
import random
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from spider.errors import InputError
from spider.learn.pairs import Pair
from spider.retrieve.delta import DELTA_KIND, DELTA_SCHEMA
from spider.retrieve.dense import BUNDLED_MODEL_ID

log = logging.getLogger(__name__)

TARGET_MODULES = r".*encoder\.layer\.\d+\..*(query|key|value|dense)$"
CHECKPOINT = "checkpoint.pt"
STATE = "state.json"
CURVE = "curve.jsonl"
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


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - a dependency of the project
        raise InputError("tuning the encoder needs torch (pip install torch==2.13.0)") from exc
    return torch


def load_trainable(base_dir: str, cfg: TuneConfig) -> tuple[Any, Any]:
    """The bundled transformer with fresh LoRA adapters, and its tokenizer."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise InputError(
            f"tuning the encoder needs peft and transformers (pip install 'spider-bot[train]'): {exc}"
        ) from exc
    from spider.retrieve.dense import silence_progress_bars

    silence_progress_bars()
    tok = AutoTokenizer.from_pretrained(base_dir)
    model = AutoModel.from_pretrained(base_dir)
    lora = LoraConfig(
        r=cfg.rank, lora_alpha=cfg.alpha, lora_dropout=cfg.dropout, target_modules=TARGET_MODULES
    )
    with warnings.catch_warnings():  # peft reads a transformers attribute deprecated in v5
        warnings.simplefilter("ignore", FutureWarning)
        return get_peft_model(model, lora), tok


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
    total = sum(queries.values())
    order = sorted(queries, key=lambda r: hashlib.sha256(f"{seed}:{r}".encode()).hexdigest())
    held_repos: list[str] = []
    for repo in order:
        if sum(queries[r] for r in held_repos) >= share * total:
            break
        held_repos.append(repo)
    held = set(held_repos)
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
    with (work / CURVE).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(point) + "\n")
    log.info("validation at step %d: %s", step, scores)
    return point


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


def warmup_cosine(step: int, total: int, warmup: int) -> float:
    """The learning-rate factor at ``step``: linear warm-up, then cosine decay to 0."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def tune(
    pairs: dict[str, list[Pair]],
    base_dir: str,
    work: Path,
    cfg: TuneConfig,
    *,
    budget_s: float | None = None,
    on_step: Callable[[int, int, float], None] | None = None,
) -> tuple[Any, TuneResult]:
    """Train (or resume training) the adapters; returns the model and what was done.

    ``budget_s`` stops after that many seconds at a checkpoint (run again to go on).

    Long because it is the resumable training loop (checkpoint, budget, curve); issue 40 shares
    one loop between the cross-encoder and the delta."""
    torch = _torch()
    if cfg.batching not in BATCHING:
        raise InputError(f"batching is one of {', '.join(BATCHING)}, not {cfg.batching!r}")
    torch.manual_seed(cfg.seed)
    work.mkdir(parents=True, exist_ok=True)
    pairs, held, held_repos = split_holdout(pairs, cfg.holdout, cfg.seed)
    model, tok = load_trainable(base_dir, cfg)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.01)
    total = sum(steps for _, steps in cfg.stages)
    step, losses = 0, []
    dropped: dict[str, int] = {}
    state_file, ckpt = work / STATE, work / CHECKPOINT
    if ckpt.exists() and state_file.exists():
        state = json.loads(state_file.read_text())
        if state.get("config") != _config_key(cfg):
            raise InputError(
                f"{work} holds a run with other settings; delete it or pass the same options"
            )
        saved = torch.load(ckpt, weights_only=False)
        model.load_state_dict(saved["model"], strict=False)
        opt.load_state_dict(saved["optimizer"])
        step, losses, dropped = state["step"], state["losses"], state.get("dropped", {})
        log.info("resumed at step %d of %d", step, total)
    used = {kind: 0 for kind, _ in cfg.stages}
    t0 = time.perf_counter()
    if held and step == 0 and not read_curve(work):
        _curve_point(model, tok, held, cfg, work, 0, _seen(cfg, 0), base=True)
    model.train()
    offset = 0
    for kind, steps in cfg.stages:
        stage_rng = random.Random(f"{cfg.seed}:{kind}")
        data = list(pairs.get(kind, []))
        stage_rng.shuffle(data)
        data = data[: max(cfg.batch, int(len(data) * cfg.fraction))]
        if kind != "code-text" and cfg.consistency and step < offset + steps:
            before = len(data)
            data = _cached_filter(work, kind, lambda d=data: consistent(model, tok, d, cfg))
            dropped[kind] = before - len(data)
        used[kind] = len(data)
        if len(data) < cfg.batch:
            log.warning("stage %s: %d pairs, fewer than a batch; skipped", kind, len(data))
            offset += steps
            continue
        epoch = 0
        epoch_batches = _epoch(data, cfg, kind, epoch)
        per_epoch = len(epoch_batches)  # the same every epoch: it depends on counts only
        while step < offset + steps:
            local = step - offset
            if local // per_epoch != epoch:
                epoch = local // per_epoch
                epoch_batches = _epoch(data, cfg, kind, epoch)
            batch = epoch_batches[local % per_epoch]
            for g in opt.param_groups:
                g["lr"] = cfg.lr * warmup_cosine(local, steps, cfg.warmup)
            loss = batch_loss(model, tok, batch, cfg, random.Random(f"{cfg.seed}:{step}"))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            opt.zero_grad()
            step += 1
            value = float(loss.detach())
            losses.append(round(value, 4))
            if on_step is not None:
                on_step(step, total, value)
            if held and (step % cfg.eval_every == 0 or step == offset + steps):
                _curve_point(model, tok, held, cfg, work, step, _seen(cfg, step))
            out_of_time = budget_s is not None and time.perf_counter() - t0 > budget_s
            if step % cfg.checkpoint_every == 0 or step == total or out_of_time:
                _save(model, opt, work, cfg, step, losses, dropped)
            if out_of_time:
                return model, TuneResult(
                    step, total, False, used, sum(dropped.values()), time.perf_counter() - t0, losses,
                    held_repos, read_curve(work),
                )  # fmt: skip
        offset += steps
    _save(model, opt, work, cfg, step, losses, dropped)
    return model, TuneResult(
        step, total, True, used, sum(dropped.values()), time.perf_counter() - t0, losses, held_repos,
        read_curve(work),
    )  # fmt: skip


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
    torch = _torch()
    trainable = {k: v for k, v in model.state_dict().items() if "lora_" in k}
    tmp = work / (CHECKPOINT + ".tmp")
    torch.save({"model": trainable, "optimizer": opt.state_dict()}, tmp)
    tmp.replace(work / CHECKPOINT)
    state = {"config": _config_key(cfg), "step": step, "losses": losses, "dropped": dropped}
    (work / (STATE + ".tmp")).write_text(json.dumps(state))
    (work / (STATE + ".tmp")).replace(work / STATE)


def delta_factors(model: Any) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``base weight name -> (A, B)`` of every adapter (A: rank x in, B: out x rank)."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, module in model.named_modules():
        if not hasattr(module, "lora_A") or "default" not in getattr(module, "lora_A", {}):
            continue
        a = module.lora_A["default"].weight.detach().float().numpy()
        b = module.lora_B["default"].weight.detach().float().numpy()
        base = name.split("base_model.model.", 1)[-1] + ".weight"
        out[base] = (a, b)
    return out


def write_delta(
    model: Any, path: Path, cfg: TuneConfig, base_fingerprint: str, meta: dict[str, Any]
) -> Path:
    """Save the adapters as the delta file ``spider.retrieve.delta`` reads (float16)."""
    factors = delta_factors(model)
    header = {
        "schema": DELTA_SCHEMA,
        "kind": DELTA_KIND,
        "base": BUNDLED_MODEL_ID,
        "base_fingerprint": base_fingerprint,
        "rank": cfg.rank,
        "alpha": cfg.alpha,
        "targets": sorted(factors),
        **meta,
    }
    arrays: dict[str, np.ndarray] = {"meta": np.array(json.dumps(header, sort_keys=True))}
    for name, (a, b) in factors.items():
        arrays[f"{name}.lora_A"] = a.astype(np.float16)
        arrays[f"{name}.lora_B"] = b.astype(np.float16)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)
    return path
