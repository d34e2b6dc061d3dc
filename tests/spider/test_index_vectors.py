"""Index.missing_vectors and complete_vectors: what a first ranking would embed, and
embedding it only within a bound."""

from __future__ import annotations

from pathlib import Path

from spider.index import build_index
from spider.settings import EngineSettings
from spider.source import DirectorySource
from tests.spider.shop import FILES, write_shop


def test_missing_vectors_counts_what_the_cache_lacks_and_embeds_nothing(tmp_path: Path) -> None:
    root = write_shop(tmp_path / "shop")
    settings = EngineSettings(cache_dir=tmp_path / "cache", cold_pool=0)
    cold = build_index(DirectorySource(root), settings, embed=False)
    n = len(cold.function_ids)
    assert n == 7
    assert cold.missing_vectors() == n
    assert cold.encoder().embedded == 0  # counting ran no model
    cold.vectors()
    assert cold.missing_vectors() == 0
    # a new function: a fresh index of the edited tree lacks exactly its vector
    (root / "shop/pricing.py").write_text(
        FILES["shop/pricing.py"].lstrip("\n") + "\n\ndef refund(amount):\n    return -amount\n"
    )
    warm = build_index(DirectorySource(root), settings, embed=False)
    assert len(warm.function_ids) == n + 1
    assert warm.missing_vectors() == 1
    assert warm.encoder().embedded == 0


def test_complete_vectors_embeds_only_within_its_bound(tmp_path: Path) -> None:
    root = write_shop(tmp_path / "shop")
    settings = EngineSettings(cache_dir=tmp_path / "cache", cold_pool=0)
    cold = build_index(DirectorySource(root), settings, embed=False)
    n = len(cold.function_ids)
    # more missing than the bound: nothing embedded, the count kept for the record
    assert cold.complete_vectors(n - 1) is False
    assert cold.encoder().embedded == 0
    assert cold.stats["missing_vectors"] == n
    # within it: the missing ones embedded, and the next index of the commit reads them whole
    assert cold.complete_vectors(n) is True
    assert cold.encoder().embedded == n
    again = build_index(DirectorySource(root), settings, embed=False)
    assert again.complete_vectors(0) is True
    assert again.encoder().embedded == 0
