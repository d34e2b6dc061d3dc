"""The training corpus: pools, features and labels per instance, resumable, benchmark-safe."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from spider.eval.dataset import Instance
from spider.eval.snapshot import template_resolver
from spider.learn.corpus import (
    DEFAULT_POOL,
    build_corpus,
    dedupe_by_text,
    interleave,
    read_corpus,
    read_row,
)
from spider.rank.features import RANKER_FEATURES
from spider.settings import EngineSettings

PATCH = "\n".join(  # rejects a negative quantity in the shop's Cart.add_item
    [
        "diff --git a/shop/cart.py b/shop/cart.py",
        "--- a/shop/cart.py",
        "+++ b/shop/cart.py",
        "@@ -7,4 +7,6 @@ class Cart:",
        "     def add_item(self, sku, quantity):",
        '         """Add quantity of sku; negative quantities must be rejected."""',
        "+        if quantity < 0:",
        "+            raise ValueError(quantity)",
        "         self.items.append((sku, quantity))",
        " ",
        "",
    ]
)


def _inst(iid: str, sha: str, repo: str = "acme/shop", text: str = "") -> Instance:
    return Instance(
        instance_id=iid,
        repo=repo,
        base_commit=sha,
        problem_statement=text or "Cart accepts negative quantity\nadd_item(sku, -3) is accepted.",
        patch=PATCH,
    )


def _settings(tmp_path: Path) -> EngineSettings:
    return EngineSettings(cache_dir=tmp_path / "cache")


def test_collects_pool_features_and_labels(shop_mirror: tuple[Path, str], tmp_path: Path) -> None:
    root, sha = shop_mirror
    resolve = template_resolver(str(root.parent / "{owner}+{name}"))
    out = tmp_path / "corpus"
    summary = build_corpus([_inst("a-1", sha)], resolve, _settings(tmp_path), out, pool=4)
    row = read_row(out / "a-1.npz")
    assert row.x.shape == (4, len(RANKER_FEATURES))
    assert row.labels == 1 and row.unreachable == 0
    with np.load(out / "a-1.npz") as data:
        ids = list(data["ids"])
        assert bool(data["partial"])  # 7 functions, a pool of 4: only the pool was embedded
        assert list(data["gold_ids"]) == ["shop/cart.py:Cart.add_item"]
        assert data["pool_vecs"].shape == (4, 384) and data["gold_vecs"].shape == (1, 384)
    assert row.y.tolist() == [i == "shop/cart.py:Cart.add_item" for i in ids]
    assert summary["total"]["instances"] == 1 and summary["pool_recall"] == 1.0
    assert json.loads((out / "corpus.json").read_text())["by_repo"]["acme/shop"]["labels"] == 1


def test_a_warm_corpus_embeds_every_function(shop_mirror: tuple[Path, str], tmp_path: Path) -> None:
    """--warm: the pools an indexed repository ranks (dense over every function)."""
    root, sha = shop_mirror
    resolve = template_resolver(str(root.parent / "{owner}+{name}"))
    out = tmp_path / "corpus"
    build_corpus([_inst("a-1", sha)], resolve, _settings(tmp_path), out, pool=4, warm=True)
    with np.load(out / "a-1.npz") as data:
        assert not bool(data["partial"]) and data["pool_vecs"].shape == (4, 384)
    assert read_row(out / "a-1.npz").labels == 1


def test_resumes_and_counts_what_it_cannot_reach(shop_mirror: tuple[Path, str], tmp_path: Path) -> None:
    root, sha = shop_mirror
    resolve = template_resolver(str(root.parent / "{owner}+{name}"))
    out = tmp_path / "corpus"
    settings = _settings(tmp_path)
    build_corpus([_inst("a-1", sha)], resolve, settings, out)
    first = (out / "a-1.npz").stat().st_mtime_ns
    summary = build_corpus(
        [
            _inst("a-1", sha),
            _inst("b-1", sha, repo="acme/gone", text="other issue"),
            _inst("a-2", "0" * 40, text="an issue at a commit that does not exist"),
        ],
        resolve,
        settings,
        out,
    )
    assert (out / "a-1.npz").stat().st_mtime_ns == first  # not redone
    assert summary["this_run"] == {"collected": 0, "failed": 1}
    assert summary["not_on_disk"] == {"acme/gone": 1}
    errors = [json.loads(line) for line in (out / "errors.jsonl").read_text().splitlines()]
    assert [e["instance_id"] for e in errors] == ["a-2"]
    assert [r.instance_id for r in read_corpus(out)] == ["a-1"]


def test_duplicate_issues_and_big_repositories_are_thinned() -> None:
    a = [_inst(f"a-{i}", "s", text=f"issue {i}") for i in range(3)]
    b = [_inst(f"b-{i}", "s", repo="o/b", text=f"issue {i}") for i in range(2)]
    dup = _inst("a-9", "s", text="issue  0")  # same words as a-0
    assert [i.instance_id for i in dedupe_by_text([*a, dup])] == ["a-0", "a-1", "a-2"]
    assert [i.instance_id for i in interleave([*a, *b], 2)] == ["a-0", "b-0", "a-1", "b-1"]
    assert DEFAULT_POOL >= 100


def test_the_corpus_reports_each_instance(shop_mirror: tuple[Path, str], tmp_path: Path) -> None:
    from spider.progress import INSTANCES

    root, sha = shop_mirror
    heard: list[tuple[str, int, int | None, str]] = []
    build_corpus([_inst("a-1", sha)], template_resolver(str(root.parent / "{owner}+{name}")),
                 _settings(tmp_path), tmp_path / "corpus", pool=4,
                 progress=lambda p, d, t, x="": heard.append((p, d, t, x)))
    assert heard == [(INSTANCES, 0, 1, "a-1"), (INSTANCES, 1, 1, "")]
