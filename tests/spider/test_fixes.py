"""spider.fixes: what a merged fix edited at its base commit, and where listed functions went."""

from __future__ import annotations

import subprocess
from pathlib import Path

from spider.fixes import FixMatch, body_hash, fix_paths, match_fix
from spider.settings import EngineSettings
from spider.source import GitSource

BEFORE = '''def price(sku):
    table = {"apple": 3}
    return table.get(sku, 0)


def total(items):
    return sum(price(s) for s in items)
'''
# The comment's commit: `price` was then `cost` (renamed since, same body).
LISTED_AT = BEFORE.replace("def price(sku)", "def cost(sku)").replace("price(s)", "cost(s)")

PATCH = '''diff --git a/shop.py b/shop.py
--- a/shop.py
+++ b/shop.py
@@ -1,3 +1,3 @@
 def price(sku):
     table = {"apple": 3}
-    return table.get(sku, 0)
+    return table.get(sku.lower(), 0)
'''


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def _commit(repo: Path, text: str, message: str) -> str:
    (repo / "shop.py").write_text(text)
    _git(repo, "add", "shop.py")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return _git(repo, "rev-parse", "HEAD")


def test_a_fix_names_the_function_it_edits_and_finds_a_renamed_listed_one(tmp_path: Path,
                                                                         ) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    listed_sha = _commit(repo, LISTED_AT, "the commit the comment listed")
    base_sha = _commit(repo, BEFORE, "rename cost to price")
    settings = EngineSettings(cache_dir=tmp_path / "cache")
    match = match_fix(GitSource(repo, base_sha), PATCH, ["shop.py:cost", "shop.py:total"],
                      settings, listed_at=GitSource(repo, listed_sha))
    assert match == FixMatch(changed=["shop.py:price"], moved={"shop.py:cost": "shop.py:price"})
    # without the listing's commit the gone id cannot be followed
    alone = match_fix(GitSource(repo, base_sha), PATCH, ["shop.py:cost"], settings)
    assert alone == FixMatch(changed=["shop.py:price"], moved={})


def test_a_patch_without_source_edits_matches_nothing(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    sha = _commit(repo, BEFORE, "base")
    docs = PATCH.replace("shop.py", "README.md")
    settings = EngineSettings(cache_dir=tmp_path / "cache")
    assert match_fix(GitSource(repo, sha), docs, ["shop.py:price"], settings) == FixMatch()
    assert match_fix(GitSource(repo, sha), "", ["shop.py:price"], settings) == FixMatch()


def test_fix_paths_and_body_hash() -> None:
    assert fix_paths(PATCH) == ["shop.py"]
    assert fix_paths("") == []
    assert fix_paths("not a diff at all") == []
    a = "def f(x):\n    return x + 1\n"
    b = "    @staticmethod\n    def g(x):\n        return x + 1\n"
    assert body_hash(a) == body_hash(b)  # renamed and moved into a class: same body
    assert body_hash(a) != body_hash("def f(x):\n    return x + 2\n")
