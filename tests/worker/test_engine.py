"""The worker's use of the engine: every job of a process reaches the same functions."""

from __future__ import annotations

import importlib
import pkgutil

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
