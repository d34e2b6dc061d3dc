"""The history miner on a small git repository the test creates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spider.bench.history import clean_message, is_fix_message, mine_history
from spider.eval.dataset import read_dataset, write_dataset
from spider.settings import EngineSettings
from tests.spider.bench.helpers import ast_builder, commit_files, git, init_repo

V1 = """\
def parse(text):
    return text.split(",")


def render(items):
    return ";".join(items)


def unused():
    return None
"""


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Fix crash in parse", True),
        ("Handle empty input (#123)", False),  # a squash merge's PR number
        ("Handle empty input, closes #123", True),
        ("Handle empty input (#123)\n\nFixes #120", True),
        ("GH-77: handle empty input", True),
        ("bugfix: off by one", True),
        ("Add a feature", False),
        ("Refactor prefix handling", False),
    ],
)
def test_is_fix_message(message: str, expected: bool) -> None:
    assert is_fix_message(message) is expected


def test_clean_message_drops_trailers_refs_and_hashes() -> None:
    msg = (
        "Fix parse of empty strings (#123)\n\n"
        "Reverts 1a2b3c4d5e and closes owner/repo#9, see GH-4 and\n"
        "https://github.com/o/r/issues/12 for details.\n\n"
        "Signed-off-by: A <a@example.com>\n"
        "Co-authored-by: B <b@example.com>\n"
    )
    assert clean_message(msg) == (
        "Fix parse of empty strings\n\nReverts and closes, see and\nfor details."
    )


def test_clean_message_keeps_a_subject_that_looks_like_a_trailer() -> None:
    assert clean_message("Bug: crash when empty\n\nFixes: #3") == "Bug: crash when empty"


@pytest.fixture()
def history_repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    repo = init_repo(tmp_path / "proj")
    shas = {"base": commit_files(repo, {"lib/core.py": V1, "README": "x\n"}, "Initial import")}
    shas["fix_parse"] = commit_files(
        repo,
        {"lib/core.py": V1.replace('split(",")', 'strip().split(",")')},
        "Fix parse when input has spaces (#12)\n\nSigned-off-by: A <a@example.com>",
    )
    shas["feature"] = commit_files(repo, {"lib/extra.py": "def more():\n    pass\n"}, "Add more")
    shas["docs"] = commit_files(repo, {"README": "y\n"}, "Fix typo in README")
    cur = (repo / "lib/core.py").read_text()
    shas["fix_two"] = commit_files(
        repo,
        {
            "lib/core.py": cur.replace('";".join', '"; ".join').replace("return None", "return 0"),
        },
        "render and unused were wrong: bug",
    )
    # a renamed file with a fix inside: ground truth names the old path
    moved = (repo / "lib/core.py").read_text().replace("return 0", "return 1")
    shas["fix_moved"] = commit_files(
        repo, {"lib/core.py": None, "lib/base.py": moved}, "Unused was wrong after the move (GH-3)"
    )
    git(repo, "checkout", "-q", "-b", "side", shas["fix_moved"])
    commit_files(repo, {"lib/extra.py": "def more():\n    return 1\n"}, "Fix more() returning None")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "side", "-m", "Merge fix branch (#99)")
    return repo, shas


def test_mine_history(history_repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    repo, shas = history_repo
    rows = mine_history(repo, EngineSettings(), graph_builder=ast_builder, repo_name="o/proj")
    by_commit = {r.extra["fix_commit"]: r for r in rows}
    # the merge itself is skipped, the fix on the merged branch is not
    assert set(by_commit) - {shas["fix_moved"], shas["fix_two"], shas["fix_parse"]} == {
        git(repo, "rev-parse", "side")
    }
    assert (
        by_commit[git(repo, "rev-parse", "side")].problem_statement == "Fix more() returning None"
    )
    fix = by_commit[shas["fix_parse"]]
    assert fix.base_commit == shas["base"]
    assert fix.problem_statement == "Fix parse when input has spaces"
    assert fix.edit_functions == ["lib/core.py:parse"]
    assert fix.repo == "o/proj" and fix.instance_id == f"o__proj-{shas['fix_parse'][:12]}"
    assert by_commit[shas["fix_two"]].edit_functions == ["lib/core.py:render", "lib/core.py:unused"]
    assert by_commit[shas["fix_moved"]].edit_functions == ["lib/core.py:unused"]
    # "Add more" is no fix; "Fix typo in README" touches no function
    assert shas["feature"] not in by_commit and shas["docs"] not in by_commit

    path = tmp_path / "mined.jsonl"
    write_dataset(path, rows)
    again = read_dataset(path)
    assert [r.to_dict() for r in again] == [r.to_dict() for r in rows]
    assert "patch" in json.loads(path.read_text().splitlines()[0])


def test_mine_history_limits(history_repo: tuple[Path, dict[str, str]]) -> None:
    repo, shas = history_repo
    one_fn = mine_history(repo, EngineSettings(), graph_builder=ast_builder, max_functions=1)
    assert shas["fix_two"] not in {r.extra["fix_commit"] for r in one_fn}
    assert (
        len(mine_history(repo, EngineSettings(), graph_builder=ast_builder, max_instances=2)) == 2
    )
    assert mine_history(repo, EngineSettings(), graph_builder=ast_builder, since="2099-01-01") == []
