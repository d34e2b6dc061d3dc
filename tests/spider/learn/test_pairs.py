"""Training pairs for the encoder: docstrings stripped, hard negatives, exclusions refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spider.errors import InputError
from spider.eval.dataset import Instance
from spider.eval.snapshot import template_resolver
from spider.learn.excluded import drop_excluded, excluded_repos, is_excluded, read_list
from spider.learn.pairs import (
    COMMITS_FILE,
    ISSUES_FILE,
    build_code_text,
    build_issue_pairs,
    clean_query,
    code_text_pairs,
    commit_queries,
    leading_comment,
    read_pair_folder,
    split_python_docstring,
)
from spider.settings import EngineSettings
from spider.source import GitSource
from tests.spider.bench.helpers import commit_files, init_repo
from tests.spider.learn.test_corpus import PATCH
from tests.spider.shop import FILES

POLYGLOT = {
    "lib/cart.rb": """
module Shop
  # Computes the total price of every line in the cart, discounts applied.
  def total(lines)
    lines.sum { |l| l.price * l.quantity }
  end
end
""",
    "src/Cart.php": """<?php
class Cart
{
    /**
     * Removes every item whose quantity dropped to zero.
     *
     * @param array $items the items
     */
    public function prune(array $items): array
    {
        return array_filter($items, fn ($i) => $i->quantity > 0);
    }
}
""",
    "src/cart.js": """
/**
 * Formats an amount of cents as a price string with two decimals.
 * @param {number} cents
 */
function formatCents(cents) {
  return (cents / 100).toFixed(2);
}
""",
    "src/lib.rs": """
/// Parses a quantity from the user's input, rejecting negative numbers.
#[inline]
pub fn parse_quantity(text: &str) -> Option<u32> {
    text.trim().parse().ok()
}
""",
    "shop/tax.py": '''
def vat(amount, rate=0.2):
    """Value added tax owed on an amount at the given rate.

    Args:
        amount: the net amount
    """
    return amount * rate
''',
}


@pytest.fixture(scope="module")
def mirrors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two repositories: acme/shop (allowed) and psf/requests (on the shipped list)."""
    root = tmp_path_factory.mktemp("mirrors")
    shop = {k: v.lstrip("\n") for k, v in {**FILES, **POLYGLOT}.items()}
    commit_files(init_repo(root / "acme+shop"), shop, "shop")
    commit_files(init_repo(root / "psf+requests"), shop, "the same code, an excluded name")
    return root


def test_python_docstring_is_split_from_the_code() -> None:
    doc, body = split_python_docstring(
        '@cache\ndef vat(amount,\n        rate=0.2):\n    """Tax owed."""\n    return amount * rate\n'
    )
    assert doc == "Tax owed."
    assert "Tax owed" not in body
    assert body == "@cache\ndef vat(amount,\n        rate=0.2):\n    return amount * rate\n"
    assert split_python_docstring("def f():\n    return 1\n") == ("", "def f():\n    return 1\n")


def test_leading_comment_steps_over_attributes_and_strips_markers() -> None:
    lines = POLYGLOT["src/lib.rs"].lstrip("\n").split("\n")
    assert leading_comment(lines, 3, "rust") == (
        "Parses a quantity from the user's input, rejecting negative numbers."
    )
    assert leading_comment(["x = 1", "def f():"], 2, "python") == ""


def test_clean_query_keeps_the_summary_and_drops_tags_and_boilerplate() -> None:
    assert clean_query("Removes every item.\n\n@param array $items the items") == ""  # 3 words
    assert clean_query("Removes every item whose quantity dropped.\n@param array $items") == (
        "Removes every item whose quantity dropped."
    )
    assert clean_query("Copyright 2020 the authors of this file") == ""
    assert clean_query("Null-safe {@code cls.getName()} of a <b>class</b> object") == (
        "Null-safe cls.getName() of a class object"
    )


def test_code_text_pairs_describe_functions_without_their_docstrings(mirrors: Path) -> None:
    pairs = code_text_pairs(GitSource(mirrors / "acme+shop", "HEAD"), "acme/shop", EngineSettings())
    by_query = {p.query: p for p in pairs}
    expected = {
        "Computes the total price of every line in the cart, discounts applied.": "total",
        "Removes every item whose quantity dropped to zero.": "prune",
        "Formats an amount of cents as a price string with two decimals.": "formatCents",
        "Parses a quantity from the user's input, rejecting negative numbers.": "parse_quantity",
        "Value added tax owed on an amount at the given rate.": "vat",
        "Add quantity of sku; negative quantities must be rejected.": "add_item",
    }
    assert set(expected) <= set(by_query)
    for query, name in expected.items():
        pair = by_query[query]
        assert name in pair.positive
        assert query not in pair.positive  # the document is the code without its description
        assert pair.repo == "acme/shop" and pair.kind == "code-text"
    vat = by_query["Value added tax owed on an amount at the given rate."]
    assert vat.positive.startswith("shop/tax.py\nvat\n")
    assert '"""' not in vat.positive and "return amount * rate" in vat.positive
    cart = by_query["Add quantity of sku; negative quantities must be rejected."]
    assert cart.negatives and all(n.startswith("shop/cart.py\n") for n in cart.negatives)
    assert cart.positive not in cart.negatives


def test_exclusion_list_is_shipped_and_refuses_benchmark_repositories(tmp_path: Path) -> None:
    banned = excluded_repos()
    for repo in ("psf/requests", "Django/Django", "sympy/sympy", "laravel/framework"):
        assert is_excluded(repo, banned)
    assert not is_excluded("acme/shop", banned)
    extra = tmp_path / "more.txt"
    extra.write_text("# ours\nAcme/Shop\n")
    assert is_excluded("acme/shop", excluded_repos([extra]))
    kept, dropped = drop_excluded(["a/b", "psf/requests", "PSF/requests"], lambda r: r, banned)
    assert kept == ["a/b"] and dropped == {"psf/requests": 2}
    extra.write_text("not-a-repo\n")
    with pytest.raises(InputError, match="owner/name"):
        read_list(extra)


def test_builders_drop_excluded_repositories_and_say_how_many(
    mirrors: Path, tmp_path: Path
) -> None:
    out = tmp_path / "pairs"
    template = str(mirrors / "{owner}+{name}")
    code = build_code_text(
        ["acme/shop", "psf/requests"],
        lambda r: template.format(owner=r.split("/")[0], name=r.split("/")[1]),
        EngineSettings(),
        out,
        excluded_repos(),
    )
    assert code["excluded"] == {"psf/requests": 1}
    assert set(code["by_repo"]) == {"acme/shop"}
    sha = commit_files(mirrors / "acme+shop", {"README.md": "shop\n"}, "docs")
    rows = [
        Instance(
            "acme__shop-1",
            "acme/shop",
            sha,
            "Cart accepts a negative quantity\nadd_item should reject quantities below zero",
            patch=PATCH,
        ),
        Instance(
            "psf__requests-1", "psf/requests", sha, "Cart accepts negative\nsame", patch=PATCH
        ),
    ]
    issues = build_issue_pairs(
        rows, template_resolver(template), EngineSettings(), out, excluded_repos()
    )
    assert issues["excluded"] == {"psf/requests": 1}
    lines = [json.loads(x) for x in (out / ISSUES_FILE).read_text().splitlines()]
    assert {r["repo"] for r in lines} == {"acme/shop"}
    (pair,) = lines
    assert pair["positive"].startswith("shop/cart.py\nCart.add_item\n")
    assert pair["negatives"] and pair["positive"] not in pair["negatives"]
    # resumable: a second run adds nothing
    build_issue_pairs(rows, template_resolver(template), EngineSettings(), out, excluded_repos())
    assert len((out / ISSUES_FILE).read_text().splitlines()) == 1
    # a folder written before a repository was listed is refused it on reading
    (out / "code-text" / "psf+requests.jsonl").write_text(
        (out / "code-text" / "acme+shop.jsonl").read_text().replace("acme/shop", "psf/requests")
    )
    read = read_pair_folder(out, excluded_repos())
    assert {p.repo for kind in read.values() for p in kind} == {"acme/shop"}


CHANGELOG = (
    "diff --git a/CHANGES.md b/CHANGES.md\n--- a/CHANGES.md\n+++ b/CHANGES.md\n"
    "@@ -1 +1,3 @@\n # Changes\n+\n+- A negative quantity added to the cart is now refused (#12)\n"
)


def test_mined_commits_give_a_message_and_a_changelog_query(
    mirrors: Path, tmp_path: Path
) -> None:
    out = tmp_path / "pairs"
    sha = commit_files(mirrors / "acme+shop", {"CHANGES.md": "# Changes\n"}, "changes")
    commits = [
        Instance("acme__shop-c1", "acme/shop", sha, "Reject negative quantities", patch=PATCH + CHANGELOG),
        Instance("psf__requests-c1", "psf/requests", sha, "Reject negatives", patch=PATCH + CHANGELOG),
    ]
    queries = commit_queries(commits)
    assert [q.instance_id for q in queries] == [
        "acme__shop-c1",
        "acme__shop-c1#changelog",
        "psf__requests-c1",
        "psf__requests-c1#changelog",
    ]
    assert queries[1].problem_statement == "A negative quantity added to the cart is now refused"
    assert [q.instance_id for q in commit_queries(commits, fragments=False)] == [
        "acme__shop-c1",
        "psf__requests-c1",
    ]
    template = str(mirrors / "{owner}+{name}")
    summary = build_issue_pairs(
        queries, template_resolver(template), EngineSettings(), out, excluded_repos(), kind="commit"
    )
    assert summary["excluded"] == {"psf/requests": 2}
    assert summary["queries"] == 2 and not (out / ISSUES_FILE).exists()
    rows = [json.loads(x) for x in (out / COMMITS_FILE).read_text().splitlines()]
    assert {r["kind"] for r in rows} == {"commit"}
    assert all(r["positive"].startswith("shop/cart.py\nCart.add_item\n") for r in rows)
    read = read_pair_folder(out, excluded_repos())
    assert len(read["commit"]) == 2 and read["issue"] == [] and read["code-text"] == []


def test_run_writes_the_pairs_and_the_summary_and_the_command_prints_them(
    mirrors: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pairs.run(config)` without the command, then `spider train pairs` through it."""
    from typer.testing import CliRunner

    from spider.cli import app
    from spider.learn.pairs import SUMMARY_FILE, PairsRun, run

    template = str(mirrors / "{owner}+{name}")
    out = tmp_path / "pairs"
    config = PairsRun(
        template, out, "spider train pairs ...", EngineSettings(),
        code_repos=("acme/shop", "psf/requests"),
    )  # fmt: skip
    fit = run(config)
    assert fit.summary["command"] == "spider train pairs ..."
    assert fit.excluded() == {"code-text": {"psf/requests": 1}}
    assert json.loads((out / SUMMARY_FILE).read_text()) == fit.summary
    assert set(fit.summary["code-text"]["by_repo"]) == {"acme/shop"}
    monkeypatch.setenv("SPIDER_CACHE_DIR", str(tmp_path / "cache"))
    args = ["train", "pairs", "-r", template, "-o", str(tmp_path / "cli"), "--no-progress"]
    res = CliRunner().invoke(app, [*args, "--code-repos", "acme/shop,psf/requests"])
    assert res.exit_code == 0, res.output
    assert "code-text: dropped 1 from excluded repositories: psf/requests" in res.output
    summary = json.loads((tmp_path / "cli" / SUMMARY_FILE).read_text())
    assert summary["command"].startswith("spider train") and "code-text" in summary
