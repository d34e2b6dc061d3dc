"""A small shop (two files, seven functions) the engine's ranking tests index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spider.index import Index, build_index
from spider.settings import EngineSettings
from spider.source import DirectorySource

FILES = {
    "shop/cart.py": '''
class Cart:
    """A shopping cart."""

    def __init__(self):
        self.items = []

    def add_item(self, sku, quantity):
        """Add quantity of sku; negative quantities must be rejected."""
        self.items.append((sku, quantity))

    def _check(self, quantity):
        return quantity

    def total(self):
        subtotal = 0
        for sku, q in self.items:
            subtotal += price_of(sku) * q
        subtotal = round(subtotal, 2)
        subtotal = max(subtotal, 0)
        return apply_discount(subtotal)


def price_of(sku):
    return {"apple": 3, "pear": 4}.get(sku, 0)
''',
    "shop/pricing.py": '''
def apply_discount(amount):
    """Ten percent off above 100."""
    if amount > 100:
        return amount * 0.9
    return amount


def format_price(amount):
    return f"${amount:.2f}"
''',
}


def write_files(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (path -> text, leading newlines dropped) under ``root``; returns it."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text.lstrip("\n"))
    return root


def write_shop(root: Path) -> Path:
    """Write :data:`FILES` under ``root`` (leading newlines dropped); returns ``root``."""
    return write_files(root, FILES)


def shop_index(tmp_path_factory: pytest.TempPathFactory, **settings: Any) -> Index:
    """The shop's index with a private cache and these engine settings."""
    root = write_shop(tmp_path_factory.mktemp("shop"))
    cache = tmp_path_factory.mktemp("cache")
    return build_index(DirectorySource(root), EngineSettings(cache_dir=cache, **settings))
