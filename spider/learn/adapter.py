"""Fit the query adapter (:mod:`spider.retrieve.adapter`) on the training corpus.

Each corpus instance holds the vectors of its pool and of the functions its fix edited
(``spider train corpus``). The issue is embedded as the engine embeds it (its windows, cut
as the first stage cuts it), and a linear map ``W`` of the query vectors, started at the
identity, is fitted so that the edited functions' best cosine with any window beats the
rest: a multi-positive InfoNCE loss over the issue's own pool (hard negatives) and the
other issues' edited functions in the batch (in-batch negatives), with an L2 pull of ``W``
towards the identity. Function vectors never change, so no cached vector is re-embedded.

The settings are chosen by cross-validation over folds of whole repositories, by where
the edited functions land among each held-out pool by cosine alone (Recall@20, MRR@20),
against the identity (the bundled model as is) on the same pools.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from spider.errors import InputError
from spider.eval.dataset import Instance
from spider.learn.corpus import corpus_files
from spider.learn.cv import CVReport, repository_folds
from spider.learn.excluded import excluded_repos, is_excluded
from spider.learn.model_file import Provenance, write_model_file
from spider.learn.ranker import mean_metrics, metrics
from spider.retrieve.adapter import ADAPTER_FILE, QueryAdapter
from spider.retrieve.dense import Encoder
from spider.retrieve.query import best_cosine, issue_windows
from spider.settings import EngineSettings

log = logging.getLogger(__name__)

QUERIES_FILE = "adapter/queries.npz"  # under a corpus folder: its issues' windows, embedded once


@dataclass(frozen=True)
class AdapterRow:
    """One issue: its window queries, its candidates (pool and edited functions), labels."""

    instance_id: str
    repo: str
    queries: np.ndarray  # windows x d, unit norm, the bundled model's
    candidates: np.ndarray  # n x d: the pool, then edited functions the pool missed
    positive: np.ndarray  # n booleans: the fix edits it


@dataclass(frozen=True)
class AdapterParams:
    """One point of the settings grid."""

    l2: float = 0.1  # pull of W towards the identity (sum of squares)
    epochs: int = 5
    lr: float = 1e-3
    temperature: float = 0.05
    batch: int = 32
    seed: int = 0


GRID = tuple(AdapterParams(l2=l2, epochs=epochs) for l2 in (0.01, 0.1, 1.0) for epochs in (3, 10))


def _candidates(data: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The pool's vectors, then those of edited functions outside the pool; positives."""
    ids = [str(i) for i in data["ids"]]
    pool = data["pool_vecs"].astype(np.float32)
    y = data["y"].astype(bool)
    gold_ids = [str(i) for i in data["gold_ids"]]
    gold = data["gold_vecs"].astype(np.float32)
    inside = set(ids)
    extra = [j for j, g in enumerate(gold_ids) if g not in inside]
    if not len(pool):
        return gold[extra], np.ones(len(extra), dtype=bool)
    cand = np.concatenate([pool, gold[extra]]) if extra else pool
    pos = np.concatenate([y, np.ones(len(extra), dtype=bool)])
    return cand, pos


def embed_windows(
    instances: Sequence[Instance], encoder: Encoder, settings: EngineSettings, cache: Path
) -> dict[str, np.ndarray]:
    """Each instance's window queries (the bundled model, no adapter), cached in ``cache``
    under the window settings so that a second fit embeds nothing."""
    key = f"{encoder.model_id}|{settings.query_windows}|{settings.query_window_chars}"
    key += f"|{settings.max_issue_chars}"
    found: dict[str, np.ndarray] = {}
    if cache.exists():
        with np.load(cache, allow_pickle=False) as data:
            if str(data["key"]) == key:
                found = {k: data[k] for k in data.files if k != "key"}
    todo = [i for i in instances if i.instance_id not in found]
    for n, inst in enumerate(todo, 1):
        issue = inst.issue().clipped(settings.max_issue_chars)
        texts = issue_windows(issue, settings.query_window_chars, settings.query_windows)
        found[inst.instance_id] = encoder.encode_queries(texts)
        if n % 100 == 0:
            log.info("embedded the windows of %d/%d issues", n, len(todo))
    if todo:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(cache.name + ".tmp.npz")
        np.savez_compressed(tmp, key=key, **found)
        tmp.replace(cache)
    return found


def adapter_rows(
    corpus_files: Iterable[Path], queries: Mapping[str, np.ndarray]
) -> tuple[list[AdapterRow], dict[str, int]]:
    """Rows for every corpus instance with an edited function among its candidates and
    queries embedded; counts of what was left out and why."""
    rows: list[AdapterRow] = []
    excluded = excluded_repos()
    skipped = {"excluded": 0, "no_label": 0, "no_issue_text": 0}
    for path in corpus_files:
        with np.load(path, allow_pickle=False) as data:
            repo = str(data["repo"])
            if is_excluded(repo, excluded):
                skipped["excluded"] += 1
                continue
            cand, pos = _candidates(data)
        if not pos.any():
            skipped["no_label"] += 1
            continue
        q = queries.get(path.stem)
        if q is None or not len(q):
            skipped["no_issue_text"] += 1
            continue
        rows.append(AdapterRow(path.stem, repo, q.astype(np.float32), cand, pos))
    return rows, skipped


def per_issue(rows: Sequence[AdapterRow], matrix: np.ndarray | None) -> list[dict[str, float]]:
    """Recall@K / Acc@20 / MRR@20 of each row's edited functions among its candidates
    ordered by their best cosine with the windows (mapped by ``matrix``, if any), as the
    engine scores them."""
    adapter = QueryAdapter(matrix) if matrix is not None else None
    out = []
    for r in rows:
        q = adapter.apply(r.queries) if adapter is not None else r.queries
        order = np.argsort(-best_cosine(r.candidates, q), kind="stable")
        out.append(metrics(r.positive[order].astype(np.int64), int(r.positive.sum())))
    return out


def evaluate(rows: Sequence[AdapterRow], matrix: np.ndarray | None) -> dict[str, float]:
    """The mean of :func:`per_issue` over ``rows``."""
    return mean_metrics(per_issue(rows, matrix))


def fit_adapter(rows: Sequence[AdapterRow], params: AdapterParams) -> np.ndarray:
    """``W`` (d x d) fitted on ``rows`` from the identity (see the module's docstring)."""
    import torch

    if not rows:
        raise InputError("no corpus instance to fit the query adapter on")
    torch.manual_seed(params.seed)
    rng = np.random.default_rng(params.seed)
    dim = rows[0].candidates.shape[1]
    eye = torch.eye(dim)
    weight = torch.nn.Parameter(eye.clone())
    opt = torch.optim.AdamW([weight], lr=params.lr, weight_decay=0.0)
    data = [
        (
            torch.from_numpy(r.queries),
            torch.from_numpy(r.candidates),
            torch.from_numpy(r.positive),
        )
        for r in rows
    ]
    for _epoch in range(params.epochs):
        shuffled = rng.permutation(len(data))  # every issue once per epoch
        for start in range(0, len(data), params.batch):
            batch = [data[i] for i in shuffled[start : start + params.batch]]
            golds = [c[p] for _, c, p in batch]
            loss = torch.zeros(())
            for j, (q, cand, pos) in enumerate(batch):
                others = [g for i, g in enumerate(golds) if i != j]
                negatives = torch.cat(others) if others else cand[:0]
                if len(negatives):  # another issue's fix can edit the same function
                    same = (negatives @ golds[j].T).max(dim=1).values > 0.999
                    negatives = negatives[~same]
                mapped = torch.nn.functional.normalize(q @ weight.T, dim=1)
                everything = torch.cat([cand, negatives])
                scores = (everything @ mapped.T).max(dim=1).values / params.temperature
                loss = (
                    loss + torch.logsumexp(scores, 0) - torch.logsumexp(scores[: len(pos)][pos], 0)
                )
            loss = loss / len(batch) + params.l2 * ((weight - eye) ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return weight.detach().numpy().astype(np.float32)


def _repo(r: AdapterRow) -> str:
    return r.repo


def cross_validate(
    rows: Sequence[AdapterRow],
    grid: Sequence[AdapterParams] = GRID,
    *,
    folds: int = 5,
) -> CVReport[AdapterParams]:
    """Each grid point's out-of-fold figures against the identity's on the same pools;
    the chosen point (the report's ``chosen``) is the best Recall@20, then MRR@20; it
    ``pays`` when it beats the identity on both."""
    splits = list(repository_folds(rows, _repo, folds))
    identity = mean_metrics([m for _held, _train, test in splits for m in per_issue(test, None)])
    points = []
    for params in grid:
        t0 = time.perf_counter()
        scores = [
            m for _held, train, test in splits for m in per_issue(test, fit_adapter(train, params))
        ]
        points.append(
            {
                "params": asdict(params),
                "adapter": mean_metrics(scores),
                "fit_seconds": round((time.perf_counter() - t0) / len(splits), 1),
            }
        )
        log.info("adapter %s: %s", asdict(params), points[-1]["adapter"])
    at = max(
        range(len(points)),
        key=lambda i: (points[i]["adapter"]["R@20"], points[i]["adapter"]["MRR@20"]),
    )
    best = points[at]
    figures = {
        "chosen_by": f"{len(splits)} folds of whole repositories: best Recall@20, then MRR@20, "
        "of the edited functions among each held-out pool by cosine alone",
        "instances": len(rows),
        "repositories": len({r.repo for r in rows}),
        "identity": identity,
        "grid": points,
        "chosen": {**best, "identity": identity},
        "pays": all(best["adapter"][k] > identity[k] for k in ("R@20", "MRR@20")),
    }
    return CVReport(grid[at], len(rows), f"{len(splits)} folds of whole repositories", figures)


COMMENT = (
    "Fitted by `spider train encoder` on the training corpus (other projects' fixes; never an "
    "excluded repository). See README."
)


def write_adapter(
    path: Path, matrix: np.ndarray, cv: Mapping[str, Any], command: str, model: str
) -> Path:
    """Write the query adapter file (``cv`` as :func:`cross_validate` returns it; ``model``
    names the encoder whose queries it maps)."""
    provenance = Provenance(
        command=command,
        comment=COMMENT,
        cv={k: cv[k] for k in ("instances", "repositories", "identity", "pays")}
        | {"adapter": cv["chosen"]["adapter"]},
        extra={"params": cv["chosen"]["params"], "model": model},
    )
    return write_model_file(path, QueryAdapter(matrix), provenance)


@dataclass(frozen=True)
class AdapterRun:
    """What ``spider train encoder`` asks for: the corpora, the datasets their issue texts
    come from, the CV folds, and where the adapter goes (written only with ``write``)."""

    corpus_dirs: tuple[Path, ...]
    datasets: tuple[Path, ...]
    command: str  # as typed: the file's provenance
    target: Path = ADAPTER_FILE
    write: bool = False
    folds: int = 5


@dataclass
class AdapterFit:
    """What :func:`run` did: the CV report (with the rows ``left_out``) and the file written."""

    cv: dict[str, Any]
    written: Path | None = None


def run(config: AdapterRun) -> AdapterFit:
    """Embed the corpus's issues (once per corpus folder), cross-validate the grid against
    the bundled model as is, and fit and write the chosen point when asked."""
    from spider.eval.dataset import read_dataset

    files = [p for d in config.corpus_dirs for p in corpus_files(d)]
    wanted = {p.stem for p in files}
    instances = [i for d in config.datasets for i in read_dataset(d) if i.instance_id in wanted]
    settings = EngineSettings()
    enc = Encoder.from_settings(settings, None)  # queries are never cached
    queries: dict[str, np.ndarray] = {}
    for d in config.corpus_dirs:
        mine = [i for i in instances if (d / f"{i.instance_id}.npz").exists()]
        queries.update(embed_windows(mine, enc, settings, d / QUERIES_FILE))
    rows, skipped = adapter_rows(files, queries)
    report = cross_validate(rows, folds=config.folds)
    result = AdapterFit({**report.to_json(), "left_out": skipped})
    if config.write:
        model = settings.model or "all-MiniLM-L6-v2 (bundled)"
        matrix = fit_adapter(rows, report.chosen)
        result.written = write_adapter(config.target, matrix, result.cv, config.command, model)
    return result
