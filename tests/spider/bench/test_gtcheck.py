"""Match rate and rule agreement against edit_functions, on a repository the test creates."""

from __future__ import annotations

from pathlib import Path

import pytest

from spider.bench.gtcheck import check_groundtruth, summarise_check
from spider.eval.dataset import Instance
from spider.eval.snapshot import fixed_resolver
from spider.settings import EngineSettings
from tests.spider.bench.helpers import ast_builder, commit_files, git, init_repo

BASE = """\
def first():
    return 1

def second():
    return 2
"""


def test_check_groundtruth(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    base = commit_files(repo, {"p/m.py": BASE, "p/other.py": "def z():\n    pass\n"}, "base")
    commit_files(repo, {"p/m.py": BASE.replace("return 1", "return 11")}, "fix")
    patch = git(repo, "diff", base, "HEAD") + "\n"
    # the dataset's rule also labels `second` (its def is a context line of the hunk)
    good = Instance("a", "o/r", base, "q", ["p/m.py:first", "p/m.py:second"], patch)
    odd = Instance("b", "o/r", base, "q", ["p/m.py:first", "p/m.py:gone"], patch)
    no_patch = Instance("c", "o/r", base, "q", ["p/m.py:first"])
    rows, skipped = check_groundtruth(
        [good, odd, no_patch], fixed_resolver(repo), EngineSettings(), ast_builder
    )
    assert list(skipped) == ["c"]
    assert rows[0]["missing"] == [] and rows[1]["missing"] == ["p/m.py:gone"]
    assert rows[0]["dataset"]["exact"] and not rows[0]["precise"]["exact"]
    assert rows[0]["precise"]["lacking"] == ["p/m.py:second"]
    s = summarise_check(rows)
    assert s["match_rate"] == pytest.approx(3 / 4)
    assert s["instances_fully_matched"] == 1
    assert s["dataset"]["agreement"] == 0.5 and s["precise"]["agreement"] == 0.0
    assert s["precise"]["precision"] == 1.0 and s["precise"]["recall"] == pytest.approx(2 / 4)
    assert s["dataset"]["recall"] == pytest.approx(3 / 4)
    # returning exactly the edited functions finds `first` but never the context-only `second`
    assert s["precise"]["labels_out_of_reach"] == 2
    assert s["precise"]["ceiling_recall"] == pytest.approx((1 / 2 + 1 / 2) / 2)
    assert s["precise"]["ceiling_acc"] == 0.0
    assert s["dataset"]["ceiling_recall"] == pytest.approx((1 + 1 / 2) / 2)
    assert s["dataset"]["ceiling_acc"] == 0.5
