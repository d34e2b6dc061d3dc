"""Method specs: the table, name:key=value overrides, errors."""

from __future__ import annotations

import pytest

from spider.bench.methods import METHODS, parse_methods
from spider.errors import InputError
from spider.settings import EngineSettings


def test_table_maps_to_settings() -> None:
    base = EngineSettings()
    got = {m.name: m.settings(base) for m in parse_methods(",".join(METHODS))}
    assert (got["bm25"].first_stage, got["bm25"].selector) == ("bm25", "none")
    assert (got["hybrid"].first_stage, got["hybrid"].selector) == ("hybrid", "none")
    assert got["spider-contains"].edges == ("contains",)
    assert got["spider-invokes"].edges == ("invokes",)
    assert got["spider-both"].edges == ("contains", "invokes")
    assert got["spider-both"].selector == "offline"
    assert got["default"] == base
    assert [m.uses_oracle for m in parse_methods("oracle,dense")] == [True, False]


def test_overrides_continue_the_previous_method() -> None:
    ms = parse_methods("dense, spider-both:depth=2,centres=3,edges=contains+invokes, bm25")
    assert [m.name for m in ms] == [
        "dense", "spider-both:depth=2,centres=3,edges=contains+invokes", "bm25",
    ]  # fmt: skip
    s = ms[1].settings(EngineSettings())
    assert (s.depth, s.centres, s.edges) == (2, 3, ("contains", "invokes"))


@pytest.mark.parametrize(
    "spec", ["nope", "dense:colour=red", "dense:depth=99", "depth=2", "", "bm25,bm25"]
)
def test_bad_specs(spec: str) -> None:
    with pytest.raises(InputError):
        parse_methods(spec)


@pytest.mark.parametrize("override", ["history_commits=0", "encoder=onnx", "exclude=docs/*"])
def test_settings_the_shared_index_reads_are_refused_per_method(override: str) -> None:
    key = override.partition("=")[0]
    with pytest.raises(InputError, match=f"SPIDER_{key.upper()} for the whole run"):
        parse_methods(f"default,cold:{override}")
    assert parse_methods("cold:cold_pool=300")[0].overrides == {"cold_pool": 300}
