"""Patch -> ground-truth functions, on diffs git makes from small repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from spider.patch import (
    old_side,
    parse_patch,
    patch_ground_truth,
    patch_paths,
)
from tests.spider.bench.helpers import commit_files, git, graph_from_files, init_repo

BASE = """\
import os


def alpha(x):
    y = x + 1
    return y


class Box:
    size = 1

    def grow(self):
        self.size += 1
        return self.size

    def shrink(self):
        def helper():
            return 1
        self.size -= helper()
        return self.size


def beta():
    return 2


def gamma():
    return 3
"""
LINES = BASE.splitlines()


def _edit(
    lines: list[str],
    *,
    replace: dict[int, str] | None = None,
    delete: set[int] | None = None,
    insert: dict[int, list[str]] | None = None,
) -> str:
    """Edit 1-based old lines: replace, delete, or insert after line n (0 = top)."""
    out: list[str] = list(insert.get(0, [])) if insert else []
    for n, text in enumerate(lines, start=1):
        if delete and n in delete:
            pass
        else:
            out.append(replace.get(n, text) if replace else text)
        if insert and n in insert:
            out.extend(insert[n])
    return "\n".join(out) + "\n"


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    r = init_repo(tmp_path / "repo")
    commit_files(r, {"pkg/m.py": BASE, "pkg/other.py": "def solo():\n    return 0\n"}, "base")
    return r


def _diff(repo: Path, files: dict[str, str | None]) -> str:
    """The diff of ``files`` against the base commit (each call starts from the base)."""
    base = git(repo, "rev-list", "--max-parents=0", "HEAD")
    git(repo, "reset", "-q", "--hard", base)
    commit_files(repo, files, "change")
    return git(repo, "diff", "-M", "--no-color", base, "HEAD") + "\n"


def _graph() -> object:
    return graph_from_files({"pkg/m.py": BASE, "pkg/other.py": "def solo():\n    return 0\n"})


def _gt(patch: str, mode: str = "precise") -> list[str]:
    read_old = lambda ps: {p: BASE for p in ps if p == "pkg/m.py"}  # noqa: E731
    return patch_ground_truth(patch, _graph(), mode, read_old=read_old)  # type: ignore[arg-type]


def test_changed_line_belongs_to_its_function(repo: Path) -> None:
    patch = _diff(repo, {"pkg/m.py": _edit(LINES, replace={5: "    y = x + 2"})})
    assert _gt(patch) == ["pkg/m.py:alpha"]
    assert _gt(patch, "dataset") == ["pkg/m.py:alpha"]


def test_deleted_line_and_context_rule(repo: Path) -> None:
    patch = _diff(repo, {"pkg/m.py": _edit(LINES, delete={13})})
    assert _gt(patch) == ["pkg/m.py:Box.grow"]
    # the dataset's rule also counts shrink: its def line is a context line of the hunk
    assert _gt(patch, "dataset") == ["pkg/m.py:Box.grow", "pkg/m.py:Box.shrink"]


def test_insertion_between_functions_is_nobodys(repo: Path) -> None:
    new = ["def delta():", "    return 4", "", ""]
    patch = _diff(repo, {"pkg/m.py": _edit(LINES, insert={25: new})})
    assert _gt(patch) == []
    assert _gt(patch, "dataset") == ["pkg/m.py:beta", "pkg/m.py:gamma"]


def test_insertion_inside_function_and_nested_function(repo: Path) -> None:
    patch = _diff(repo, {"pkg/m.py": _edit(LINES, insert={18: ["        # note"]})})
    assert _gt(patch) == ["pkg/m.py:Box.shrink"]  # between helper's end and the next line
    patch2 = _diff(repo, {"pkg/m.py": _edit(LINES, insert={17: ["            x = 0"]})})
    # nested function: the enclosing function's name is dropped, the class kept
    assert _gt(patch2) == ["pkg/m.py:Box.helper"]


def test_python_lines_appended_after_a_functions_last_line(repo: Path) -> None:
    patch = _diff(repo, {"pkg/m.py": _edit(LINES, insert={24: ["    print('x')"]})})
    assert _gt(patch) == ["pkg/m.py:beta"]
    # without the old text the indentation cannot be judged: the strict rule alone
    strict = patch_ground_truth(patch, _graph(), "precise")  # type: ignore[arg-type]
    assert strict == []
    # a dedented append is new module-level code
    patch2 = _diff(repo, {"pkg/m.py": _edit(LINES, insert={20: ["", "X = 1"]})})
    assert _gt(patch2) == []


def test_renamed_file_uses_old_path(repo: Path) -> None:
    moved = _edit(LINES, replace={28: "    return 33"})
    patch = _diff(repo, {"pkg/m.py": None, "pkg/n.py": moved})
    files = parse_patch(patch)
    assert [(f.old_path, f.new_path) for f in files] == [("pkg/m.py", "pkg/n.py")]
    assert _gt(patch) == ["pkg/m.py:gamma"]


def test_deleted_and_added_files(repo: Path) -> None:
    patch = _diff(repo, {"pkg/other.py": None, "pkg/new.py": "def fresh():\n    pass\n"})
    assert patch_paths(patch) == ["pkg/other.py"]
    assert _gt(patch) == ["pkg/other.py:solo"]


def test_several_hunks_and_files(repo: Path) -> None:
    text = _edit(LINES, replace={5: "    y = 0", 28: "    return 0"})
    patch = _diff(repo, {"pkg/m.py": text, "pkg/other.py": "def solo():\n    return 1\n"})
    assert _gt(patch) == ["pkg/m.py:alpha", "pkg/m.py:gamma", "pkg/other.py:solo"]


def test_old_side_of_a_zero_context_hunk() -> None:
    patch = (
        "diff --git a/f.py b/f.py\n--- a/f.py\n+++ b/f.py\n"
        "@@ -3,0 +4,2 @@\n+a\n+b\n"
        "@@ -7 +9 @@\n-old\n+new\n"
        "\\ No newline at end of file\n"
    )
    (fp,) = parse_patch(patch)
    side = old_side(fp)
    assert side.changed == {7}
    assert [(i.before, i.lines) for i in side.insertions] == [(3, ("a", "b")), (7, ("new",))]
    assert side.ranges == [(7, 7)]


def test_removed_line_that_looks_like_a_header_stays_in_the_hunk() -> None:
    patch = (
        "diff --git a/f.py b/f.py\n--- a/f.py\n+++ b/f.py\n"
        "@@ -1,2 +1,1 @@\n--- not a header\n keep\n"
    )
    (fp,) = parse_patch(patch)
    assert fp.hunks[0].lines == [("-", "-- not a header"), (" ", "keep")]
    assert fp.old_path == "f.py"


def test_shifted_hunk_is_aligned_by_its_content(repo: Path) -> None:
    patch = _diff(repo, {"pkg/m.py": _edit(LINES, replace={28: "    return 33"})})
    # the same fix diffed against a file with 4 fewer lines above: headers say 21, not 25
    shifted = patch.replace("@@ -25,4 +25,4 @@", "@@ -21,4 +21,4 @@")
    assert shifted != patch
    assert _gt(shifted) == ["pkg/m.py:gamma"]  # aligned on the old lines, as patch(1) would
    strict = patch_ground_truth(shifted, _graph(), "precise")  # type: ignore[arg-type]
    assert strict == ["pkg/m.py:beta"]  # without the old text: the header's line numbers


def test_a_patch_stripped_of_its_trailing_blank_context_still_parses() -> None:
    full = "--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n-a = 1\n+a = 2\n \n \n"
    (fp,) = parse_patch(full.rstrip())
    assert fp.hunks[0].lines == [("-", "a = 1"), ("+", "a = 2"), (" ", ""), (" ", "")]
    assert old_side(fp).ranges == [(1, 3)]


def test_a_broken_hunk_is_an_input_error() -> None:
    from spider.errors import InputError

    with pytest.raises(InputError, match="not a unified diff"):
        parse_patch("--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n-a = 1\nnot a diff line\n")
