"""History at inference: earlier commits' messages attached to the functions they edited,
read from a real git repository the test creates, and the pool ranker's features from it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spider.errors import FeatureInputsMissing
from spider.index import Index, build_index
from spider.localize import locate, read_history
from spider.models import Issue
from spider.rank.features import HISTORY_FEATURES, RANKER_FEATURES, ranker_features
from spider.retrieve import history as hist
from spider.retrieve.first_stage import first_stage
from spider.retrieve.history import CommitCache, header_name, recent_commits
from spider.settings import EngineSettings
from spider.source import DirectorySource, GitSource
from tests.spider.bench.helpers import commit_files, git, init_repo

CONFIG_V1 = """
def load_config(path):
    return open(path).read()


def save_report(report, path):
    with open(path, "w") as fh:
        fh.write(report)


class Loader:
    def fetch(self, url):
        return url
"""

CONFIG_V2 = CONFIG_V1.replace(
    "    return open(path).read()", "    text = open(path).read()\n    return text or '{}'"
)
CONFIG_V3 = CONFIG_V2.replace('    with open(path, "w") as fh:', '    with open(path, "a") as fh:')
JS = "export function parseUrl(url) {\n  return url;\n}\n"
JS_V2 = "export function parseUrl(url) {\n  return url.replace(/\\/$/, '');\n}\n"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = init_repo(tmp_path_factory.mktemp("hist") / "repo")
    shas = {
        "add": commit_files(path, {"app/config.py": CONFIG_V1, "web/url.js": JS}, "Add loader"),
        "empty": commit_files(
            path,
            {"app/config.py": CONFIG_V2},
            "Fix crash when the configuration file is empty\n\nCloses #12\n"
            "Signed-off-by: Someone <someone@example.com>",
        ),
        "report": commit_files(
            path, {"app/config.py": CONFIG_V3}, "Append reports, never truncate"
        ),
        "slash": commit_files(path, {"web/url.js": JS_V2}, "Strip the trailing slash of URLs"),
        "docs": commit_files(path, {"README.md": "words\n"}, "Document the loader"),
    }
    return path, shas


def _index(repo_path: Path, tmp_path: Path, **settings: object) -> Index:
    return build_index(
        GitSource(repo_path, "HEAD"),
        EngineSettings(cache_dir=tmp_path / "cache", first_stage="bm25", **settings),
    )


@pytest.mark.parametrize(
    ("context", "name"),
    [
        (" def load_config(path):", "load_config"),
        ("     async def fetch(self, url):", "fetch"),
        (" func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {", "ServeHTTP"),
        (" public static int parseInt(String s) {", "parseInt"),
        (" export function parseUrl(url) {", "parseUrl"),
        (" export const handler = async (event) => {", "handler"),
        (" fn main() -> Result<()> {", "main"),
        (" static int compare(const void *a, const void *b)", "compare"),
        (" class Loader:", None),
        (" if (ready) {", None),
        ("", None),
    ],
)
def test_header_name_reads_the_enclosing_function(context: str, name: str | None) -> None:
    assert header_name(context) == name


def test_commits_name_the_functions_they_edited(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, shas = repo
    listed = recent_commits(path, shas["docs"], 10)
    assert listed == [shas[k] for k in ("docs", "slash", "report", "empty")]  # not the root
    cache = CommitCache(tmp_path)
    edits = {e.sha: e for e in cache.read(path, listed)}
    fix = edits[shas["empty"]]
    assert fix.functions == (("app/config.py", "load_config"),)
    assert fix.message.startswith("Fix crash when the configuration file is empty")
    assert "#12" not in fix.message and "Signed-off-by" not in fix.message
    assert edits[shas["report"]].functions == (("app/config.py", "save_report"),)
    assert edits[shas["slash"]].functions == (("web/url.js", "parseUrl"),)
    assert edits[shas["docs"]].files == ()  # no source file: nothing to attach
    # the parse is cached by hash: a second read needs no repository at all
    again = cache.read(tmp_path / "gone", listed)
    assert [e.functions for e in again] == [edits[s].functions for s in listed]
    cache.close()


def test_a_sweep_commit_attaches_nothing(tmp_path: Path) -> None:
    path = init_repo(tmp_path / "sweep")
    files = {f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(hist.MAX_FILES + 1)}
    commit_files(path, files, "Add modules")
    sha = commit_files(
        path, {p: t.replace("return", "return 1 +") for p, t in files.items()}, "Reformat"
    )
    (edit,) = CommitCache(tmp_path / "c").read(path, [sha])
    assert edit.files == () and edit.functions == ()


def test_index_history_scores_the_functions_an_issue_recalls(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, _ = repo
    index = _index(path, tmp_path)
    history = index.history()
    assert history.commits == 4 and index.stats["history_commits"] == 4
    ids = index.function_ids
    scores = history.scores("Loading crashes on an empty configuration file")
    assert ids[int(np.argmax(scores))] == "app/config.py:load_config"
    counts = dict(zip(ids, history.counts(), strict=True))
    assert counts["app/config.py:load_config"] == 1 and counts["app/config.py:Loader.fetch"] == 0
    files = history.counts("file")  # config.py: empty, report; url.js: slash
    assert sorted(files.tolist()) == [1.0, 2.0]


def test_an_index_history_is_kept_and_read_back_without_the_commit_cache(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, _ = repo
    query = "Loading crashes on an empty configuration file"
    first = _index(path, tmp_path).history()
    expected = (first.scores(query), first.scores(query, "file"), first.counts())
    assert first.folder is not None and (first.folder / hist.SNAPSHOT_FILE).is_file()
    (tmp_path / "cache" / "history.sqlite").unlink()  # parses not read again: the snapshot is
    again = _index(path, tmp_path).history()
    assert again.folder == first.folder and again.messages == first.messages
    assert not (tmp_path / "cache" / "history.sqlite").exists()
    assert np.array_equal(again.scores(query), expected[0])  # its BM25 read back, not built
    assert np.array_equal(again.scores(query, "file"), expected[1])
    assert np.array_equal(again.counts(), expected[2])
    (first.folder / hist.SNAPSHOT_FILE).write_bytes(b"not marshal")  # a broken one is made again
    assert _index(path, tmp_path).history().messages == first.messages


def test_history_stops_at_the_indexed_commit(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, shas = repo
    index = build_index(
        GitSource(path, shas["add"]),
        EngineSettings(cache_dir=tmp_path / "cache", first_stage="bm25"),
    )
    history = index.history()
    assert history.commits == 0  # later commits are the future, the root says nothing
    assert not history.scores("empty configuration file crash").any()
    second = build_index(
        GitSource(path, shas["empty"]),
        EngineSettings(cache_dir=tmp_path / "cache", first_stage="bm25"),
    ).history()
    assert second.commits == 1 and second.counts().sum() == 1


def test_no_history_without_git_or_when_turned_off(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, _ = repo
    off = _index(path, tmp_path, history_commits=0).history()
    assert off.commits == 0 and not off.counts().any()
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text("def f():\n    return 1\n")
    index = build_index(
        DirectorySource(plain), EngineSettings(cache_dir=tmp_path / "c2", first_stage="bm25")
    )
    assert index.git_dir is None and index.history().commits == 0


def test_a_working_tree_reads_its_own_history(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, _ = repo
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(path), str(clone))
    index = build_index(
        DirectorySource(clone), EngineSettings(cache_dir=tmp_path / "c3", first_stage="bm25")
    )
    assert index.git_dir == clone.resolve() and index.history().commits == 4


def test_a_shallow_clone_attaches_nothing_to_its_boundary(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, _ = repo
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth=1", path.resolve().as_uri(), str(shallow))
    index = build_index(
        DirectorySource(shallow), EngineSettings(cache_dir=tmp_path / "c4", first_stage="bm25")
    )
    assert index.history().commits == 0 and not index.history().counts("file").any()
    issue = Issue("Crash", "Loading crashes when the configuration file is empty.")
    fs = first_stage(index, issue, index.settings)
    x = ranker_features(index, fs, list(range(len(index.function_ids))))
    named = dict(zip(HISTORY_FEATURES, x[0, -len(HISTORY_FEATURES) :], strict=True))
    assert named["history_share"] == 0 and named["log_history_commits"] == 0
    assert named["log_history_age"] == pytest.approx(np.log1p(2000))  # as if none edited
    assert named["log_history_rank"] == pytest.approx(np.log(1000))


def test_ranker_features_carry_history_only_when_asked(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, _ = repo
    index = _index(path, tmp_path)
    issue = Issue("Crash", "Loading crashes when the configuration file is empty.")
    fs = first_stage(index, issue, index.settings)
    items = list(range(len(index.function_ids)))
    cols = [RANKER_FEATURES.index(n) for n in HISTORY_FEATURES]
    x = ranker_features(index, fs, items)
    row = dict(zip(index.function_ids, x[:, cols], strict=True))
    named = {f: dict(zip(HISTORY_FEATURES, v, strict=True)) for f, v in row.items()}
    load = named["app/config.py:load_config"]
    assert load["history_share"] == 1.0 and load["log_history_commits"] == pytest.approx(
        np.log1p(1)
    )
    assert load["log_history_rank"] == 0.0  # the best match: rank 1
    assert load["log_history_age"] == pytest.approx(np.log1p(3))  # "empty": 3 commits back
    assert load["file_history_share"] == 1.0
    assert load["log_file_history_commits"] == pytest.approx(np.log1p(2))
    assert load["log_file_history_age"] == pytest.approx(np.log1p(2))  # "report" is 2 back
    fetch = named["app/config.py:Loader.fetch"]
    assert fetch["history_share"] == 0.0 and fetch["log_history_commits"] == 0.0
    assert fetch["log_history_rank"] == pytest.approx(np.log(1000))
    assert fetch["log_history_age"] == pytest.approx(np.log1p(4))  # none of the 4 read
    url = named["web/url.js:parseUrl"]
    assert url["history_share"] == 0.0 and url["log_history_commits"] > 0
    assert url["log_history_age"] == pytest.approx(np.log1p(1))
    off = ranker_features(index, fs, items, history=False)
    assert not off[:, cols].any()
    others = [j for j in range(len(RANKER_FEATURES)) if j not in cols]
    assert np.array_equal(off[:, others], x[:, others])


def test_history_is_scored_once_per_query_by_the_first_stage(
    repo: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first stage scores the issue against the history once per level (the fusion's
    function scores reused); the features only read them, and need them asked for."""
    path, _ = repo
    index = build_index(GitSource(path, "HEAD"), EngineSettings(cache_dir=tmp_path / "cache"))
    issue = Issue("Crash", "Loading crashes when the configuration file is empty.")
    history = index.history()
    scored: list[str] = []
    real = history.scores

    def counting(query: str, level: str = "function") -> np.ndarray:
        scored.append(level)
        return real(query, level)

    monkeypatch.setattr(history, "scores", counting)
    fused = index.settings.model_copy(update={"fusion_history": 1.0})
    fs = first_stage(index, issue, fused)
    assert sorted(scored) == ["file", "function"]
    assert fs.inputs is not None and fs.inputs.history_scores is not None
    items = list(range(len(index.function_ids)))
    x = ranker_features(index, fs, items)
    assert sorted(scored) == ["file", "function"]  # the features scored nothing
    plain = first_stage(index, issue, index.settings)
    assert np.array_equal(ranker_features(index, plain, items), x)  # fused or not, the same
    without = first_stage(index, issue, index.settings, history=False)
    assert without.inputs is not None and without.inputs.history_scores is None
    with pytest.raises(FeatureInputsMissing, match="history"):
        ranker_features(index, without, items)
    assert ranker_features(index, without, items, history=False).shape == x.shape


def test_history_joins_the_fusion_on_request(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, _ = repo
    index = build_index(GitSource(path, "HEAD"), EngineSettings(cache_dir=tmp_path / "cache"))
    issue = Issue("Crash", "It crashes when the configuration file is empty.")
    plain = first_stage(index, issue, index.settings)
    assert "history" not in plain.ranks
    fused = first_stage(index, issue, index.settings.model_copy(update={"fusion_history": 3.0}))
    at = index.function_ids.index("app/config.py:load_config")
    assert fused.ranks["history"][at] == 1
    assert fused.ranks["history"][index.function_ids.index("app/config.py:Loader.fetch")] == 0
    assert fused.rank[at] == 1
    others = [i for i, r in enumerate(fused.ranks["history"]) if r == 0]
    # functions no earlier message matches keep their relative order
    assert sorted(others, key=lambda i: fused.rank[i]) == sorted(
        others, key=lambda i: plain.rank[i]
    )


def test_the_list_quotes_an_earlier_commit_only_when_history_ranked_it(
    repo: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    path, _ = repo
    settings = EngineSettings(cache_dir=tmp_path / "cache", selector="none", k=3)
    index = build_index(GitSource(path, "HEAD"), settings)
    issue = Issue("Crash", "Loading crashes when the configuration file is empty.")
    fused = locate(index, issue, settings.model_copy(update={"fusion_history": 3.0}))
    load = next(h for h in fused.hits if h.id == "app/config.py:load_config")
    (quote,) = [r for r in load.reasons if r.kind == "history"]
    assert quote.words() == (
        "an earlier commit that edited it: “Fix crash when the configuration file is empty”"
    )
    assert quote.describe() == quote.words() and not quote.technical
    off = settings.model_copy(update={"history_commits": 0})
    assert not read_history(first_stage(index, issue, off), off, None)
    plain = locate(index, issue, off)  # nothing read history: nothing quoted
    assert not any(r.kind == "history" for h in plain.hits for r in h.reasons)


def test_recalled_needs_shared_words(repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    path, _ = repo
    index = _index(path, tmp_path)
    at = index.function_ids.index("app/config.py:load_config")
    history = index.history()
    assert history.recalled(at, "configuration file crash") == (
        "Fix crash when the configuration file is empty"
    )
    assert history.recalled(at, "the crash") is None  # one shared word is not evidence
    fetch = index.function_ids.index("app/config.py:Loader.fetch")
    assert history.recalled(fetch, "configuration file crash") is None  # never edited
