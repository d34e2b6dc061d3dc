"""Fixtures the fitting tests share."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spider.bench.helpers import commit_files, init_repo
from tests.spider.shop import FILES


@pytest.fixture(scope="module")
def shop_mirror(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The shop committed once in ``MIRRORS/acme+shop`` (a resolver template's layout):
    the repository's folder and the commit."""
    root = init_repo(tmp_path_factory.mktemp("mirrors") / "acme+shop")
    return root, commit_files(root, {k: v.lstrip("\n") for k, v in FILES.items()}, "shop")
