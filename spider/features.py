"""Features of a function for one query: the one place the learned stages read them from.

Three consumers, one convention:

- the head re-ranker (``spider.rerank``) scores the first stage's top K with
  :func:`head_features` (columns :data:`HEAD_FEATURES`);
- the selector's neighbours carry :func:`pool_features` (per-ranker ranks and the issue
  signal of every pool item) plus :func:`neighbour_features` (graph relation to the
  centre, name overlap with the issue);
- ``spider bench fit`` / ``fit-rerank`` fit on exactly these functions.

Every rank enters as :func:`log_rank`: the natural log of a 1-based rank, capped at
:data:`RANK_CAP` so that a feature does not grow with the size of the repository.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from spider.retrieve.cold import pooled_dense_scores
from spider.retrieve.fusion import ranks_from_scores
from spider.retrieve.tokenize import split_identifier

if TYPE_CHECKING:
    from spider.graph.model import CodeGraph
    from spider.index import Index
    from spider.models import Issue
    from spider.retrieve.first_stage import FirstStage

RANK_CAP = 1000  # ranks beyond this carry no more information; keeps features repo-size free

HEAD_FEATURES = (
    "log_rank",  # fused first-stage rank
    "log_dense_rank",
    "log_bm25_rank",
    "log_file_rank",  # rank of the function's file by file-level BM25
    "log_title_dense_rank",  # dense rank for the issue title alone
    "log_title_bm25_rank",  # BM25 rank for the issue title alone
    "bm25_share",  # BM25 score / best BM25 score of the query: how strong the word match is
    "dense_gap",  # cosine similarity minus the best one of the query
    "log_lines",  # length of the function
    "private",  # `_name` (not dunder)
    "init",  # `__init__`
    "signal",  # issue-signal strength (stack frame, mention, ...)
    "log_file_best",  # best fused rank of any function in the same file
    "log_neighbour_best",  # best fused rank among its contains/invokes neighbours
)

# What the offline selector's neighbour model reads: neighbour_features, the pool
# features of the neighbour (per-ranker ranks, its issue signal) and the centre's signal.
NEIGHBOUR_FEATURES = (
    "log_rank",  # the neighbour's first-stage rank
    "log_centre_rank",
    "hops",
    "edge_invokes",
    "same_file",
    "same_class",
    "mentioned",  # its name appears in the issue
    "same_name",  # same short name as the centre
    "name_overlap",  # share of its name's parts that appear in the issue
    "log_dense_rank",
    "log_bm25_rank",
    "signal",
    "centre_signal",
)

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def log_rank(rank: float) -> float:
    """``log(rank)`` with the rank clamped to ``[1, RANK_CAP]``."""
    return math.log(min(max(float(rank), 1.0), RANK_CAP))


def short_name(qualified: str) -> str:
    """The last component of a qualified name, without an overload suffix (``#2``)."""
    return qualified.split("#")[0].split(".")[-1]


# -- head re-ranker ---------------------------------------------------------------------


def _title_ranks(index: Index, fs: FirstStage, title: str) -> dict[str, np.ndarray]:
    """Dense and BM25 ranks of every function for the title alone (the issue's summary)."""
    out: dict[str, np.ndarray] = {}
    title = title.strip()
    if not title or not index.function_ids:
        return out
    if "dense" in fs.ranks and fs.pool is not None:  # cold path: the pool's vectors only
        out["dense"] = ranks_from_scores(pooled_dense_scores(index, title, fs.pool))
    elif "dense" in fs.ranks:
        out["dense"] = ranks_from_scores(index.vectors() @ index.encoder().encode_query(title))
    if "bm25" in fs.ranks:
        out["bm25"] = ranks_from_scores(index.lexical().scores(title))
    return out


def head_features(
    index: Index, fs: FirstStage, items: Sequence[int], issue: Issue | None = None
) -> np.ndarray:
    """Feature rows (``HEAD_FEATURES`` order) for the function indices ``items`` of ``fs``."""
    ids = index.function_ids
    title = _title_ranks(index, fs, issue.title) if issue is not None else {}
    n = len(ids)
    rank = fs.rank
    file_of = index.file_of()
    file_best = np.full(int(file_of.max()) + 1 if n else 0, n, dtype=np.int64)
    np.minimum.at(file_best, file_of, rank)
    pos = index.name_table().index_of  # function id -> position, built once per index
    g = index.graph
    raw_b = fs.raw.get("bm25")
    raw_d = fs.raw.get("dense")
    top_b = float(raw_b.max()) if raw_b is not None and len(raw_b) else 0.0
    top_d = float(raw_d.max()) if raw_d is not None and len(raw_d) else 0.0
    rows = []
    for i in items:
        node = ids[i]
        attrs = g.g.nodes[node]
        short = short_name(attrs.get("name", ""))
        near = g.neighbours(node, "contains") | g.neighbours(node, "invokes")
        near_ranks = [rank[pos[m]] for m in near if m in pos]
        lines = int(attrs.get("end_line", 0)) - int(attrs.get("start_line", 0)) + 1

        def ranked(name: str, i: int = i, ranks: Mapping[str, np.ndarray] = fs.ranks) -> float:
            r = ranks.get(name)
            return log_rank(float(r[i])) if r is not None else log_rank(RANK_CAP)

        rows.append(
            [
                log_rank(float(rank[i])),
                ranked("dense"),
                ranked("bm25"),
                ranked("file"),
                ranked("dense", ranks=title),
                ranked("bm25", ranks=title),
                float(raw_b[i]) / top_b if raw_b is not None and top_b > 0 else 0.0,
                float(raw_d[i]) - top_d if raw_d is not None else 0.0,
                math.log(max(lines, 1)),
                float(short.startswith("_") and not short.startswith("__")),
                float(short == "__init__"),
                float(fs.signal[i]) if fs.signal is not None else 0.0,
                log_rank(float(file_best[file_of[i]])),
                log_rank(float(min(near_ranks, default=RANK_CAP))),
            ]
        )
    return np.array(rows, dtype=np.float64).reshape(len(rows), len(HEAD_FEATURES))


# -- selector ---------------------------------------------------------------------------


def pool_features(fs: FirstStage, ids: Sequence[str], pool: int) -> dict[str, dict[str, float]]:
    """Per-item first-stage features of the top ``pool`` items, keyed by id, for the selector."""
    out: dict[str, dict[str, float]] = {}
    for i in fs.order[:pool]:
        f: dict[str, float] = {}
        for name, ranks in fs.ranks.items():
            if name not in ("signals", "file"):
                f[f"log_{name}_rank"] = log_rank(int(ranks[i]))
        f["signal"] = float(fs.signal[i]) if fs.signal is not None else 0.0
        out[ids[int(i)]] = f
    return out


def issue_vocabulary(issue: Issue) -> tuple[set[str], set[str]]:
    """Identifiers in the issue text, and their lower-cased parts."""
    words = set(_NAME_RE.findall(issue.text))
    parts = {p for w in words for p in split_identifier(w) if len(p) > 2}
    return words, parts


def _parent_class(graph: CodeGraph, node_id: str) -> str | None:
    for u, _, k in graph.g.in_edges(node_id, keys=True):
        if k == "contains" and graph.g.nodes[u].get("kind") == "class":
            return u
    return None


def neighbour_features(
    graph: CodeGraph,
    centre: str,
    centre_rank: int,
    neighbour: str,
    edge: str,
    hops: int,
    rank: int,
    issue_words: set[str],
    issue_parts: set[str],
) -> dict[str, float]:
    """Features of one neighbour of ``centre``, computable without any model call."""
    a = graph.g.nodes[neighbour]
    c = graph.g.nodes[centre]
    short = short_name(a.get("name", ""))
    parts = {p for p in split_identifier(short) if len(p) > 2}
    overlap = len(parts & issue_parts) / len(parts) if parts else 0.0
    same_class = _parent_class(graph, neighbour)
    return {
        "log_rank": log_rank(rank),
        "log_centre_rank": log_rank(centre_rank),
        "hops": float(hops),
        "edge_invokes": 1.0 if edge == "invokes" else 0.0,
        "same_file": 1.0 if a.get("path") == c.get("path") else 0.0,
        "same_class": 1.0
        if same_class is not None and same_class == _parent_class(graph, centre)
        else 0.0,
        "mentioned": 1.0 if short in issue_words and len(short) > 2 else 0.0,
        "same_name": 1.0 if short == short_name(c.get("name", "")) else 0.0,
        "name_overlap": overlap,
    }
