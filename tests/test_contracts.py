"""The engine's door, as code: the facade's names resolve, importing it is cheap, and the
import-linter contract that keeps the app out of the engine lists every module behind it."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import spider

ROOT = Path(__file__).resolve().parents[1]
SURFACE = {"models", "settings", "errors", "comment"}  # what the app may import beside `spider`
DOOR_CONTRACT = "the app reaches the engine through its door only"


def _contract(name: str) -> dict:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for contract in data["tool"]["importlinter"]["contracts"]:
        if contract["name"] == name:
            return contract
    raise AssertionError(f"no import-linter contract named {name!r}")


def test_every_module_behind_the_door_is_forbidden_to_the_app() -> None:
    engine = {m.name for m in pkgutil.iter_modules(spider.__path__)}
    forbidden = {m.removeprefix("spider.") for m in _contract(DOOR_CONTRACT)["forbidden_modules"]}
    assert engine >= SURFACE
    assert forbidden == engine - SURFACE, (
        "a new engine module must be added to the door contract in pyproject.toml "
        "(or, if the app really needs it, to the surface, with a reason)"
    )
    assert set(_contract(DOOR_CONTRACT)["source_modules"]) == {"bot", "worker", "contract"}


def test_the_facade_lists_what_it_resolves() -> None:
    assert sorted(spider._LAZY) == sorted(spider.__all__)
    for name in spider.__all__:
        assert getattr(spider, name) is not None
    try:
        spider.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


def _python_prints(code: str) -> str:
    """What a fresh interpreter prints running ``code`` from the repository root."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return out.stdout.strip()


def test_importing_the_facade_loads_nothing_heavy() -> None:
    code = (
        "import sys, spider; "
        "heavy = [m for m in ('torch', 'tree_sitter', 'sentence_transformers', 'numpy') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    assert _python_prints(code) == ""


def test_no_engine_module_shadows_a_facade_name() -> None:
    """Importing ``spider.x`` binds the module to ``spider.x``: a facade name equal to a
    module's would turn into that module after its first use (a worker's second job would
    call a module)."""
    engine = {m.name for m in pkgutil.iter_modules(spider.__path__)}
    assert not set(spider.__all__) & engine


def test_facade_names_stay_what_they_are_after_every_module_is_imported() -> None:
    code = (
        "import importlib, pkgutil, spider\n"
        "first = {n: getattr(spider, n) for n in spider.__all__}\n"
        "for m in pkgutil.iter_modules(spider.__path__):\n"
        "    importlib.import_module('spider.' + m.name)\n"
        "changed = [n for n in spider.__all__ if getattr(spider, n) is not first[n]]\n"
        "print(','.join(changed))\n"
    )
    assert _python_prints(code) == ""
