from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from spider.settings import EngineSettings
from worker.index_cache import IndexCache, index_key


@dataclass
class Sized:
    """Stands for an index: only its functions count."""

    n: int
    function_ids: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.function_ids = [f"f{i}" for i in range(self.n)]


def test_the_least_recently_used_index_goes_first() -> None:
    cache = IndexCache(max_functions=10)
    a, b, c = Sized(4), Sized(4), Sized(4)
    cache.put("a", a)
    cache.put("b", b)
    assert cache.get("a") is a  # now b is the least recently used
    cache.put("c", c)
    assert cache.get("b") is None and cache.get("a") is a and cache.get("c") is c
    assert cache.functions == 8


def test_an_index_above_the_bound_is_not_kept() -> None:
    cache = IndexCache(max_functions=10)
    cache.put("big", Sized(11))
    assert len(cache) == 0
    off = IndexCache(max_functions=0)
    assert off.get_or_build("k", lambda: Sized(1)).n == 1 and len(off) == 0


def test_get_or_build_builds_once() -> None:
    cache = IndexCache(max_functions=10)
    built: list[int] = []

    def build() -> Sized:
        built.append(1)
        return Sized(2)

    first = cache.get_or_build("k", build)
    assert cache.get_or_build("k", build) is first and len(built) == 1


def test_the_key_names_commit_index_settings_and_history() -> None:
    s = EngineSettings()
    base = index_key(Path("/m/a.git"), "abc", s, False)
    assert base == index_key(Path("/m/a.git"), "abc", s.model_copy(update={"k": 5}), False)
    assert base != index_key(Path("/m/a.git"), "abd", s, False)
    assert base != index_key(Path("/m/a.git"), "abc", s, True)
    assert base != index_key(Path("/m/a.git"), "abc", s.model_copy(update={"include": ["x/**"]}), False)
