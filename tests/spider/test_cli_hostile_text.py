"""What ``spider`` prints from an issue or a repository reaches a terminal cut and
neutralised: a megabyte-long single-line issue prints a one-line title, and escape
sequences (colours, window titles, bells, CSI as one C1 byte) and bidi overrides from the
issue or from file names are shown as visible escapes, never sent raw. JSON escapes them
itself and is left as it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spider.cli_common import MAX_ID_CHARS, MAX_TITLE_CHARS, terminal_safe

ESC_SEQUENCES = "\x1b[31mred\x1b[0m \x1b]0;owned\x07 \x9b2J \u202eevil\u202c \u2067iso\u2069"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u202c", "\u2067", "\u2069")  # never printed raw
EVIL_FILE = "evil\x1b]0;pwned\x07\u202egnp.py"
MEGABYTE = 1_000_000


def _spider(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPIDER_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "spider.cli", *args], capture_output=True,
                          text=True, env=env, timeout=300, check=False)


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A git checkout with a file whose name holds an escape sequence and a bidi override,
    and a 1 MB single-line issue full of escape sequences (title) with a short body."""
    root = tmp_path_factory.mktemp("hostile")
    repo = root / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / EVIL_FILE).write_text(
        'def parse_header(line):\n    """Parse a header line."""\n    return line.split(":")\n')
    (repo / "pkg" / "ok.py").write_text("def read_headers(s):\n    return parse_header(s)\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "init")
    _git(repo, "remote", "add", "origin", "https://github.com/acme/hostile")
    line = f"parse_header fails {ESC_SEQUENCES} "
    title = (line * (MEGABYTE // len(line) + 1))[:MEGABYTE]
    issue = root / "issue.txt"
    issue.write_text(f"{title}\nparse_header splits at every colon {ESC_SEQUENCES}\n")
    return repo, issue


def _assert_clean(text: str) -> None:
    for ch in RAW:
        assert ch not in text, f"{ch!r} reached the terminal"


def test_terminal_safe_shows_controls_and_bidi_as_escapes_and_cuts() -> None:
    assert terminal_safe("a\x1b[31mb\x07") == "a\\x1b[31mb\\x07"
    assert terminal_safe("\u202eabc\u2066") == "\\u202eabc\\u2066"
    assert terminal_safe("\x9b2J") == "\\x9b2J"
    assert terminal_safe("two\nlines\r\tand\u2028more") == "two lines  and more"
    assert terminal_safe("two\nlines", lines=True) == "two\nlines"
    assert terminal_safe("x" * 10, 10) == "x" * 10
    assert terminal_safe("x" * MEGABYTE, MAX_TITLE_CHARS) == "x" * (MAX_TITLE_CHARS - 1) + "…"
    cut = terminal_safe("\x1b" * 100, 20)
    assert len(cut) == 20 and cut.endswith("…") and "\x1b" not in cut
    assert terminal_safe("bad \udcff byte") == "bad \ufffd byte"  # not UTF-8: U+FFFD
    assert len(terminal_safe("a" * 10 * MAX_ID_CHARS)) == MAX_ID_CHARS


def test_locate_table_cuts_the_title_and_neutralises_issue_and_paths(
        hostile: tuple[Path, Path], tmp_path: Path) -> None:
    repo, issue = hostile
    out = _spider("locate", str(repo), "--issue-file", str(issue), "--first-stage", "bm25",
                  "--selector", "none", "--k", "3", cache=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    _assert_clean(out.stdout + out.stderr)
    lines = out.stdout.splitlines()
    assert len(lines) < 12  # was 11,449 lines of title for a 1 MB issue
    title = next(line for line in lines if "top " in line and " for: " in line)
    assert len(title.strip()) <= len("top 2 for: ") + MAX_TITLE_CHARS
    assert "\\x1b[31mred" in title and "\\u202eevil" in title  # shown, not acted on
    assert "pkg/evil\\x1b]0;pwned\\x07" in out.stdout  # the file name, escaped


def test_locate_markdown_neutralises_what_the_comment_quotes(
        hostile: tuple[Path, Path], tmp_path: Path) -> None:
    repo, issue = hostile
    out = _spider("locate", str(repo), "--issue-file", str(issue), "--first-stage", "bm25",
                  "--selector", "none", "--k", "3", "--format", "markdown", cache=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    _assert_clean(out.stdout + out.stderr)
    assert out.stdout.startswith("<!-- spider-bot:localization -->")
    assert max(len(line) for line in out.stdout.splitlines()) < 2_000


def test_locate_json_is_left_to_json_escaping(hostile: tuple[Path, Path], tmp_path: Path) -> None:
    repo, issue = hostile
    out = _spider("locate", str(repo), "--issue-file", str(issue), "--first-stage", "bm25",
                  "--selector", "none", "--k", "3", "--json", cache=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    _assert_clean(out.stdout)  # json.dumps escapes every control and non-ASCII character
    ids = [h["id"] for h in json.loads(out.stdout)["hits"]]
    assert f"pkg/{EVIL_FILE}:parse_header" in ids  # the real id, whole


def test_errors_and_notes_quoting_a_path_are_neutralised(tmp_path: Path) -> None:
    missing = tmp_path / "no\x1b[2Jsuch\u202edir"
    out = _spider("locate", str(missing), "--issue", "a title\nbody", cache=tmp_path)
    assert out.returncode != 0
    _assert_clean(out.stdout + out.stderr)
    assert "Traceback" not in out.stderr
