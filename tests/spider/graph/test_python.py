"""Python: ids, decorated spans, nested functions, duplicates, scope preference, caps."""

from __future__ import annotations

import pytest

from spider.graph import CodeGraph
from spider.ids import dataset_id

from .conftest import build_fixture, definitions, edges


@pytest.fixture(scope="module")
def cg() -> CodeGraph:
    return build_fixture("python")


DEFINITIONS = {
    "app/broken.py:ok_before": ("function", 1, 2),
    "app/broken.py:broken": ("function", 5, 6),  # the syntax error is recovered around
    "app/broken.py:ok_after": ("function", 9, 10),
    "app/helpers.py:slugify": ("function", 4, 5),
    "app/helpers.py:clean": ("function", 8, 9),
    "app/helpers.py:compat": ("function", 13, 14),
    "app/helpers.py:compat#2": ("function", 16, 17),  # same name under if/else
    "app/helpers.py:use_compat": ("function", 20, 21),
    "app/jobs/a.py:run": ("function", 1, 2),
    "app/jobs/b.py:run": ("function", 1, 2),
    "app/jobs/c.py:run": ("function", 1, 2),
    "app/jobs/d.py:run": ("function", 1, 2),
    "app/jobs/runner.py:go": ("function", 1, 2),
    "app/models.py:Base": ("class", 8, 13),
    "app/models.py:Base.save": ("function", 9, 10),
    "app/models.py:Base.validate": ("function", 12, 13),
    "app/models.py:Model": ("class", 16, 37),  # starts at its decorator
    "app/models.py:Model.name": ("function", 18, 20),  # @property line
    "app/models.py:Model.name#2": ("function", 22, 24),  # the setter
    "app/models.py:Model.validate": ("function", 26, 33),
    "app/models.py:Model.validate.check": ("function", 27, 28),
    "app/models.py:Model.validate.normalize": ("function", 30, 31),
    "app/models.py:Model.Meta": ("class", 35, 37),
    "app/models.py:Model.Meta.label": ("function", 36, 37),
    "app/models.py:build": ("function", 40, 43),
    "app/tasks/main.py:main": ("function", 1, 4),
    "app/tasks/x.py:step": ("function", 1, 2),
    "app/tasks/y.py:step": ("function", 1, 2),
    "app/tasks/y.py:compute": ("function", 5, 6),
    "app/tasks/y.py:Queue": ("class", 9, 11),
    "app/tasks/y.py:Queue.append": ("function", 10, 11),
}

INVOKES = {
    ("app/broken.py:ok_after", "app/broken.py:ok_before"),
    ("app/helpers.py:slugify", "app/helpers.py:clean"),
    # same file, two definitions of one name (<= invokes_max_candidates): both linked
    ("app/helpers.py:use_compat", "app/helpers.py:compat"),
    ("app/helpers.py:use_compat", "app/helpers.py:compat#2"),
    # nowhere near: the unique definition in the repository
    ("app/helpers.py:use_compat", "app/tasks/y.py:compute"),
    # self.validate() in Base prefers Base's own method over Model.validate
    ("app/models.py:Base.save", "app/models.py:Base.validate"),
    # make_slug is `from .helpers import slugify as make_slug`
    ("app/models.py:Model.name", "app/helpers.py:slugify"),
    # helpers.clean() through `from . import helpers`
    ("app/models.py:Model.name#2", "app/helpers.py:clean"),
    # super().validate() goes to the base class
    ("app/models.py:Model.validate", "app/models.py:Base.validate"),
    ("app/models.py:Model.validate", "app/models.py:Model.validate.check"),
    # a nested function calls its sibling
    ("app/models.py:Model.validate.check", "app/models.py:Model.validate.normalize"),
    # m.save() on an unknown object: the only `save` method in the file
    ("app/models.py:build", "app/models.py:Base.save"),
    # the same directory holds two `step`s: both linked
    ("app/tasks/main.py:main", "app/tasks/x.py:step"),
    ("app/tasks/main.py:main", "app/tasks/y.py:step"),
    # app/jobs holds four `run`s (> 3): runner.go links none
    # items.append(1) on a list is not linked to Queue.append, the repository's only append
}

IMPORTS = {
    ("app/__init__.py", "app/models.py"),
    ("app/__init__.py", "app/models.py:Model"),
    ("app/models.py", "app/helpers.py"),
    ("app/models.py", "app/helpers.py:slugify"),
}


def test_definitions_ids_and_line_ranges(cg: CodeGraph) -> None:
    assert definitions(cg) == DEFINITIONS


def test_invokes_scope_preference_and_ambiguity_cap(cg: CodeGraph) -> None:
    assert edges(cg, "invokes") == INVOKES


def test_imports_and_inherits(cg: CodeGraph) -> None:
    assert edges(cg, "imports") == IMPORTS
    assert edges(cg, "inherits") == {("app/models.py:Model", "app/models.py:Base")}


def test_contains_tree(cg: CodeGraph) -> None:
    contains = edges(cg, "contains")
    assert {
        (".", "app"),
        ("app", "app/jobs"),
        ("app", "app/models.py"),
        ("app/jobs", "app/jobs/runner.py"),
        ("app/models.py", "app/models.py:Model"),
        ("app/models.py:Model", "app/models.py:Model.name#2"),
        ("app/models.py:Model", "app/models.py:Model.Meta"),
        ("app/models.py:Model.Meta", "app/models.py:Model.Meta.label"),
        ("app/models.py:Model.validate", "app/models.py:Model.validate.check"),
    } <= contains
    # every node but the root has exactly one container
    for node in cg.g.nodes:
        parents = [u for u, _, k in cg.g.in_edges(node, keys=True) if k == "contains"]
        assert len(parents) == (0 if node == "." else 1), node


def test_attributes(cg: CodeGraph) -> None:
    info = cg.node("app/models.py:Model.validate.check")
    assert (info.kind, info.path, info.name, info.language) == (
        "function",
        "app/models.py",
        "Model.validate.check",
        "python",
    )
    assert info.text == "def check(v):\n            return normalize(v)"
    assert cg.node("app/models.py:Model.name").text.startswith("@property\n")
    f = cg.node("app/models.py")
    assert (f.kind, f.start_line, f.end_line, f.language) == ("file", 1, 43, "python")
    assert cg.node("app/jobs").kind == "directory"


def test_tests_are_excluded_and_counted(cg: CodeGraph) -> None:
    assert "app/tests/test_models.py" not in cg.g
    assert cg.stats.parsed == {"python": 12}
    assert cg.stats.skipped == {"tests": 1}


def test_max_candidates_setting() -> None:
    strict = edges(build_fixture("python", invokes_max_candidates=1), "invokes")
    assert ("app/helpers.py:use_compat", "app/helpers.py:compat") not in strict
    assert ("app/tasks/main.py:main", "app/tasks/x.py:step") not in strict
    loose = edges(build_fixture("python", invokes_max_candidates=4), "invokes")
    assert {("app/jobs/runner.py:go", f"app/jobs/{x}.py:run") for x in "abcd"} <= loose


def test_ids_map_to_the_benchmark_convention(cg: CodeGraph) -> None:
    # spider.ids drops enclosing functions and #n, as the dataset does
    assert dataset_id(cg, "app/models.py:Model.validate.check") == "app/models.py:Model.check"
    assert dataset_id(cg, "app/models.py:Model.name#2") == "app/models.py:Model.name"
    assert dataset_id(cg, "app/models.py:Model.Meta.label") == "app/models.py:Model.Meta.label"
