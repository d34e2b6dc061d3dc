"""A training instance whose base commit already holds its fix is collected before it.

MULocBench records some fix commits (and merges of a fix) as the base: history at inference
would then read the fix's own message on the functions it edited, at age 0. Real git
repositories, built here: a fix committed straight to the branch, and a fix merged.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spider.errors import InputError
from spider.eval.dataset import Instance
from spider.eval.snapshot import template_resolver
from spider.learn.corpus import build_corpus, read_row
from spider.rank.features import RANKER_FEATURES
from spider.settings import EngineSettings
from tests.spider.bench.helpers import commit_files, git, init_repo
from tests.spider.shop import FILES

CART = FILES["shop/cart.py"].lstrip("\n")
PRICING = FILES["shop/pricing.py"].lstrip("\n")
FIXED_CART = CART.replace(
    "        self.items.append((sku, quantity))",
    "        if quantity < 0:\n            raise ValueError(quantity)\n"
    "        self.items.append((sku, quantity))",
)
GOLD = "shop/cart.py:Cart.add_item"
AGE = RANKER_FEATURES.index("log_history_age")
SHARE = RANKER_FEATURES.index("history_share")  # BM25 of its commits' messages vs the issue


@pytest.fixture(scope="module")
def fixed_mirror(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """``acme+shop``: the shop, a commit to ``total``, then the fix of ``add_item``
    committed straight to main (``fix``); a branch off the total commit holding the same
    fix, merged after a commit to ``format_price`` (``merge``, first parent ``pricing``)."""
    root = init_repo(tmp_path_factory.mktemp("mirrors") / "acme+shop")
    shas = {"shop": commit_files(root, {"shop/cart.py": CART, "shop/pricing.py": PRICING}, "shop")}
    shas["total"] = commit_files(
        root,
        {"shop/cart.py": CART.replace("round(subtotal, 2)", "round(subtotal, 3)")},
        "Round the cart total to tenths of cents",
    )
    git(root, "checkout", "-q", "-b", "fix")
    fixed = FIXED_CART.replace("round(subtotal, 2)", "round(subtotal, 3)")
    shas["fix"] = commit_files(
        root, {"shop/cart.py": fixed}, "Reject a negative quantity in add_item"
    )
    git(root, "checkout", "-q", "main")
    shas["pricing"] = commit_files(
        root,
        {"shop/pricing.py": PRICING.replace("${amount:.2f}", "${amount:,.2f}")},
        "Format prices with a thousands separator",
    )
    git(root, "merge", "-q", "--no-ff", "-m", "Merge branch fix", "fix")
    shas["merge"] = git(root, "rev-parse", "HEAD")
    return root, shas


def _inst(iid: str, sha: str) -> Instance:
    return Instance(
        instance_id=iid,
        repo="acme/shop",
        base_commit=sha,
        problem_statement="Cart accepts a negative quantity\nadd_item(sku, -3) is accepted.",
        edit_functions=[GOLD],
    )


def _collect(root: Path, tmp_path: Path, sha: str) -> tuple[np.lib.npyio.NpzFile, np.ndarray]:
    """Collect one instance at ``sha``; its file and the edited function's feature row."""
    out = tmp_path / "corpus"
    summary = build_corpus(
        [_inst("a-1", sha)],
        template_resolver(str(root.parent / "{owner}+{name}")),
        EngineSettings(cache_dir=tmp_path / "cache"),
        out,
        pool=7,
    )
    assert summary["this_run"] == {"collected": 1, "failed": 0}
    row = read_row(out / "a-1.npz")
    assert summary["total"]["stepped_back"] == int(row.stepped_back)
    data = np.load(out / "a-1.npz")
    gold = list(data["ids"]).index(GOLD)
    assert row.y[gold] == 1
    return data, row.x[gold]


def test_a_base_that_is_its_fix_is_collected_at_its_parent(
    fixed_mirror: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, shas = fixed_mirror
    data, x = _collect(root, tmp_path, shas["fix"])
    assert x[AGE] > 0 and x[SHARE] == 0  # the fix's own message is not in its history
    assert "raise ValueError" not in str(data["texts"][list(data["ids"]).index(GOLD)])
    assert str(data["base_commit"]) == shas["total"] and str(data["dataset_base"]) == shas["fix"]
    assert read_row(tmp_path / "corpus" / "a-1.npz").stepped_back


def test_a_base_that_merged_its_fix_is_collected_at_its_first_parent(
    fixed_mirror: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, shas = fixed_mirror
    data, x = _collect(root, tmp_path, shas["merge"])
    assert x[SHARE] == 0  # the merged fix's message is not in its history
    assert str(data["base_commit"]) == shas["pricing"]


def test_a_base_before_its_fix_is_kept(
    fixed_mirror: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, shas = fixed_mirror
    data, _ = _collect(root, tmp_path, shas["pricing"])
    assert str(data["base_commit"]) == str(data["dataset_base"]) == shas["pricing"]
    assert not read_row(tmp_path / "corpus" / "a-1.npz").stepped_back


def test_a_fix_beyond_the_steps_allowed_is_refused(
    fixed_mirror: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    from spider.learn.corpus import pre_fix_base

    root, shas = fixed_mirror
    resolve = template_resolver(str(root.parent / "{owner}+{name}"))
    settings = EngineSettings(cache_dir=tmp_path / "cache")
    with pytest.raises(InputError, match="already edits"):
        pre_fix_base(_inst("a-1", shas["fix"]), resolve, settings, steps=0)
