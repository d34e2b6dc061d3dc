"""The engine's settings by concern: every field in exactly one concern, the index's group
derived from its classes and covering every setting an index reads, the flat ``SPIDER_*``
names unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from spider.index import build_index, load_or_build_graph
from spider.settings import (
    CONCERNS,
    GRAPH_SETTINGS,
    INDEX_SETTINGS,
    EngineSettings,
    IndexSettings,
    QuerySettings,
    StoreSettings,
    WorkSettings,
)
from spider.source import DirectorySource
from tests.spider.shop import write_shop

READS: set[str] = set()


class Recording(EngineSettings):
    """Settings that note which fields are read."""

    def __getattribute__(self, name: str) -> Any:
        if name in EngineSettings.model_fields:
            READS.add(name)
        return super().__getattribute__(name)


def test_every_field_lies_in_exactly_one_concern() -> None:
    owners: dict[str, list[str]] = {}
    for concern in CONCERNS:
        for name in concern.model_fields:
            owners.setdefault(name, []).append(concern.__name__)
    assert set(owners) == set(EngineSettings.model_fields)
    assert {n: o for n, o in owners.items() if len(o) > 1} == {}
    assert INDEX_SETTINGS.isdisjoint(QuerySettings.model_fields)


def test_an_index_reads_no_setting_outside_its_group(tmp_path: Path) -> None:
    """What the worker's index cache and a benchmark's shared index are keyed by is every
    setting the graph and the index's own methods read (the graph's key leaves out where
    things are kept and how many processes parse: neither changes the graph)."""
    root = write_shop(tmp_path / "shop")
    settings = Recording(cache_dir=tmp_path / "cache", cold_pool=0, history_commits=50)
    READS.clear()
    load_or_build_graph(DirectorySource(root), settings)
    graph_reads = set(READS)
    index = build_index(DirectorySource(root), EngineSettings(cache_dir=tmp_path / "cache",
                                                             cold_pool=0), embed=False)
    index.settings = settings
    READS.clear()
    index.vectors()
    index.lexical()
    index.file_lexical()
    index.name_table()
    index.history()
    assert index.missing_vectors() == 0
    index_reads = set(READS)
    outside_key = set(StoreSettings.model_fields) | set(WorkSettings.model_fields)  # no effect
    assert graph_reads - outside_key <= set(GRAPH_SETTINGS), graph_reads
    assert {"max_file_bytes", "exclude_tests"} <= graph_reads  # the recording sees reads
    assert index_reads <= INDEX_SETTINGS, index_reads - INDEX_SETTINGS
    assert {"cache_dir", "encoder"} <= index_reads


def test_the_index_part_is_the_index_group_alone() -> None:
    full = EngineSettings(k=3, max_file_bytes=1234, history_commits=7)
    part = full.index_part()
    assert type(part) is IndexSettings
    assert set(type(part).model_fields) == INDEX_SETTINGS
    assert (part.max_file_bytes, part.history_commits) == (1234, 7)
    assert full.model_copy(update={"k": 9}).index_part() == part
    assert full.model_copy(update={"max_file_bytes": 99}).index_part() != part


@pytest.mark.parametrize(("variable", "value", "field", "expected"), [
    ("SPIDER_K", "7", "k", 7),                                       # expansion
    ("SPIDER_FUSION_DENSE", "0.5", "fusion_dense", 0.5),             # first stage
    ("SPIDER_RANKER", "head", "ranker", "head"),                     # ranking
    ("SPIDER_COLD_POOL", "300", "cold_pool", 300),                   # cold start
    ("SPIDER_EXCLUDE", "a/**, b", "exclude", ["a/**", "b"]),         # graph
    ("SPIDER_ENCODER", "onnx", "encoder", "onnx"),                   # encoder
    ("SPIDER_HISTORY_COMMITS", "0", "history_commits", 0),           # history
    ("SPIDER_ONNX_DIR", "/x", "onnx_dir", Path("/x")),               # store
    ("SPIDER_ANTHROPIC_MODEL", "m", "anthropic_model", "m"),         # anthropic
    ("SPIDER_LLM_ROLES", "both", "llm_roles", ("select", "read")),   # llm server
    ("SPIDER_EDGES", "invokes", "edges", ("invokes",)),
])
def test_each_concern_reads_its_flat_variable(monkeypatch: pytest.MonkeyPatch, variable: str,
                                               value: str, field: str, expected: object) -> None:
    monkeypatch.setenv(variable, value)
    assert getattr(EngineSettings(), field) == expected


def test_a_bad_value_in_a_concern_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPIDER_LLM_BASE_URL", "ftp://x")
    with pytest.raises(ValidationError, match="llm_base_url 'ftp://x' is not an http"):
        EngineSettings()
