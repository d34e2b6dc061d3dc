"""The ``spider`` command as a user runs it: a real process on a small repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.spider.shop import FILES as SHOP

REPO_FILES = {
    "shop/cart.py": '''
from shop.pricing import apply_discount


class Cart:
    """A shopping cart."""

    def __init__(self):
        self.items = []

    def add_item(self, sku, quantity):
        """Add quantity of sku; negative quantities must be rejected."""
        self.items.append((sku, quantity))

    def total(self):
        subtotal = sum(price_of(sku) * q for sku, q in self.items)
        return apply_discount(subtotal)


def price_of(sku):
    return {"apple": 3, "pear": 4}.get(sku, 0)
''',
    "shop/pricing.py": SHOP["shop/pricing.py"],
    "shop/__init__.py": "",
    "tests/test_cart.py": "def test_cart():\n    assert True\n",
    "README.md": "# shop\n",
}
ISSUE = "Cart.add_item accepts negative quantities\n\nAdding -3 apples makes the total negative."


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shop")
    for rel, text in REPO_FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text.lstrip("\n"))
    return root


def _spider(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPIDER_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "spider.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_locate_json_has_k_hits_with_reasons(repo: Path, tmp_path: Path) -> None:
    out = _spider("locate", str(repo), "--issue", ISSUE, "--k", "3", "--json", cache=tmp_path)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["commit"] is None
    hits = data["hits"]
    assert len(hits) == 3
    assert hits[0]["id"] == "shop/cart.py:Cart.add_item"
    assert hits[0]["start_line"] == 10 and hits[0]["end_line"] == 12
    assert all(h["reasons"] and h["reasons"][0]["text"] for h in hits)
    assert not any(h["path"].startswith("tests/") for h in hits)  # tests excluded by default


def test_locate_returns_all_functions_when_repo_is_smaller_than_k(
    repo: Path, tmp_path: Path
) -> None:
    out = _spider("locate", str(repo), "--issue", ISSUE, "--k", "50", "--json", cache=tmp_path)
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout)["hits"]) == 6  # every non-test function


def test_index_prints_counts(repo: Path, tmp_path: Path) -> None:
    out = _spider("index", str(repo), "--json", cache=tmp_path)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["nodes"]["function"] == 6 and data["nodes"]["class"] == 1
    assert data["parsed"] == {"python": 3}
    assert data["edges"]["invokes"] >= 2  # total -> price_of, total -> apply_discount
    again = json.loads(_spider("index", str(repo), "--json", cache=tmp_path).stdout)
    assert again["embedded"] == 0 and again["embed_cached"] == 6


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["locate", "/nonexistent/repo", "--issue", "x"], "does not exist"),
        (["locate", "README.md", "--issue", "x"], "not a directory"),
        (["locate", "{repo}", "--issue", "   "], "empty"),
        (["locate", "{repo}"], "exactly one of --issue"),
        (["locate", "{repo}/tests", "--issue", "bug"], "no supported source"),
        (["locate", "{repo}", "--issue", "x", "--edges", "sideways"], "edge"),
    ],
)
def test_clear_one_line_errors(repo: Path, tmp_path: Path, args: list[str], message: str) -> None:
    argv = [a.replace("{repo}", str(repo)) for a in args]
    if argv[1] == "README.md":
        argv[1] = str(repo / "README.md")
    out = _spider(*argv, cache=tmp_path)
    assert out.returncode != 0
    assert message in out.stderr.lower()
    assert "Traceback" not in out.stderr


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_locate_markdown_prints_the_apps_comment(repo: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["cp", "-r", str(repo), str(clone)], check=True)
    _git(clone, "init", "-q", "-b", "trunk")
    _git(clone, "add", "-A")
    _git(clone, "commit", "-q", "-m", "shop")
    _git(clone, "remote", "add", "origin", "git@github.com:acme/shop.git")
    sha = _git(clone, "rev-parse", "HEAD")
    out = _spider("locate", str(clone), "--issue", ISSUE, "--k", "3", "--format", "markdown",
                  cache=tmp_path / "cache")
    assert out.returncode == 0, out.stderr
    body = out.stdout
    assert body.startswith("<!-- spider-bot:localization -->\n")
    assert f"(https://github.com/acme/shop/blob/{sha}/shop/cart.py#L10-L12)" in body
    assert "1. [`Cart.add_item`]" in body and "(head of `trunk`)" in body
    assert "`Cart.add_item` is named in the issue" in body
    assert "- Method: " in body and "</details>" in body

    # the same comment the app renders from the same localization
    data = json.loads(_spider("locate", str(clone), "--issue", ISSUE, "--k", "3", "--json",
                              cache=tmp_path / "cache").stdout)
    assert data["hits"][0]["id"] == "shop/cart.py:Cart.add_item"

    # no GitHub remote: a clear error naming the way out
    _git(clone, "remote", "set-url", "origin", "https://example.com/acme/shop.git")
    out = _spider("locate", str(clone), "--issue", ISSUE, "--format", "markdown",
                  cache=tmp_path / "cache")
    assert out.returncode == 2 and "--repo-url" in out.stderr and "Traceback" not in out.stderr
    out = _spider("locate", str(clone), "--issue", ISSUE, "--format", "markdown", "--repo-url",
                  "https://github.com/acme/shop", cache=tmp_path / "cache")
    assert out.returncode == 0 and "https://github.com/acme/shop/blob/" in out.stdout


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("git@github.com:acme/shop.git", "https://github.com/acme/shop"),
        ("https://github.com/acme/shop", "https://github.com/acme/shop"),
        ("https://x-access-token:abc@github.com/acme/shop.git", "https://github.com/acme/shop"),
        ("ssh://git@github.com/acme/shop.git", "https://github.com/acme/shop"),
        ("https://gitlab.com/acme/shop.git", None),
        ("/srv/git/shop.git", None),
    ],
)
def test_github_url_from_a_remote(url: str, expected: str | None) -> None:
    from spider.remote import github_url

    assert github_url(url) == expected
