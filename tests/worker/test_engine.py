"""The worker's use of the engine: every job of a process reaches the same functions."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import spider
from worker.engine import SpiderEngine


def test_locate_stays_the_function_after_every_engine_module_is_imported() -> None:
    # a facade name that a module of the engine shadowed turned into that module after the
    # first job: the second job in a worker process called a module
    first = spider.locate
    for module in pkgutil.iter_modules(spider.__path__):
        importlib.import_module(f"spider.{module.name}")
    assert callable(first)
    assert spider.locate is first
    assert SpiderEngine.locate.__doc__  # the worker's method calls the facade name


def test_an_index_answered_from_stays_in_memory_for_the_next_job(tmp_path: Path) -> None:
    from spider.settings import EngineSettings
    from tests.spider.bench.helpers import commit_files, init_repo
    from worker.mirror import Checkout

    repo = init_repo(tmp_path / "repo")
    sha = commit_files(repo, {"m.py": "def f(x):\n    return x\n\n\ndef g():\n    return f(1)\n"},
                       "base")
    settings = EngineSettings(cache_dir=tmp_path / "cache", first_stage="bm25")
    engine = SpiderEngine(keep_functions=100)
    first, partial = engine.index_for_issue(Checkout(repo, sha, "main"), settings, embed_max=0)
    again, _ = engine.index_for_issue(Checkout(repo, sha, "main"), settings, embed_max=0)
    assert again is first and not partial and engine.kept.hits == 1
    # read before the history window was fetched: not the index to answer with after it
    pending = Checkout(repo, sha, "main", history_pending=True)
    assert engine.index_for_issue(pending, settings, embed_max=0)[0] is not first
    off = SpiderEngine()  # the default keeps nothing
    assert off.index_for_issue(Checkout(repo, sha, "main"), settings, embed_max=0)[0] is not \
        off.index_for_issue(Checkout(repo, sha, "main"), settings, embed_max=0)[0]
