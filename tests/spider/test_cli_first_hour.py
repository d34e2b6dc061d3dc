"""What a new user meets first: progress, a first answer fast, permalinks that match,
a table that fits, clear errors (the issue "A maintainer's first hour")."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from spider.cli import _bounds, app, hits_table, plan_permalinks
from spider.errors import InputError
from spider.models import Hit, Localization, Reason, RunSettings
from spider.settings import DEFAULT_COLD_POOL, EngineSettings
from tests.spider.shop import write_files
from tests.spider.test_cli import ISSUE, REPO_FILES

SHIFT = "# one\n# two\n# three\n"  # an uncommitted edit: every line below moves down by 3


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_files(tmp_path / "shop", REPO_FILES)


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True)
    return done.stdout.strip()


@pytest.fixture
def checkout(tree: Path) -> Path:
    _git(tree, "init", "-q", "-b", "trunk")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-q", "-m", "shop")
    _git(tree, "remote", "add", "origin", "git@github.com:acme/shop.git")
    return tree


def _run(*args: str, cache: Path, **env: str):  # -> click.testing.Result
    runner = CliRunner()
    return runner.invoke(app, list(args), env={"SPIDER_CACHE_DIR": str(cache), **env})


# -- progress ------------------------------------------------------------------------------


class Recorder:
    """A progress listener that writes down every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int | None]] = []

    def __call__(self, phase: str, done: int, total: int | None, detail: str = "") -> None:
        self.calls.append((phase, done, total))

    def phases(self) -> list[str]:
        return list(dict.fromkeys(p for p, _, _ in self.calls))

    def of(self, phase: str) -> list[tuple[int, int | None]]:
        return [(d, t) for p, d, t in self.calls if p == phase]


def test_index_reports_its_phases_in_order_with_totals(tree: Path, tmp_path: Path) -> None:
    from spider.index import build_index
    from spider.progress import EMBEDDING, LEXICAL, PARSING
    from spider.source import DirectorySource

    heard = Recorder()
    settings = EngineSettings(cache_dir=tmp_path / "cache", first_stage="hybrid", cold_pool=0)
    idx = build_index(DirectorySource(tree), settings, progress=heard)
    assert heard.phases() == [PARSING, EMBEDDING, LEXICAL]
    parsing = heard.of(PARSING)
    files = sum(idx.graph.stats_dict()["parsed"].values())
    assert parsing[0] == (0, files) or parsing[0][1] == files
    assert parsing[-1] == (files, files)
    embedding = heard.of(EMBEDDING)
    assert embedding[0] == (0, len(idx.function_ids)) and embedding[-1] == (6, 6)
    assert heard.of(LEXICAL)[0] == (0, None) and heard.of(LEXICAL)[-1] == (1, 1)


def test_the_cold_path_reports_the_pool_it_embeds(tree: Path, tmp_path: Path) -> None:
    from spider.index import build_index
    from spider.localize import locate
    from spider.models import Issue
    from spider.progress import EMBEDDING, EMBEDDING_POOL
    from spider.source import DirectorySource

    heard = Recorder()
    settings = EngineSettings(cache_dir=tmp_path / "cache", first_stage="hybrid", cold_pool=2)
    idx = build_index(DirectorySource(tree), settings, progress=heard)
    title, _, body = ISSUE.partition("\n")
    result = locate(idx, Issue(title=title, body=body), settings)
    assert EMBEDDING not in heard.phases()  # the full index was not embedded
    assert heard.of(EMBEDDING_POOL)[0] == (0, 2) and heard.of(EMBEDDING_POOL)[-1] == (2, 2)
    assert result.settings.partial is not None


def test_silence_turns_off_the_third_party_bars() -> None:
    from spider.retrieve.dense import silence_progress_bars

    silence_progress_bars()
    import huggingface_hub.utils
    import transformers.utils.logging

    assert huggingface_hub.utils.are_progress_bars_disabled()
    assert not transformers.utils.logging.is_progress_bar_enabled()


@pytest.mark.slow
def test_no_progress_and_no_third_party_bar_off_a_terminal(tree: Path, tmp_path: Path) -> None:
    """stderr is a pipe: nothing is drawn, and the ONNX export of a fresh model folder
    (transformers' "Loading weights" bar, before it was silenced) prints nothing."""
    env = {**os.environ, "SPIDER_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1",
           "SPIDER_ENCODER": "onnx", "SPIDER_ONNX_DIR": str(tmp_path / "onnx")}
    env.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    for args in (["index", str(tree)], ["locate", str(tree), "--issue", ISSUE, "--k", "3"]):
        out = subprocess.run([sys.executable, "-m", "spider.cli", *args], capture_output=True,
                             text=True, env=env, timeout=600, check=False)
        assert out.returncode == 0, out.stderr
        for text in ("Loading weights", "it/s", "%|", "━", "parsing", "embedding"):
            assert text not in out.stderr, out.stderr


def test_progress_is_drawn_on_a_terminal_and_not_when_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    from spider import cli_common
    from spider.progress import EMBEDDING

    screen = io.StringIO()
    monkeypatch.setattr(cli_common, "progress_console",
                        lambda: Console(file=screen, force_terminal=True, width=100))
    with cli_common.terminal_progress(True) as progress:
        assert progress is not None
        progress(EMBEDDING, 0, 1200)
        progress(EMBEDDING, 1200, 1200)
    assert "embedding 1,200 functions" in screen.getvalue()
    with cli_common.terminal_progress(False) as progress:
        assert progress is None


# -- a first answer fast --------------------------------------------------------------------


def test_a_first_locate_is_partial_and_names_the_command_that_completes_it(
    tree: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    first = _run("locate", str(tree), "--issue", ISSUE, "--json", cache=cache,
                 SPIDER_COLD_POOL="2")
    assert first.exit_code == 0, first.output
    data = json.loads(first.stdout)
    assert data["settings"]["partial_index"] is True
    assert data["settings"]["embedded_functions"] == 2 and data["settings"]["functions"] == 6
    assert f"spider index {tree}" in first.stderr
    assert _run("index", str(tree), cache=cache).exit_code == 0
    second = _run("locate", str(tree), "--issue", ISSUE, "--json", cache=cache,
                  SPIDER_COLD_POOL="2")
    assert second.exit_code == 0, second.output
    assert "partial_index" not in json.loads(second.stdout)["settings"]
    assert "spider index" not in second.stderr


def test_the_cli_takes_the_apps_cold_pool_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from spider.cli import _first_answer

    monkeypatch.delenv("SPIDER_COLD_POOL", raising=False)
    assert _first_answer(EngineSettings()).cold_pool == DEFAULT_COLD_POOL
    monkeypatch.setenv("SPIDER_COLD_POOL", "0")
    assert _first_answer(EngineSettings()).cold_pool == 0


# -- permalinks -----------------------------------------------------------------------------


def test_a_dirty_tree_ranks_the_committed_tree_for_markdown(checkout: Path, tmp_path: Path) -> None:
    cart = checkout / "shop" / "cart.py"
    cart.write_text(SHIFT + cart.read_text())
    sha = _git(checkout, "rev-parse", "HEAD")
    cache = tmp_path / "cache"
    out = _run("locate", str(checkout), "--issue", ISSUE, "--k", "3", "--format", "markdown",
               cache=cache)
    assert out.exit_code == 0, out.output
    assert f"/blob/{sha}/shop/cart.py#L10-L12)" in out.stdout  # HEAD's lines, not L13-L15
    assert "#L13-L15" not in out.stdout
    assert "uncommitted" in out.stderr and "committed tree (HEAD)" in out.stderr
    # JSON and the table rank what is on disk, as before, and the table says so
    data = _run("locate", str(checkout), "--issue", ISSUE, "--k", "3", "--json", cache=cache)
    hit = json.loads(data.stdout)["hits"][0]
    assert hit["id"] == "shop/cart.py:Cart.add_item" and hit["start_line"] == 13
    table = _run("locate", str(checkout), "--issue", ISSUE, "--k", "3", cache=cache)
    assert f"working tree with uncommitted changes (HEAD {sha})" in table.stdout


def test_a_clean_tree_has_no_note(checkout: Path) -> None:
    links = plan_permalinks(checkout, None, None, None)
    assert links.note is None and links.rev == "HEAD"
    assert links.html_url == "https://github.com/acme/shop" and links.branch == "trunk"


def test_no_github_remote_fails_before_indexing(checkout: Path, tmp_path: Path) -> None:
    _git(checkout, "remote", "set-url", "origin", "https://example.com/acme/shop.git")
    cache = tmp_path / "cache"
    out = _run("locate", str(checkout), "--issue", ISSUE, "--format", "markdown", cache=cache)
    assert out.exit_code == 2
    assert "--repo-url" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not cache.exists() or not any(cache.rglob("*"))  # nothing was indexed


@pytest.mark.parametrize("url", ["https://github.com/a", "https://gitlab.com/a/b", "acme/shop"])
def test_a_bad_repo_url_names_the_form_expected(checkout: Path, tmp_path: Path, url: str) -> None:
    out = _run("locate", str(checkout), "--issue", ISSUE, "--format", "markdown", "--repo-url",
               url, cache=tmp_path / "cache")
    assert out.exit_code == 2
    assert "--repo-url must be https://github.com/OWNER/NAME" in out.stderr
    assert "html_url" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_a_tarball_needs_a_commit_then_previews(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    url = "https://github.com/acme/shop"
    out = _run("locate", str(tree), "--issue", ISSUE, "--format", "markdown", "--repo-url", url,
               cache=cache)
    assert out.exit_code == 2 and "--commit SHA" in out.stderr and "not a git checkout" in out.stderr
    sha = "0123456789abcdef0123456789abcdef01234567"
    out = _run("locate", str(tree), "--issue", ISSUE, "--k", "3", "--format", "markdown",
               "--repo-url", url, "--commit", sha, cache=cache)
    assert out.exit_code == 0, out.output
    assert f"({url}/blob/{sha}/shop/cart.py#L10-L12)" in out.stdout
    bad = _run("locate", str(tree), "--issue", ISSUE, "--format", "markdown", "--repo-url", url,
               "--commit", "main", cache=cache)
    assert bad.exit_code == 2 and "--commit must be a commit id" in bad.stderr


def test_a_folder_inside_a_checkout_is_refused_for_markdown(checkout: Path) -> None:
    with pytest.raises(InputError, match="top folder"):
        plan_permalinks(checkout / "shop", None, None, None)


def test_a_bare_repository_ranks_its_head(checkout: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    _git(tmp_path, "clone", "-q", "--bare", str(checkout), str(bare))
    links = plan_permalinks(bare, None, "https://github.com/acme/shop", None)
    assert links.rev == "HEAD" and links.note is None


def test_commit_is_refused_in_a_git_checkout(checkout: Path) -> None:
    with pytest.raises(InputError, match="--rev"):
        plan_permalinks(checkout, None, None, "0123456")


# -- the table ------------------------------------------------------------------------------

LONG_ID = "src/acme/storefront/payment_gateways.py:StripeGateway.refund_partial"  # 68 chars


def _result(first: str = LONG_ID) -> Localization:
    hits = [
        Hit(id=first, path=first.split(":")[0], name="StripeGateway.refund_partial",
            start_line=1200, end_line=1288, score=0.9,
            reasons=[Reason(kind="mention", detail="StripeGateway.refund_partial"),
                     Reason(kind="terms", detail="refund, partial, amount"),
                     Reason(kind="hybrid", rank=1, score=0.9, detail="dense 1, BM25 2")]),
        Hit(id="shop/cart.py:Cart.add_item", path="shop/cart.py", name="Cart.add_item",
            start_line=10, end_line=12, score=0.5,
            reasons=[Reason(kind="expand", centre=LONG_ID, edge="invokes", hops=1,
                            relation="called by")]),
    ]
    return Localization(commit=None, hits=hits,
                        settings=RunSettings.of(EngineSettings(), selector="none"))


@pytest.mark.parametrize("width", [80, 120, 200])
def test_the_table_fits_the_terminal_and_shows_whole_ids(width: int) -> None:
    screen = io.StringIO()
    console = Console(file=screen, width=width, force_terminal=False, color_system=None)
    console.print(hits_table(_result(), "Refunds of part of an order fail", console.width))
    text = screen.getvalue()
    assert all(len(line) <= width for line in text.splitlines()), text
    assert LONG_ID in text and "shop/cart.py:Cart.add_item" in text
    assert "`" not in text  # reasons as plain text, no Markdown code spans
    assert "StripeGateway.refund_partial is named in the issue" in " ".join(text.split())


def test_an_id_wider_than_the_terminal_folds_within_it() -> None:
    wide = "src/" + "very_deep/" * 10 + "module.py:Handler.run"
    screen = io.StringIO()
    console = Console(file=screen, width=60, force_terminal=False, color_system=None)
    console.print(hits_table(_result(wide), "title", console.width))
    text = screen.getvalue()
    assert all(len(line) <= 60 for line in text.splitlines()), text
    assert "module.py:Handler.run" in "".join(line.strip() for line in text.splitlines())


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "reason"),
    [(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"), (b"Title \xff\xfe bad\n", "not UTF-8")],
)
def test_a_binary_issue_file_is_refused(tree: Path, tmp_path: Path, content: bytes,
                                        reason: str) -> None:
    issue = tmp_path / "issue.bin"
    issue.write_bytes(content)
    out = _run("locate", str(tree), "--issue-file", str(issue), cache=tmp_path / "cache")
    assert out.exit_code == 2 and reason in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_the_k_help_gives_the_settings_range() -> None:
    field = EngineSettings.model_fields["k"]
    lo = next(m.ge for m in field.metadata if hasattr(m, "ge"))
    hi = next(m.le for m in field.metadata if hasattr(m, "le"))
    assert _bounds("k") == f"{lo}-{hi}"
    out = CliRunner().invoke(app, ["locate", "--help"], env={"COLUMNS": "200"})
    assert f"results to return, {lo}-{hi}" in out.stdout


def test_the_issue_text_is_read_as_utf8(tree: Path, tmp_path: Path) -> None:
    from spider.cli import read_issue

    issue = tmp_path / "issue.md"
    issue.write_text("Crash on café\n\nbody", encoding="utf-8")
    assert read_issue(None, issue) == ("Crash on café", "\nbody")


GSON_ID = ("gson/src/main/java/com/google/gson/internal/bind/ReflectiveTypeAdapterFactory.java:"
           "ReflectiveTypeAdapterFactory.getBoundFields")


def _names_in(text: str) -> set[str]:
    """The words of a printed table (names are never split across lines when whole)."""
    return set(text.replace("\n", " ").split())


@pytest.mark.parametrize("width", [60, 72, 80, 100, 120, 140, 160, 200])
def test_long_ids_are_shortened_at_a_boundary_never_cut_mid_name(width: int) -> None:
    screen = io.StringIO()
    console = Console(file=screen, width=width, force_terminal=False, color_system=None)
    console.print(hits_table(_result(GSON_ID), "Gson drops a field", console.width))
    text = screen.getvalue()
    assert all(len(line) <= width for line in text.splitlines()), text
    words = _names_in(text)
    shown = next(w for w in words if w.endswith("getBoundFields"))
    assert shown == GSON_ID or "…" in shown  # whole, or shortened with an ellipsis
    assert "ReflectiveTypeAdapterFactory.ge" not in words and "tBoundFields" not in words
    for piece in shown.replace("…", "/").replace(":", "/").replace(".", "/").split("/"):
        assert not piece or piece in GSON_ID.replace(":", "/").replace(".", "/").split("/")


def test_an_id_that_fits_the_narrowest_table_is_shown_whole() -> None:
    fits = "src/acme/storefronts/gateways.py:Stripe.refund_partial"  # 54 characters
    assert len(fits) == 54
    result = _result(fits)
    result.hits.extend([result.hits[1]] * 18)  # 20 hits: the rank column is 2 wide
    screen = io.StringIO()
    console = Console(file=screen, width=60, force_terminal=False, color_system=None)
    console.print(hits_table(result, "title", console.width))
    assert fits in screen.getvalue().split()


def test_an_anonymous_export_is_shown_by_its_file_name() -> None:
    anon = "lib/helpers/resolveConfig.js:default"
    screen = io.StringIO()
    console = Console(file=screen, width=120, force_terminal=False, color_system=None)
    console.print(hits_table(_result(anon), "title", console.width))
    assert "lib/helpers/resolveConfig.js:resolveConfig" in screen.getvalue()
    assert ":default" not in screen.getvalue()


# -- help and error texts ------------------------------------------------------------------


@pytest.mark.parametrize("command", [["locate"], ["index"], ["bench"], ["train", "ranker"], []])
def test_help_reads_like_a_manual(command: list[str]) -> None:
    out = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "120"})
    assert out.exit_code == 0, out.output
    assert "<bool>" not in out.stdout and "{" not in out.stdout.splitlines()[1]
    if command in (["locate"], ["index"]):
        assert f"{command[0]} [OPTIONS] PATH" in out.stdout  # the runner names the program "root"


def test_an_empty_repository_says_so_in_words(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    out = _run("locate", str(empty), "--issue", "a bug", cache=tmp_path / "cache")
    assert out.exit_code == 2
    assert "is empty" in out.stderr and "{}" not in out.stderr


def test_the_quick_start_indexes_the_product_not_its_dev_only_tools() -> None:
    from spider.graph.build import exclusion_reasons
    from spider.source import DirectorySource

    root = Path(__file__).resolve().parents[2]
    demo_answer = "bot/signature.py"
    fake = "devkit/spider_devkit/fake_github/webhooks.py"
    why = exclusion_reasons(DirectorySource(root), EngineSettings(), [fake, demo_answer])
    assert why.get(fake) is not None and demo_answer not in why
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert "X-Hub-Signature-256" in readme  # the demo issue, whose answer is in bot/


def test_a_pool_nearly_as_big_as_the_repository_embeds_it_whole(tree: Path, tmp_path: Path) -> None:
    import math

    from spider.index import build_index
    from spider.localize import locate
    from spider.models import Issue
    from spider.settings import COLD_FULL_RATIO, embeds_whole
    from spider.source import DirectorySource

    assert embeds_whole(1349, 1000) and not embeds_whole(1501, 1000) and embeds_whole(9, 0)
    n = len(build_index(DirectorySource(tree), EngineSettings(cache_dir=tmp_path / "count"),
                        embed=False).function_ids)
    pool = math.ceil(n / COLD_FULL_RATIO)  # the pool would embed most of it anyway
    settings = EngineSettings(cache_dir=tmp_path / "cache", first_stage="hybrid", cold_pool=pool)
    idx = build_index(DirectorySource(tree), settings)
    assert not idx.stats.get("partial_index") and idx.stats["embedded"] == n
    title, _, body = ISSUE.partition("\n")
    assert locate(idx, Issue(title=title, body=body), settings).settings.partial is None
