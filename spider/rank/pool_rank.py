"""The pool ranker: re-score the first stage's top N with a learned ranking model.

Fusion decides which few hundred functions are candidates; a gradient-boosted ranking
model (LightGBM's lambdarank) then orders the top ``depth`` of them by the features of
``spider.rank.features.ranker_features``: every ranker's ranks and scores, the title's ranks,
issue signals by kind, which of the issue's words the name and body hold, graph relations
to what the issue names, the file's standing, size and name shape. Unlike the head model
(``spider.rank.rerank``), it reaches below the top K, so Recall@K moves, not only the order.

The model was fitted by ``spider train ranker`` on real issues of other projects (never
the benchmark's repositories); the file beside this module holds its trees, the feature
names it was fitted on, the depth it re-scores, a Platt calibration of the first item's
score and the command and cross-validation figures that produced it.

*Why the trees are evaluated here and not by LightGBM.* ``import lightgbm`` imports
scikit-learn and SciPy (1.6 s on these two cores), more than half of the warm
``spider locate`` budget, for a prediction over a few hundred rows. LightGBM fits the
model (``spider train ranker``); :class:`TreeEnsemble` evaluates the trees LightGBM dumps
(numerical ``<=`` splits, which is all this model has), and a test holds its scores to
LightGBM's own ``predict`` on the same rows.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from spider.errors import InvalidSetting, WeightsFormatError
from spider.rank.calibration import Calibration
from spider.rank.features import HISTORY_FEATURES, RANKER_FEATURES, ranker_features
from spider.weights import SCHEMA_VERSION, read_checked

if TYPE_CHECKING:
    from spider.index import Index
    from spider.retrieve.first_stage import FirstStage
    from spider.settings import EngineSettings

MODEL_FILE = Path(__file__).with_name("pool_ranker.json")
MODEL_KIND = "pool-ranker"
REGENERATE = "spider train ranker --write-weights"
DEFAULT_DEPTH = 200  # candidates re-scored when the file does not say
DIGEST_CHARS = 12


@dataclass(frozen=True)
class TreeEnsemble:
    """A sum of regression trees as flat arrays (all trees' nodes concatenated).

    Node ``j`` splits on ``feature[j]`` (-1 for a leaf) at ``threshold[j]`` (go ``left[j]``
    when the value is ``<=``, else ``right[j]``); a leaf's output is ``value[j]``.
    ``roots[t]`` is tree ``t``'s first node; ``depth`` bounds every root-to-leaf path.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    depth: int
    n_features: int

    @classmethod
    def from_lightgbm(cls, dump: Mapping[str, Any]) -> TreeEnsemble:
        """Flatten ``Booster.dump_model()`` (numerical splits only)."""
        feature: list[int] = []
        threshold: list[float] = []
        left: list[int] = []
        right: list[int] = []
        value: list[float] = []
        roots: list[int] = []
        deepest = 0

        def add(node: Mapping[str, Any], level: int) -> int:
            nonlocal deepest
            deepest = max(deepest, level)
            j = len(feature)
            feature.append(-1)
            threshold.append(0.0)
            left.append(j)
            right.append(j)
            value.append(float(node.get("leaf_value", 0.0)))
            if "split_feature" in node:
                if node.get("decision_type") != "<=":
                    raise WeightsFormatError(f"unsupported split {node.get('decision_type')!r}")
                feature[j] = int(node["split_feature"])
                threshold[j] = float(node["threshold"])
                left[j] = add(node["left_child"], level + 1)
                right[j] = add(node["right_child"], level + 1)
            return j

        for tree in dump["tree_info"]:
            roots.append(add(tree["tree_structure"], 0))
        return cls(
            np.array(feature, dtype=np.int32),
            np.array(threshold, dtype=np.float64),
            np.array(left, dtype=np.int32),
            np.array(right, dtype=np.int32),
            np.array(value, dtype=np.float64),
            np.array(roots, dtype=np.int32),
            deepest,
            int(dump.get("max_feature_idx", -1)) + 1,
        )

    @classmethod
    def mean(cls, parts: Sequence[TreeEnsemble]) -> TreeEnsemble:
        """One ensemble whose score is the mean of ``parts``' scores (their trees side by
        side, every leaf divided by their number)."""
        if not parts or len({p.n_features for p in parts}) != 1:
            raise ValueError("averaging needs ensembles over the same features")
        offsets = np.cumsum([0] + [len(p.feature) for p in parts[:-1]])

        def joined(name: str, shift: bool = False) -> np.ndarray:
            pairs = zip(parts, offsets, strict=True)
            arrays = [getattr(p, name) + (o if shift else 0) for p, o in pairs]
            return np.concatenate(arrays).astype(getattr(parts[0], name).dtype)

        return cls(
            joined("feature"),
            joined("threshold"),
            joined("left", shift=True),
            joined("right", shift=True),
            joined("value") / len(parts),
            joined("roots", shift=True),
            max(p.depth for p in parts),
            parts[0].n_features,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TreeEnsemble:
        """From :meth:`to_dict`'s form (checked: ValueError on anything inconsistent)."""
        arrays = {
            k: np.asarray(data[k], dtype=t)
            for k, t in (
                ("feature", np.int32),
                ("threshold", np.float64),
                ("left", np.int32),
                ("right", np.int32),
                ("value", np.float64),
                ("roots", np.int32),
            )
        }
        n = len(arrays["feature"])
        if not n or any(len(arrays[k]) != n for k in ("threshold", "left", "right", "value")):
            raise ValueError("node arrays of different lengths")
        for k in ("left", "right", "roots"):
            if len(arrays[k]) and (arrays[k].min() < 0 or arrays[k].max() >= n):
                raise ValueError(f"{k} points outside the nodes")
        if not np.isfinite(arrays["threshold"]).all() or not np.isfinite(arrays["value"]).all():
            raise ValueError("non-finite threshold or value")
        return cls(**arrays, depth=int(data["depth"]), n_features=int(data["n_features"]))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (what the model file holds under ``trees``)."""
        return {
            "n_features": self.n_features,
            "depth": self.depth,
            "roots": self.roots.tolist(),
            "feature": self.feature.tolist(),
            "threshold": self.threshold.tolist(),  # json writes the shortest exact repr
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "value": self.value.tolist(),
        }

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The ensemble's raw score for each row of ``x``."""
        x = np.nan_to_num(np.asarray(x, dtype=np.float64))
        if x.ndim != 2 or (len(x) and x.shape[1] < self.n_features):
            raise ValueError(f"expected rows of {self.n_features} features, got {x.shape}")
        rows = np.arange(len(x))[:, None]
        at = np.broadcast_to(self.roots, (len(x), len(self.roots))).copy()
        for _ in range(self.depth):
            f = self.feature[at]
            inner = f >= 0
            if not inner.any():
                break
            vals = x[rows, np.where(inner, f, 0)]
            step = np.where(vals <= self.threshold[at], self.left[at], self.right[at])
            at = np.where(inner, step, at)
        leaves: np.ndarray = self.value[at]
        return leaves.sum(axis=1)


_RANK_COLUMN = RANKER_FEATURES.index("log_rank")


def prior_scores(features: np.ndarray, prior: float) -> np.ndarray:
    """The score the trees start from: ``prior`` x minus the log of the fused rank, so that
    with no trees the first stage's order stands (LightGBM's ``init_score``)."""
    return -prior * np.asarray(features, dtype=np.float64)[:, _RANK_COLUMN]


@dataclass(frozen=True)
class PoolRanker:
    """A fitted ranking model over ``RANKER_FEATURES`` and how deep it re-scores."""

    trees: TreeEnsemble
    depth: int
    calibration: Calibration | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    prior: float = 0.0  # weight of the first stage's order the trees start from (-log rank)
    digest: str = ""  # sha256 of the file it was read from, first 12 hex characters

    @classmethod
    def load(cls, path: str | Path = MODEL_FILE) -> PoolRanker:
        """Read a model file written by ``spider train ranker`` (schema and features checked)."""
        path = Path(path)
        data = read_checked(path, kind=MODEL_KIND, regenerate=REGENERATE)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:DIGEST_CHARS]
        hint = f"regenerate it with `{REGENERATE}`"
        names = list(data.get("features", []))
        # a file fitted before features were appended reads the ones it knows
        if not names or names != list(RANKER_FEATURES[: len(names)]):
            raise WeightsFormatError(
                f"{path}: fitted on other features than this engine computes; {hint}"
            )
        trees = data.get("trees")
        if not isinstance(trees, dict):
            raise WeightsFormatError(f"{path}: no trees under 'trees'; {hint}")
        try:
            ensemble = TreeEnsemble.from_dict(trees)
        except (KeyError, TypeError, ValueError) as exc:
            raise WeightsFormatError(f"{path}: unreadable trees ({exc}); {hint}") from exc
        if ensemble.n_features != len(names):
            raise WeightsFormatError(
                f"{path}: trees over {ensemble.n_features} features, not "
                f"the {len(names)} it names; {hint}"
            )
        depth = data.get("depth", DEFAULT_DEPTH)
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise WeightsFormatError(f"{path}: depth must be a positive integer; {hint}")
        prior = data.get("prior", 0.0)
        if (
            isinstance(prior, bool)
            or not isinstance(prior, int | float)
            or not math.isfinite(prior)
        ):
            raise WeightsFormatError(f"{path}: prior must be a finite number; {hint}")
        cal = data.get("calibration")
        calibration = None
        if isinstance(cal, dict):
            try:
                calibration = Calibration(float(cal["slope"]), float(cal["intercept"]))
            except (KeyError, TypeError, ValueError) as exc:
                raise WeightsFormatError(f"{path}: bad calibration {cal!r}; {hint}") from exc
        meta = {
            k: v
            for k, v in data.items()
            if k not in ("schema", "kind", "features", "trees", "depth", "calibration", "prior")
        }
        return cls(ensemble, depth, calibration, meta, float(prior), digest)

    def reads(self, names: Sequence[str]) -> bool:
        """Whether any tree splits on one of the features ``names``."""
        cols = [RANKER_FEATURES.index(n) for n in names]
        return bool(np.isin(self.trees.feature, cols).any())  # beyond n_features: never

    def scores(self, features: np.ndarray) -> np.ndarray:
        """The model's score for each row of ``features`` (columns ``RANKER_FEATURES``)."""
        if not len(features):
            return np.zeros(0)
        scores: np.ndarray = prior_scores(features, self.prior) + self.trees.predict(features)
        return scores


def dump_ranker(
    path: str | Path,
    ranker: PoolRanker,
    meta: Mapping[str, Any],
) -> None:
    """Write a model file that :meth:`PoolRanker.load` reads back (meta first, trees last)."""
    import json

    body: dict[str, Any] = {"schema": SCHEMA_VERSION, "kind": MODEL_KIND, **meta}
    body["features"] = list(RANKER_FEATURES)
    body["depth"] = int(ranker.depth)
    body["prior"] = float(ranker.prior)
    if ranker.calibration is not None:
        body["calibration"] = {
            "slope": round(ranker.calibration.slope, 6),
            "intercept": round(ranker.calibration.intercept, 6),
        }
    body["trees"] = ranker.trees.to_dict()
    Path(path).write_text(json.dumps(body, separators=(",", ":")) + "\n")


@lru_cache(maxsize=4)
def _read(path: str, mtime_ns: int, size: int) -> PoolRanker:
    """One model file, read once while it stays the same file (``mtime_ns``, ``size``)."""
    return PoolRanker.load(path)


def load_ranker(path: str | Path) -> PoolRanker:
    """The model in ``path``, cached until the file changes."""
    st = Path(path).stat()
    return _read(str(Path(path).resolve()), st.st_mtime_ns, st.st_size)


def default_ranker() -> PoolRanker | None:
    """The shipped model, or None when no model file ships (the head model orders then)."""
    return load_ranker(MODEL_FILE) if MODEL_FILE.exists() else None


def settings_ranker(settings: EngineSettings) -> PoolRanker | None:
    """The pool ranker ``settings`` ask for: None unless ``ranker`` is pool; the file
    ``ranker_file`` names, else the shipped one (None when none ships)."""
    if settings.ranker != "pool":
        return None
    spec = settings.ranker_file.strip()
    if not spec:
        return default_ranker()
    path = Path(spec).expanduser()
    if not path.is_file():
        raise InvalidSetting(
            f"SPIDER_RANKER_FILE={spec!r}: no file at {path}; fit one with "
            f"`spider train ranker --weights-file {path} --write-weights` or unset it "
            "for the shipped ranker"
        )
    return load_ranker(path)


def custom_digest(ranker: PoolRanker) -> str:
    """The digest of ``ranker``'s file when that is not the shipped model (a file
    ``ranker_file`` names); "" for the shipped one and for a model read from no file."""
    shipped = default_ranker()
    return "" if shipped is not None and ranker.digest == shipped.digest else ranker.digest


def ranker_reads_history(settings: EngineSettings, ranker: PoolRanker | None = None) -> bool:
    """Whether the pool ranker (the one ``settings`` name unless given) reads history at
    inference under ``settings``."""
    if settings.history_commits <= 0:
        return False
    ranker = ranker or settings_ranker(settings)
    return ranker is not None and ranker.reads(HISTORY_FEATURES)


def history_depth(settings: EngineSettings, ranker: PoolRanker | None = None) -> int:
    """How many commits a checkout needs for the engine to read what it ranks with: the
    commit alone (1), or with ``history_commits`` more when history at inference is read
    (fused into the first stage, or a feature of the pool ranker: the one the settings name
    unless given)."""
    if settings.history_commits <= 0:
        return 1
    if settings.fusion_history > 0 or ranker_reads_history(settings, ranker):
        return settings.history_commits + 1
    return 1


def rank_pool(
    index: Index,
    fs: FirstStage,
    ranker: PoolRanker,
    depth: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``fs.order`` with its first ``depth`` items re-sorted by the ranker, and their scores
    in the new order (best first); items below ``depth`` keep the first stage's order."""
    depth = depth or ranker.depth
    head = fs.order[:depth]
    if len(head) == 0:
        return fs.order, np.zeros(0)
    rows = ranker_features(index, fs, [int(i) for i in head], history=ranker.reads(HISTORY_FEATURES))
    scores = ranker.scores(rows)
    by = np.argsort(-scores, kind="stable")
    return np.concatenate([head[by], fs.order[depth:]]), scores[by]
