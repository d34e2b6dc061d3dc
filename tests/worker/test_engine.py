"""The worker's door to the engine."""

from __future__ import annotations

import importlib

from worker.engine import engine_locate


def test_locate_is_the_function_on_every_call() -> None:
    # the first access imports spider.locate, whose import rebinds the package attribute
    # to the module; every later job must still get the function
    first = engine_locate()
    importlib.import_module("spider.locate")
    assert callable(first) and engine_locate() is first and callable(engine_locate())
