"""Features of a function for one query: the one place the learned stages read them from.

Four consumers, one convention:

- the pool ranker (``spider.rank.pool_rank``) re-scores the first stage's top N with
  :func:`ranker_features` (columns :data:`RANKER_FEATURES`), and ``spider train corpus``
  stores exactly these rows for fitting it;
- the head re-ranker (``spider.rank.rerank``) scores the first stage's top K with
  :func:`head_features` (columns :data:`HEAD_FEATURES`);
- the selector's neighbours carry :func:`pool_features` (per-ranker ranks and the issue
  signal of every pool item) plus :func:`neighbour_features` (graph relation to the
  centre, name overlap with the issue);
- ``spider train selector`` / ``head`` / ``ranker`` fit on exactly these functions.

Features only read: the first stage's record (its ranks, raw scores, signals and the
:class:`~spider.retrieve.first_stage.FeatureInputs` it computed for the learned stages:
the title's own ranks, file BM25, stack frames), the index's graph and documents. No
function here embeds, scores or fuses: one query walks the retrievers once.

Every rank enters as :func:`log_rank`: the natural log of a 1-based rank, capped at
:data:`RANK_CAP` so that a feature does not grow with the size of the repository.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from spider.errors import FeatureInputsMissing
from spider.ids import short_name
from spider.retrieve.signals import STRENGTH, looks_like_code
from spider.retrieve.tokenize import split_identifier

if TYPE_CHECKING:
    from spider.graph.model import CodeGraph
    from spider.index import Index
    from spider.models import Issue
    from spider.retrieve.first_stage import FeatureInputs, FirstStage

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

# What the pool ranker reads: the head features and what the first stage cannot weigh
# itself (which words of the issue the function's name and body hold, where it sits in
# the graph relative to what the issue names, its file's standing), plus a few per-issue
# constants so that the trees can condition on the kind of issue.
# History at inference (spider.retrieve.history): what earlier commits that edited the
# function, or touched its file, said, against the issue (BM25), and how many there were.
HISTORY_FEATURES = (
    "history_share",  # BM25 of the function's earlier commit messages / the best function's
    "log_history_commits",  # earlier commits that edited the function (log1p)
    "log_history_age",  # commits since one last edited it (log1p; all read when none did)
    "log_history_rank",  # its rank among all functions by that BM25 (RANK_CAP when 0)
    "file_history_share",  # the same for its file's commits / the best file's
    "log_file_history_commits",  # earlier commits that touched its file (log1p)
    "log_file_history_age",  # commits since one last touched its file (log1p)
)
SIGNAL_KINDS = tuple(STRENGTH)  # frame, qualified, backtick, name, member, component, file
RANKER_FEATURES = (
    *HEAD_FEATURES,
    "dense_cos",  # raw cosine of issue and function
    "file_share",  # file-level BM25 score / the best file's
    *(f"signal_{kind}" for kind in SIGNAL_KINDS),  # the strongest signal's kind, one-hot
    "dunder",  # `__x__` other than `__init__`
    "method",  # defined inside a class
    "name_mentioned",  # its short name appears as a word in the issue
    "scope_mentioned",  # its class (enclosing name) appears as a word in the issue
    "file_mentioned",  # its file's name (without extension) appears as a word in the issue
    "name_overlap",  # share of its name's parts that are words of the issue
    "body_terms",  # how many of the issue's code-shaped words its text holds (log1p)
    "body_share",  # the same as a share of the issue's code-shaped words
    "log_callers",  # functions that invoke it (log1p)
    "log_callees",  # functions it invokes (log1p)
    "neighbour_signal",  # strongest issue signal among its contains/invokes neighbours
    "class_signal",  # strongest issue signal among the other functions of its class
    "file_top20",  # functions of its file in the fused top 20
    "log_rank_in_file",  # its fused rank among the functions of its file
    "log_file_functions",  # functions in its file
    "log_functions",  # functions in the repository (per issue)
    "log_issue_chars",  # length of the issue (per issue)
    "issue_frames",  # stack frames in the issue (per issue)
    "issue_code_words",  # code-shaped words in the issue (log1p, per issue)
    *HISTORY_FEATURES,
)
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Dense ranks the pool ranker reads *within its pool*, not among all functions: a cold
# index (the training corpus) embeds only the pool, a warm one everything, so a global
# dense rank would mean two different things in training and in use.
POOL_RELATIVE = ("log_dense_rank", "log_title_dense_rank")

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


# -- head re-ranker ---------------------------------------------------------------------


def _inputs(fs: FirstStage) -> FeatureInputs:
    """What the first stage computed for the learned stages (raises when it did not)."""
    if fs.inputs is None:
        raise FeatureInputsMissing(
            "this first stage was ranked without its feature inputs: call "
            "first_stage(..., learned=True) before computing features"
        )
    return fs.inputs


def head_features(index: Index, fs: FirstStage, items: Sequence[int]) -> np.ndarray:
    """Feature rows (``HEAD_FEATURES`` order) for the function indices ``items`` of ``fs``
    (which carries the issue as ranked and the title's ranks)."""
    ids = index.function_ids
    title = _inputs(fs).title_ranks
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


# -- pool ranker ------------------------------------------------------------------------


def _scope(name: str) -> str:
    """The enclosing name of a qualified name (``Session`` for ``Session.send``), or ''."""
    parts = name.split("#")[0].split(".")
    return parts[-2] if len(parts) > 1 else ""


def _file_stem(path: str) -> str:
    base = path.rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[0] if "." in base else base


def ranker_features(
    index: Index,
    fs: FirstStage,
    items: Sequence[int],
    *,
    history: bool = True,
) -> np.ndarray:
    """Feature rows (``RANKER_FEATURES`` order) for the function indices ``items`` of ``fs``:
    the head features, then one family at a time (shape, words, graph, file, the issue,
    history). ``history=False`` leaves the :data:`HISTORY_FEATURES` at 0 (a model that never
    reads them need not read the repository's history; with ``history`` the first stage must
    have scored it: ``first_stage(..., history=True)``)."""
    items = [int(i) for i in items]
    out = np.zeros((len(items), len(RANKER_FEATURES)), dtype=np.float64)
    out[:, : len(HEAD_FEATURES)] = head_features(index, fs, items)
    if not items:
        return out
    q = _QueryWords.of(fs.issue)  # the text the first stage ranked (cut at max_issue_chars)
    signal = fs.signal if fs.signal is not None else np.zeros(len(index.function_ids))
    for r, i in enumerate(items):
        row = out[r]
        attrs = index.graph.g.nodes[index.function_ids[i]]
        _shape_features(row, fs, i, attrs)
        _word_features(row, q, attrs, index.document(i))
        _graph_features(row, index, index.function_ids[i], signal)
    _file_features(out, index, fs, items)
    pool_relative(out)
    _issue_features(out, index, fs, q)
    if history:
        first = _COL[HISTORY_FEATURES[0]]
        history_features(index, _inputs(fs), items, out[:, first : first + len(HISTORY_FEATURES)])
    return out


_COL = {name: j for j, name in enumerate(RANKER_FEATURES)}  # column of each ranker feature


@dataclass(frozen=True)
class _QueryWords:
    """The words of one issue the word features compare a function with."""

    text: str
    words: set[str]  # identifier-shaped words
    lower_words: set[str]
    parts: set[str]  # their lower-cased parts (split_identifier), longer than 2
    code_words: set[str]  # code-shaped words longer than 3

    @classmethod
    def of(cls, issue: Issue) -> _QueryWords:
        """The words of ``issue``'s text."""
        words = set(_WORD_RE.findall(issue.text))
        _, parts = issue_vocabulary(issue)
        return cls(
            text=issue.text,
            words=words,
            lower_words={w.lower() for w in words},
            parts=parts,
            code_words={w for w in words if len(w) > 3 and looks_like_code(w)},
        )


def _shape_features(row: np.ndarray, fs: FirstStage, i: int, attrs: Mapping[str, Any]) -> None:
    """What the function is: its cosine, the kind of its strongest signal, dunder, method."""
    raw_d = fs.raw.get("dense")
    row[_COL["dense_cos"]] = float(raw_d[i]) if raw_d is not None else 0.0
    kind = fs.evidence.get(i, "").partition(":")[0]
    if kind in SIGNAL_KINDS:
        row[_COL[f"signal_{kind}"]] = 1.0
    name = attrs.get("name", "")
    short = short_name(name)
    row[_COL["dunder"]] = float(
        short.startswith("__") and short.endswith("__") and short != "__init__"
    )
    row[_COL["method"]] = float(bool(_scope(name)))


def _word_features(row: np.ndarray, q: _QueryWords, attrs: Mapping[str, Any], body: str) -> None:
    """Which words of the issue its name, class, file and body hold."""
    name = attrs.get("name", "")
    short, scope = short_name(name), _scope(name)
    row[_COL["name_mentioned"]] = float(len(short) > 2 and short in q.words)
    row[_COL["scope_mentioned"]] = float(len(scope) > 2 and scope in q.words)
    stem = _file_stem(attrs.get("path", ""))
    row[_COL["file_mentioned"]] = float(
        len(stem) > 2
        and stem.lower() not in ("__init__", "index", "main", "utils")
        and stem.lower() in q.lower_words
    )
    name_parts = {p for p in split_identifier(short) if len(p) > 2}
    row[_COL["name_overlap"]] = (
        len(name_parts & q.parts) / len(name_parts) if name_parts else 0.0
    )
    held = sum(1 for w in q.code_words if w in body)
    row[_COL["body_terms"]] = math.log1p(held)
    row[_COL["body_share"]] = held / len(q.code_words) if q.code_words else 0.0


def _graph_features(row: np.ndarray, index: Index, node: str, signal: np.ndarray) -> None:
    """Where it sits in the graph: callers, callees, the strongest issue signal among its
    contains/invokes neighbours and among the other functions of its class."""
    g = index.graph
    pos = index.name_table().index_of
    callers = callees = 0
    near_signal = 0.0
    for _, v, k in g.g.out_edges(node, keys=True):
        if k == "invokes":
            callees += 1
        if k in ("invokes", "contains") and v in pos:
            near_signal = max(near_signal, float(signal[pos[v]]))
    for u, _, k in g.g.in_edges(node, keys=True):
        if k == "invokes":
            callers += 1
        if k in ("invokes", "contains") and u in pos:
            near_signal = max(near_signal, float(signal[pos[u]]))
    row[_COL["log_callers"]] = math.log1p(callers)
    row[_COL["log_callees"]] = math.log1p(callees)
    row[_COL["neighbour_signal"]] = near_signal
    parent = _parent_class(g, node)
    if parent is not None:
        sibling = [
            float(signal[pos[v]])
            for _, v, k in g.g.out_edges(parent, keys=True)
            if k == "contains" and v != node and v in pos
        ]
        row[_COL["class_signal"]] = max(sibling, default=0.0)


def _file_features(out: np.ndarray, index: Index, fs: FirstStage, items: Sequence[int]) -> None:
    """Its file's standing: file BM25 as a share of the best file's, functions of the file
    in the fused top 20, its size, and the function's fused rank within it."""
    file_of = index.file_of()
    file_scores = _inputs(fs).file_scores
    top_file = float(file_scores.max()) if file_scores is not None and len(file_scores) else 0.0
    file_sizes = np.bincount(file_of) if len(file_of) else np.zeros(0, dtype=np.int64)
    top20 = np.bincount(file_of[fs.order[:20]], minlength=len(file_sizes))
    members = {f: np.flatnonzero(file_of == f) for f in {int(file_of[i]) for i in items}}
    for r, i in enumerate(items):
        f = int(file_of[i])
        if file_scores is not None and top_file > 0:
            out[r, _COL["file_share"]] = float(file_scores[f]) / top_file
        out[r, _COL["file_top20"]] = float(top20[f])
        out[r, _COL["log_file_functions"]] = math.log(max(int(file_sizes[f]), 1))
        m = members[f]
        out[r, _COL["log_rank_in_file"]] = log_rank(1 + int((fs.rank[m] < fs.rank[i]).sum()))


def _issue_features(out: np.ndarray, index: Index, fs: FirstStage, q: _QueryWords) -> None:
    """The per-issue constants every row carries (so the trees can condition on them)."""
    out[:, _COL["log_functions"]] = math.log(max(len(index.function_ids), 1))
    out[:, _COL["log_issue_chars"]] = math.log(max(len(q.text), 1))
    out[:, _COL["issue_frames"]] = float(_inputs(fs).frames)
    out[:, _COL["issue_code_words"]] = math.log1p(len(q.code_words))


def history_features(
    index: Index, inputs: FeatureInputs, items: Sequence[int], out: np.ndarray
) -> None:
    """Fill ``out`` (rows = ``items``, columns = :data:`HISTORY_FEATURES`) from the first
    stage's history scores and the index's history: each score as a share of the best
    function's (file's), counts and ages as log1p. Without any history every function
    reads as one no commit edited."""
    if inputs.history_scores is None:
        raise FeatureInputsMissing(
            "this first stage was ranked without history scores: call "
            "first_stage(..., history=True) before computing history features"
        )
    hist = index.history()
    col = {name: j for j, name in enumerate(HISTORY_FEATURES)}
    if not hist.commits:  # no history to read (no git, a shallow clone): as if none edited
        never = math.log1p(index.settings.history_commits)
        out[:, col["log_history_age"]] = out[:, col["log_file_history_age"]] = never
        out[:, col["log_history_rank"]] = math.log(RANK_CAP)
        return
    rows = np.asarray(items, dtype=np.int64)
    files = index.file_of()[rows]
    for prefix, level, at in (("", "function", rows), ("file_", "file", files)):
        scores = inputs.history_scores[level]
        top = float(scores.max()) if len(scores) else 0.0
        if top > 0:
            out[:, col[f"{prefix}history_share"]] = scores[at] / top
        out[:, col[f"log_{prefix}history_commits"]] = np.log1p(hist.counts(level)[at])
        out[:, col[f"log_{prefix}history_age"]] = np.log1p(hist.age(level)[at])
        if not prefix:
            better = np.sort(-scores)  # ascending: best first
            rank = 1 + np.searchsorted(better, -scores[at], side="left")
            out[:, col["log_history_rank"]] = [
                log_rank(r) if s > 0 else math.log(RANK_CAP)
                for r, s in zip(rank, scores[at], strict=True)
            ]


def pool_relative(x: np.ndarray) -> np.ndarray:
    """Replace the :data:`POOL_RELATIVE` columns of ``x`` (rows = one pool, in place) by
    the log of each row's rank among the pool's rows (ties share the best rank)."""
    for name in POOL_RELATIVE:
        j = RANKER_FEATURES.index(name)
        v = x[:, j]
        x[:, j] = np.log(1 + np.searchsorted(np.sort(v), v, side="left"))
    return x


# -- selector ---------------------------------------------------------------------------


def pool_features(fs: FirstStage, ids: Sequence[str], pool: int) -> dict[str, dict[str, float]]:
    """Per-item first-stage features of the top ``pool`` items, keyed by id, for the selector."""
    out: dict[str, dict[str, float]] = {}
    for i in fs.order[:pool]:
        f: dict[str, float] = {}
        for name, ranks in fs.ranks.items():
            if name not in ("signals", "file", "history"):
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
            return str(u)
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
