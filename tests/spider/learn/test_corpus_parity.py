"""The corpus a ranker is fitted on holds what the engine computes when it ranks: a warm
corpus row, scored by the shipped pool ranker, gives the engine's order and scores at query
time, history features included (a git repository with several commits, the test's own)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spider.eval.dataset import Instance
from spider.eval.snapshot import template_resolver
from spider.index import build_index
from spider.learn.corpus import build_corpus, read_row
from spider.localize import ranked_first_stage
from spider.rank.features import HISTORY_FEATURES, RANKER_FEATURES
from spider.rank.pool_rank import default_ranker
from spider.settings import EngineSettings
from spider.source import GitSource
from tests.spider.bench.helpers import commit_files, init_repo

LOADER = """
def load_config(path):
    text = open(path).read()
    return text or '{}'


def save_report(report, path):
    with open(path, "a") as fh:
        fh.write(report)


def parse_line(line):
    return line.split("=", 1)


class Loader:
    def fetch(self, url):
        return url

    def retry(self, url, times):
        for _ in range(times):
            self.fetch(url)
"""

PATCH = "\n".join(  # the fix: an empty report is not written
    [
        "diff --git a/app/config.py b/app/config.py",
        "--- a/app/config.py",
        "+++ b/app/config.py",
        "@@ -6,4 +6,6 @@ def load_config(path):",
        " def save_report(report, path):",
        '     with open(path, "a") as fh:',
        "+        if not report:",
        "+            return",
        "         fh.write(report)",
        " ",
        "",
    ]
)


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``MIRRORS/acme+tool``: three commits that edit functions, then one that does not
    (the base, so the corpus keeps it)."""
    root = init_repo(tmp_path_factory.mktemp("mirrors") / "acme+tool")
    v1 = LOADER.replace('"a"', '"w"').replace("text or '{}'", "text")
    commit_files(root, {"app/config.py": v1}, "Add the loader")
    commit_files(
        root,
        {"app/config.py": v1.replace("text\n", "text or '{}'\n")},
        "Fix crash on an empty configuration file",
    )
    commit_files(root, {"app/config.py": LOADER}, "Append reports, never truncate them")
    sha = commit_files(root, {"README.md": "A tool.\n"}, "Document the tool")
    return root, sha


def test_a_warm_corpus_row_ranks_as_the_engine_does(
    mirror: tuple[Path, str], tmp_path: Path
) -> None:
    root, sha = mirror
    ranker = default_ranker()
    assert ranker is not None and ranker.reads(HISTORY_FEATURES)
    settings = EngineSettings(cache_dir=tmp_path / "cache")
    inst = Instance(
        instance_id="tool-1",
        repo="acme/tool",
        base_commit=sha,
        problem_statement="Empty report truncates the file\nsave_report writes an empty report.",
        patch=PATCH,
    )
    out = tmp_path / "corpus"
    build_corpus(
        [inst], template_resolver(str(root.parent / "{owner}+{name}")), settings, out, warm=True
    )
    row = read_row(out / "tool-1.npz")
    with np.load(out / "tool-1.npz") as data:
        pool = [str(i) for i in data["ids"]]
        assert str(data["base_commit"]) == sha  # the base does not edit the fix's function
    history = [RANKER_FEATURES.index(f) for f in HISTORY_FEATURES]
    assert row.x[:, history].any()  # the commits' messages reached the features

    index = build_index(GitSource(root, sha), settings)
    fs = ranked_first_stage(index, inst.issue(), settings, ranker=ranker)
    assert fs.ranked_by == "pool" and fs.head_logits is not None
    engine = [index.function_ids[i] for i in fs.order[: len(pool)]]
    scores = ranker.scores(row.x)
    by = np.argsort(-scores, kind="stable")
    assert engine == [pool[i] for i in by]
    np.testing.assert_allclose(fs.head_logits[: len(pool)], scores[by], rtol=1e-5, atol=1e-6)
