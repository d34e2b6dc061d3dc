"""The training corpus: per issue, the first stage's candidate pool, its features, labels.

    spider train corpus --dataset FILE [--dataset FILE ...] --repos TEMPLATE --out DIR

For each instance the repository's base commit is indexed (graph and BM25; the graph is
cached by commit), the first stage ranks every function, and the top ``pool`` candidates
are stored with :func:`spider.rank.features.ranker_features` and whether the fix edits them
(``DIR/<instance>.npz``). Embedding every function of every training commit would take
hours on two cores, so a repository without vectors takes the engine's cold path: the
cheap rankers (BM25, file BM25, issue signals) choose the pool and only the pool is
embedded, through the same content-hash cache that shares vectors across commits. The
edited functions' own vectors are embedded too, so the issue encoder can be trained from
the corpus alone, and the pool's texts and the issue's are kept for the cross-encoder. A
finished instance is never redone; a failed one is recorded in ``DIR/errors.jsonl`` and
retried on the next run.

A dataset's base commit must come before its fix: history at inference reads the commits up
to the indexed one, and a base that already holds the fix (MULocBench records some fix
commits, and merges of the fix, as the base) would show the fix's own message on the edited
functions, a commit age of 0 that the engine never sees on a real issue. Such a base is
stepped back to its first parent (:func:`pre_fix_base`) and the row records both commits.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from spider.errors import InputError, SpiderError
from spider.eval.dataset import Instance
from spider.eval.snapshot import RepoResolver, index_instance
from spider.ids import graph_ids_for, short_name
from spider.progress import INSTANCES, Progress
from spider.rank.features import RANKER_FEATURES, pool_relative, ranker_features
from spider.retrieve.first_stage import first_stage
from spider.retrieve.history import CommitCache, brought_commits, first_parent
from spider.settings import EngineSettings

if TYPE_CHECKING:
    from spider.index import Index

log = logging.getLogger(__name__)

CORPUS_VERSION = 3  # bump when what an instance file holds changes
MAX_BASE_STEPS = 3  # a fix pushed straight to the branch as a few commits is stepped over
# Version 1 held global dense ranks; they become pool-relative on reading (POOL_RELATIVE).
# Version 2 lacked the history features (HISTORY_FEATURES): its files are collected again.
READABLE_VERSIONS = (1, 2, CORPUS_VERSION)
DEFAULT_POOL = 200  # candidates kept per instance (the pool ranker's depth)
DEFAULT_MAX_PER_REPO = 40  # one big project should not teach the ranker alone
ERRORS_FILE = "errors.jsonl"
SUMMARY_FILE = "corpus.json"


@dataclass
class CorpusRow:
    """One collected instance: its pool's features and labels."""

    instance_id: str
    repo: str
    x: np.ndarray  # pool x RANKER_FEATURES
    y: np.ndarray  # 1 where the fix edits the candidate
    labels: int  # edited functions that are in the graph
    unreachable: int  # labelled functions the graph does not hold (tests, removed files)
    path: Path
    stepped_back: bool = False  # indexed before the dataset's base, which held the fix

    @property
    def positives(self) -> int:
        """Edited functions inside the pool."""
        return int(self.y.sum())


def dedupe_by_text(instances: Iterable[Instance]) -> list[Instance]:
    """Instances in order, without repeats of an issue text already seen (two datasets
    can hold the same issue at the same commit)."""
    seen: set[tuple[str, str]] = set()
    out: list[Instance] = []
    for inst in instances:
        key = (inst.repo, " ".join(inst.problem_statement.split())[:2000])
        if key not in seen:
            seen.add(key)
            out.append(inst)
    return out


def interleave(instances: Sequence[Instance], max_per_repo: int) -> list[Instance]:
    """At most ``max_per_repo`` instances of each repository, taken round-robin so that a
    run stopped early has seen many repositories rather than all of one."""
    by_repo: dict[str, list[Instance]] = {}
    for inst in instances:
        by_repo.setdefault(inst.repo, []).append(inst)
    queues = [iter(v[:max_per_repo]) for v in by_repo.values()]
    out: list[Instance] = []
    while queues:
        alive = []
        for q in queues:
            item = next(q, None)
            if item is not None:
                out.append(item)
                alive.append(q)
        queues = alive
    return out


def corpus_settings(base: EngineSettings, pool: int, *, warm: bool = False) -> EngineSettings:
    """The engine's defaults with no re-ranking, and the cold path's pool as big as the
    kept pool (a repository without vectors embeds only its candidates); ``warm`` embeds
    every function instead, so that the pools are the ones an indexed repository ranks."""
    return base.model_copy(
        update={"rerank": False, "cold_pool": 0 if warm else pool, "cold_always": False}
    )


def collect_instance(
    inst: Instance, resolve: RepoResolver, settings: EngineSettings, pool: int, path: Path
) -> CorpusRow:
    """Index one instance at a base that does not hold its fix (:func:`pre_fix_base`), rank,
    and write its pool's features and labels to ``path``."""
    dataset_base = inst.base_commit
    index, truth, id_map, inst = pre_fix_base(inst, resolve, settings)
    wanted = graph_ids_for(set(truth), id_map)
    present = {id_map[g] for g in wanted}
    issue = inst.issue()
    fs = first_stage(index, issue, settings)
    head = [int(i) for i in fs.order[:pool]]
    ids = index.function_ids
    x = ranker_features(index, fs, head).astype(np.float32)
    y = np.array([ids[i] in wanted for i in head], dtype=np.int8)
    pos = index.name_table().index_of
    gold = np.array(sorted(pos[g] for g in wanted if g in pos), dtype=np.int64)
    pool_vecs = index.vectors_of(np.array(head, dtype=np.int64)) if head else np.zeros((0, 0))
    documents = index.documents()
    gold_vecs = index.vectors_of(gold) if len(gold) else np.zeros((0, pool_vecs.shape[-1]))
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(
        tmp,
        version=CORPUS_VERSION,
        features=np.array(RANKER_FEATURES),
        x=x,
        y=y,
        ids=np.array([ids[i] for i in head]),
        gold_ids=np.array([ids[i] for i in gold]),
        pool_vecs=pool_vecs.astype(np.float16),
        gold_vecs=gold_vecs.astype(np.float16),
        texts=np.array([documents[i] for i in head], dtype=str),
        issue_text=(fs.issue or issue).text,
        labels=len(present),
        unreachable=len(set(truth) - present),
        repo=inst.repo,
        base_commit=inst.base_commit,
        dataset_base=dataset_base,
        functions=len(ids),
        partial=bool(fs.partial),
    )
    tmp.replace(path)
    return read_row(path, inst.instance_id)


def base_edits_labels(index: Index, wanted: set[str]) -> bool:
    """Whether the indexed commit itself (or, for a merge, the branch it merged) edited a
    labelled function: the fix is then in the history the features read."""
    git_dir, commit = index.git_dir, index.commit
    if git_dir is None or not commit or not wanted:
        return False
    g = index.graph.g
    labels = {(g.nodes[n].get("path", ""), short_name(g.nodes[n].get("name", ""))) for n in wanted}
    shas = brought_commits(git_dir, commit)
    if not shas:
        return False
    cache = CommitCache(index.settings.cache_dir)
    try:
        edits = cache.read(git_dir, shas)
    finally:
        cache.close()
    return any(labels & set(e.functions) for e in edits)


def pre_fix_base(
    inst: Instance, resolve: RepoResolver, settings: EngineSettings, steps: int = MAX_BASE_STEPS
) -> tuple[Index, list[str], dict[str, str], Instance]:
    """The instance indexed at its base, or at the first parent of a base that already
    edits a labelled function (at most ``steps`` back): the index, the truth,
    the id map and the instance as indexed. Raises InputError when no earlier commit is
    free of the fix."""
    for step in range(steps + 1):
        index, truth, id_map = index_instance(inst, resolve, settings)
        if not base_edits_labels(index, graph_ids_for(set(truth), id_map)):
            return index, truth, id_map, inst
        parent = None if step == steps else first_parent(resolve(inst), inst.base_commit)
        if parent is None:
            break
        log.info(
            "%s: base %s edits its labels; using %s",
            inst.instance_id,
            inst.base_commit[:12],
            parent[:12],
        )
        inst = replace(inst, base_commit=parent)
    raise InputError(
        f"{inst.instance_id}: base {inst.base_commit[:12]} already edits the functions its "
        f"fix edits, {steps} first parents back at most (the fix would be in its history)"
    )


def read_row(path: Path, instance_id: str | None = None) -> CorpusRow:
    """One instance file of the corpus (its version and features checked)."""
    with np.load(path, allow_pickle=False) as data:
        version = int(data["version"])
        if version not in READABLE_VERSIONS or list(data["features"]) != list(RANKER_FEATURES):
            raise InputError(
                f"{path} was collected by another version of the corpus or features; "
                f"delete it (or its folder) and run `spider train corpus` again"
            )
        x = data["x"].astype(np.float64)
        return CorpusRow(
            instance_id=instance_id or path.stem,
            repo=str(data["repo"]),
            x=pool_relative(x) if version == 1 else x,
            y=data["y"].astype(np.int64),
            labels=int(data["labels"]),
            unreachable=int(data["unreachable"]),
            path=path,
            stepped_back="dataset_base" in data
            and str(data["dataset_base"]) != str(data["base_commit"]),
        )


def corpus_files(out: Path) -> list[Path]:
    """The instance files of the corpus at ``out``, sorted (never a half-written one)."""
    if not out.is_dir():
        raise InputError(f"no corpus at {out}: run `spider train corpus --out {out}` first")
    return [p for p in sorted(out.glob("*.npz")) if not p.name.endswith(".tmp.npz")]


def read_corpus(out: Path, *, repos: Iterable[str] | None = None) -> list[CorpusRow]:
    """Every instance file under ``out`` (optionally only these repositories)."""
    wanted = set(repos) if repos else None
    rows = [read_row(p) for p in corpus_files(out)]
    return [r for r in rows if wanted is None or r.repo in wanted]


def build_corpus(
    instances: Sequence[Instance],
    resolve: RepoResolver,
    settings: EngineSettings,
    out: Path,
    *,
    pool: int = DEFAULT_POOL,
    max_per_repo: int = DEFAULT_MAX_PER_REPO,
    budget_s: float | None = None,
    warm: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Collect every instance not yet in ``out``; returns (and writes) the corpus summary.

    Instances whose repository is not on disk are skipped and counted; ``budget_s`` stops
    starting new instances after that many seconds (the next run continues); ``warm``
    embeds every function of each commit (see :func:`corpus_settings`); ``progress``
    hears each instance begun (phase ``instances``)."""
    out.mkdir(parents=True, exist_ok=True)
    settings = corpus_settings(settings, pool, warm=warm)
    todo = interleave(dedupe_by_text(instances), max_per_repo)
    missing: Counter[str] = Counter()
    done = failed = 0
    t0 = time.perf_counter()
    pending = list(_pending(todo, out, resolve, missing))
    for n, inst in enumerate(pending):
        if budget_s is not None and time.perf_counter() - t0 > budget_s:
            break
        if progress is not None:
            progress(INSTANCES, n, len(pending), inst.instance_id)
        t = time.perf_counter()
        try:
            row = collect_instance(inst, resolve, settings, pool, out / f"{inst.instance_id}.npz")
        except SpiderError as exc:
            failed += 1
            _record_error(out, inst, exc)
            continue
        done += 1
        log.info(
            "%s: %d candidates, %d/%d edited in the pool, %.1fs",
            inst.instance_id,
            len(row.y),
            row.positives,
            row.labels,
            time.perf_counter() - t,
        )
    if progress is not None:
        progress(INSTANCES, done + failed, len(pending))
    summary = summarise(read_corpus(out), missing)
    summary["this_run"] = {"collected": done, "failed": failed}
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _pending(
    todo: Sequence[Instance], out: Path, resolve: RepoResolver, missing: Counter[str]
) -> Iterator[Instance]:
    for inst in todo:
        if (out / f"{inst.instance_id}.npz").exists():
            continue
        if not resolve(inst).exists():
            missing[inst.repo] += 1
            continue
        yield inst


def _record_error(out: Path, inst: Instance, exc: Exception) -> None:
    log.warning("%s: %s", inst.instance_id, exc)
    with (out / ERRORS_FILE).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"instance_id": inst.instance_id, "error": str(exc)[:500]}) + "\n")


def summarise(rows: Sequence[CorpusRow], missing: Counter[str] | None = None) -> dict[str, Any]:
    """Per-repository counts: instances, labels in the graph, unreachable, in the pool, and
    bases stepped back before their fix."""
    per: dict[str, dict[str, int]] = {}
    for r in rows:
        p = per.setdefault(
            r.repo,
            {
                "instances": 0,
                "labels": 0,
                "unreachable": 0,
                "in_pool": 0,
                "no_label": 0,
                "stepped_back": 0,
            },
        )
        p["instances"] += 1
        p["labels"] += r.labels
        p["unreachable"] += r.unreachable
        p["in_pool"] += r.positives
        p["no_label"] += int(r.labels == 0)
        p["stepped_back"] += int(r.stepped_back)
    total = {
        k: sum(p[k] for p in per.values())
        for k in ("instances", "labels", "unreachable", "in_pool", "no_label", "stepped_back")
    }
    return {
        "version": CORPUS_VERSION,
        "repositories": len(per),
        "total": total,
        "pool_recall": round(total["in_pool"] / total["labels"], 4) if total["labels"] else None,
        "by_repo": dict(sorted(per.items())),
        "not_on_disk": dict(missing or {}),
    }
