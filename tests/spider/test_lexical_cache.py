"""BM25 indexes persist per commit: a warm start reads them instead of tokenizing again."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from spider.errors import IndexFormatError
from spider.index import build_index
from spider.retrieve.bm25 import LexicalIndex
from spider.settings import EngineSettings
from spider.source import DirectorySource, GitSource
from tests.spider.bench.helpers import commit_files, init_repo
from tests.spider.shop import FILES

QUERIES = ["Cart.add_item accepts a negative quantity", "apply_discount rounds", "price"]


@pytest.fixture()
def repo(tmp_path: Path) -> tuple[Path, str]:
    r = init_repo(tmp_path / "repo")
    return r, commit_files(r, FILES, "base")


def _settings(tmp_path: Path) -> EngineSettings:
    return EngineSettings(cache_dir=tmp_path / "cache", first_stage="bm25")


def _scores(index: LexicalIndex) -> list[np.ndarray]:
    return [index.scores(q) for q in QUERIES]


def test_a_commits_bm25_indexes_are_written_once_and_read_back(
    tmp_path: Path, repo: tuple[Path, str]
) -> None:
    path, sha = repo
    settings = _settings(tmp_path)
    first = build_index(GitSource(path, sha), settings)
    built = (_scores(first.lexical()), _scores(first.file_lexical()))
    folders = sorted(p.name for p in (settings.cache_dir / "lexical").iterdir())
    assert [f.rsplit("-", 1)[1] for f in folders] == ["files", "functions"]
    again = build_index(GitSource(path, sha), settings)
    loaded = (_scores(again.lexical()), _scores(again.file_lexical()))
    assert again._tokens is None  # nothing was tokenized: both indexes came from the cache
    for a, b in zip(built[0] + built[1], loaded[0] + loaded[1], strict=True):
        assert np.array_equal(a, b)
    assert again.lexical().doc_frequency("quantity") == first.lexical().doc_frequency("quantity") > 0


def test_the_file_index_equals_one_built_from_whole_file_texts(
    tmp_path: Path, repo: tuple[Path, str]
) -> None:
    path, sha = repo
    index = build_index(GitSource(path, sha), _settings(tmp_path))
    files, file_of, _ = index._file_index()
    texts = [f"{p} {p.replace('/', ' ')}" for p in files]
    for i, doc in zip(file_of, index.documents(), strict=True):
        texts[i] += "\n" + doc
    direct = LexicalIndex(texts)
    for a, b in zip(_scores(direct), _scores(index.file_lexical()), strict=True):
        assert np.array_equal(a, b)


def test_an_unreadable_cached_index_is_rebuilt(
    tmp_path: Path, repo: tuple[Path, str], caplog: pytest.LogCaptureFixture
) -> None:
    path, sha = repo
    settings = _settings(tmp_path)
    expected = _scores(build_index(GitSource(path, sha), settings).lexical())
    folder = next((settings.cache_dir / "lexical").glob("*-functions"))
    (folder / "params.index.json").write_text("{not json")
    with pytest.raises(IndexFormatError, match="delete it to rebuild"):
        LexicalIndex.load(folder)
    with caplog.at_level(logging.WARNING):
        rebuilt = build_index(GitSource(path, sha), settings)
        got = _scores(rebuilt.lexical())
    assert "rebuilding BM25 index" in caplog.text
    assert all(np.array_equal(a, b) for a, b in zip(expected, got, strict=True))
    assert LexicalIndex.load(folder).size == len(rebuilt.function_ids)  # written afresh


def test_a_working_tree_is_never_cached(tmp_path: Path, repo: tuple[Path, str]) -> None:
    path, _ = repo
    settings = _settings(tmp_path)
    index = build_index(DirectorySource(path), settings)
    assert index.lexical().size == len(index.function_ids) > 0
    assert not (settings.cache_dir / "lexical").exists()
