"""History at inference: what the earlier commits that edited a function said.

For an indexed git commit, the last ``history_commits`` non-merge commits reachable from it
are read (``git log -p -U0``; each hunk header names the enclosing function, by git's
built-in diff drivers). A function gets the cleaned messages of the commits whose hunks
sat in it (matched by path and short name), a file those of the commits that touched it.
BM25 over these texts scores them against an issue: one more feature family for the pool
ranker (``spider.rank.features``).

A commit's parse never changes, so parses are cached by commit hash in
``cache_dir/history.sqlite``: a new commit of the same repository reads only what is new.
What an index makes of them (each function's and file's messages, and the BM25 indexes
over those) is kept too, under ``cache_dir/history/``, by the commits read and the
index's functions and files: a warm query reads one file instead of 2,000 parses.
A shallow clone has little or no history; its functions then simply have none.
"""

from __future__ import annotations

import hashlib
import json
import logging
import marshal
import os
import re
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from spider.commit_messages import clean_message
from spider.errors import IndexFormatError, SourceError
from spider.retrieve.bm25 import LexicalIndex
from spider.retrieve.signals import plain_common_word
from spider.retrieve.tokenize import code_tokens
from spider.source import git
from spider.sqlite_table import SqliteTable

log = logging.getLogger(__name__)

HISTORY_VERSION = "1"  # bump when what a cached commit parse holds changes
SNAPSHOT_VERSION = "2"  # bump when what a kept FunctionHistory (or its BM25) holds changes, or how
# functions are keyed (spider.ids.short_name): a kept one is found by its graph's key alone
SNAPSHOT_FILE = "history.marshal"  # in the snapshot's folder, beside its BM25 indexes
MAX_FILES = 40  # a commit touching more source files is a sweep (reformat, rename): skipped
MAX_MESSAGE_CHARS = 600  # of each cleaned message
MAX_MESSAGES = 30  # most recent messages kept per function or file
CHUNK = 400  # commits per `git log --no-walk` call (argument length)
MIN_SHARED = 2  # words an earlier message shares with the issue before the list quotes it
SUBJECT_CHARS = 120  # of a quoted subject line
MAX_BROUGHT = 200  # commits of a merged branch read when checking what a commit brought

# git's built-in diff drivers print the enclosing function in each hunk header
DRIVERS = {
    **dict.fromkeys((".py", ".pyi"), "python"),
    ".java": "java",
    ".go": "golang",
    ".rs": "rust",
    **dict.fromkeys((".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"), "cpp"),
    ".cs": "csharp",
    ".php": "php",
    ".rb": "ruby",
    **dict.fromkeys((".kt", ".kts"), "kotlin"),
    **dict.fromkeys((".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"), "spiderjs"),
}
# JavaScript and TypeScript have no built-in driver: functions, methods, arrow constants
JS_FUNCNAME = (
    r"^[ \t]*((export[ \t]+)?(default[ \t]+)?(async[ \t]+)?function[ \t*]*[A-Za-z_$][A-Za-z0-9_$]*"
    r"|((public|private|protected|static|async|get|set|override)[ \t]+)*[A-Za-z_$][A-Za-z0-9_$]*"
    r"[ \t]*(<[^>]*>)?\([^;]*$"
    r"|(export[ \t]+)?(const|let|var)[ \t]+[A-Za-z_$][A-Za-z0-9_$]*[ \t]*=.*=>.*)"
)
_KEYWORDS = frozenset(
    ["if", "for", "while", "switch", "catch", "return", "else", "do", "try", "with", "elif", "except", "new", "await", "typeof", "sizeof"]
)  # fmt: skip
_DEF = re.compile(
    r"\b(?:def|func|fn|function|sub|fun)\b\s*\*?\s*(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)"
)
_CALL = re.compile(r"([A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\s*\(")
_ARROW = re.compile(r"\b(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=")
RECORD, FIELD, BODY = "\x1e", "\x1f", "\x1d"


def header_name(context: str) -> str | None:
    """The function a hunk header's context line names (``def load(self):`` -> ``load``);
    None for a class or anything else that is not a function."""
    text = context.strip()
    if not text or text.startswith(("class ", "struct ", "interface ", "module ", "impl ")):
        return None
    for pattern in (_DEF, _ARROW, _CALL):
        m = pattern.search(text)
        if m and m.group(1) not in _KEYWORDS:
            return m.group(1)
    return None


@dataclass(frozen=True)
class CommitEdit:
    """One parsed commit: its cleaned message, the files it touched, the functions edited."""

    sha: str
    message: str
    files: tuple[str, ...]
    functions: tuple[tuple[str, str], ...]  # (path, short name)

    def to_json(self) -> str:
        """The cache row."""
        return json.dumps(
            {"m": self.message, "f": list(self.files), "t": [list(t) for t in self.functions]}
        )

    @classmethod
    def from_json(cls, sha: str, body: str) -> CommitEdit:
        """Read a cache row back."""
        data = json.loads(body)
        return cls(sha, data["m"], tuple(data["f"]), tuple((p, n) for p, n in data["t"]))


def _diff_path(line: str) -> str | None:
    """The path of a ``diff --git a/P b/P`` line (renames are off, so both sides agree)."""
    rest = line[len("diff --git a/") :]
    if rest.startswith('"'):
        return None  # quoted (unusual characters): skipped
    n = (len(rest) - 3) // 2
    return rest[:n] if rest[n : n + 3] == " b/" else None


def parse_log(raw: str) -> list[CommitEdit]:
    """Commits of ``git log`` output in the :func:`log_args` format."""
    out: list[CommitEdit] = []
    for rec in raw.split(RECORD):
        if FIELD not in rec:
            continue
        sha, _, rest = rec.partition(FIELD)
        message, _, diff = rest.partition(BODY)
        files: list[str] = []
        functions: dict[tuple[str, str], None] = {}
        path: str | None = None
        for line in diff.splitlines():
            if line.startswith("diff --git "):
                path = _diff_path(line)
                if path is not None:
                    files.append(path)
            elif line.startswith("@@") and path is not None:
                _, _, context = line[2:].partition("@@")
                name = header_name(context)
                if name:
                    functions[(path, name)] = None
        if len(files) > MAX_FILES:
            files, functions = [], {}
        text = clean_message(message)[:MAX_MESSAGE_CHARS]
        out.append(CommitEdit(sha.strip(), text, tuple(files), tuple(functions)))
    return out


def log_args(shas: Sequence[str]) -> list[str]:
    """``git log`` arguments that print each of ``shas`` with its hunk headers."""
    return [
        "-c",
        f"diff.spiderjs.xfuncname={JS_FUNCNAME}",
        "log",
        "--no-walk=unsorted",
        "--no-renames",
        "--no-color",
        "--no-ext-diff",
        "-p",
        "-U0",
        f"--format={RECORD}%H{FIELD}%B{BODY}",
        *shas,
        "--",
        *(f"*{ext}" for ext in DRIVERS),
    ]


def _attributes_file(cache_dir: Path) -> Path:
    """A gitattributes file mapping each extension to its diff driver (written once)."""
    path = cache_dir / "history.gitattributes"
    text = "".join(f"*{ext} diff={driver}\n" for ext, driver in DRIVERS.items())
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


class CommitCache:
    """Parsed commits by hash, in one SQLite file shared by every repository."""

    def __init__(self, cache_dir: Path) -> None:
        self.cache_dir = cache_dir
        self._table = SqliteTable(cache_dir / "history.sqlite", "commits", ["body"])

    def read(self, git_dir: Path, shas: Sequence[str]) -> list[CommitEdit]:
        """The parse of each of ``shas`` (in order), from the cache or from git."""
        keys = [f"{HISTORY_VERSION}:{s}" for s in shas]
        found: dict[str, CommitEdit] = {}
        for key, body in self._table.get_many(keys, "body"):
            sha = key.partition(":")[2]
            found[sha] = CommitEdit.from_json(sha, body)
        missing = [s for s in shas if s not in found]
        attrs = _attributes_file(self.cache_dir)
        for i in range(0, len(missing), CHUNK):
            chunk = missing[i : i + CHUNK]
            raw = git(["-c", f"core.attributesFile={attrs}", *log_args(chunk)], git_dir).decode(
                "utf-8", "replace"
            )
            parsed = parse_log(raw)
            # a commit that touched none of the source files prints no record at all
            seen = {c.sha for c in parsed}
            parsed += [CommitEdit(s, "", (), ()) for s in chunk if s not in seen]
            self._table.put_many([(f"{HISTORY_VERSION}:{c.sha}", c.to_json()) for c in parsed])
            found.update((c.sha, c) for c in parsed)
        return [found[s] for s in shas]

    def close(self) -> None:
        """Release the SQLite file."""
        self._table.close()


def recent_commits(git_dir: Path, commit: str, limit: int) -> list[str]:
    """The last ``limit`` commits with one parent reachable from ``commit`` (itself
    included), newest first; [] when git cannot list them. Merges repeat their branches'
    commits; a root commit (the first one, or a shallow clone's boundary, which git shows
    as adding every file) says nothing about one function."""
    try:
        out = git(
            ["rev-list", "--no-merges", "--min-parents=1", f"--max-count={limit}", commit],
            git_dir,
        )
    except SourceError as exc:
        log.warning("no history for %s: %s", commit[:12], exc)
        return []
    return out.decode().split()


def first_parent(git_dir: Path, commit: str) -> str | None:
    """``commit``'s first parent, or None for a root commit (or one git cannot read)."""
    try:
        out = git(["rev-parse", "--verify", "--quiet", f"{commit}^1"], git_dir)
    except SourceError:
        return None
    return out.decode().strip() or None


def brought_commits(git_dir: Path, commit: str, limit: int = MAX_BROUGHT) -> list[str]:
    """The commits with one parent that ``commit`` adds to its first parent's history:
    itself, or for a merge the commits of the branch it merged (at most ``limit``, newest
    first); [] for a root commit."""
    parent = first_parent(git_dir, commit)
    if parent is None:
        return []
    try:
        out = git(
            ["rev-list", "--no-merges", f"--max-count={limit}", f"{parent}..{commit}"], git_dir
        )
    except SourceError as exc:
        log.warning("commits of %s not listed: %s", commit[:12], exc)
        return []
    return out.decode().split()


@dataclass
class FunctionHistory:
    """The earlier commits' messages of each function and file of one index."""

    commits: int  # commits read
    function_messages: list[list[int]]  # per function (index order): message ids, newest first
    file_messages: list[list[int]]  # per file (the index's file order)
    messages: list[str]
    positions: list[int] = field(default_factory=list)  # per message: its commit's age (0 = newest)
    _lexical: dict[str, tuple[np.ndarray, LexicalIndex]] = field(default_factory=dict)
    folder: Path | None = None  # where it is kept (its BM25 indexes are saved there too)

    @classmethod
    def empty(cls, functions: int, files: int) -> FunctionHistory:
        """No history (a working tree without git, a shallow clone, history turned off)."""
        return cls(0, [[] for _ in range(functions)], [[] for _ in range(files)], [], [])

    @classmethod
    def from_commits(
        cls,
        edits: Iterable[CommitEdit],
        function_keys: Sequence[tuple[str, str]],
        file_paths: Sequence[str],
    ) -> FunctionHistory:
        """Attach each commit (newest first) to the functions and files it edited;
        ``function_keys`` are the index's (path, short name) per function."""
        by_key: dict[tuple[str, str], list[int]] = {}
        for i, key in enumerate(function_keys):
            by_key.setdefault(key, []).append(i)
        file_pos = {p: i for i, p in enumerate(file_paths)}
        fn: list[list[int]] = [[] for _ in function_keys]
        fl: list[list[int]] = [[] for _ in file_paths]
        messages: list[str] = []
        positions: list[int] = []
        n = 0
        for edit in edits:
            n += 1
            if not edit.files:
                continue
            m = len(messages)
            messages.append(edit.message)
            positions.append(n - 1)
            for path in edit.files:
                if (f := file_pos.get(path)) is not None:
                    fl[f].append(m)
            for key in edit.functions:
                for i in by_key.get(key, ()):
                    fn[i].append(m)
        return cls(n, fn, fl, messages, positions)

    def counts(self, level: str = "function") -> np.ndarray:
        """Commits that edited each function (or touched each file)."""
        lists = self.function_messages if level == "function" else self.file_messages
        return np.array([len(x) for x in lists], dtype=np.float64)

    def age(self, level: str = "function") -> np.ndarray:
        """How many commits back each function (file) was last edited: 0 = by the newest
        commit read; ``commits`` where none of them edited it."""
        lists = self.function_messages if level == "function" else self.file_messages
        return np.array(
            [self.positions[x[0]] if x else self.commits for x in lists], dtype=np.float64
        )

    def recalled(self, function: int, query: str, least: int = MIN_SHARED) -> str | None:
        """The subject line of the newest earlier commit that edited ``function`` and shares
        the most words with ``query`` (at least ``least`` words of 4+ letters that are not
        common English), or None."""
        wanted = {t for t in code_tokens(query) if len(t) > 3 and not plain_common_word(t)}
        best: tuple[int, str] | None = None
        for m in self.function_messages[function][:MAX_MESSAGES]:
            text = self.messages[m]
            shared = len(wanted & set(code_tokens(text)))
            if shared >= least and (best is None or shared > best[0]):
                best = (shared, text)
        if best is None:
            return None
        subject = best[1].strip().splitlines()[0] if best[1].strip() else ""
        return subject[:SUBJECT_CHARS] or None

    def scores(self, query: str, level: str = "function") -> np.ndarray:
        """BM25 of ``query`` against each function's (or file's) earlier messages; 0 where
        there are none."""
        lists = self.function_messages if level == "function" else self.file_messages
        if level not in self._lexical:
            rows = np.array([i for i, x in enumerate(lists) if x], dtype=np.int64)
            self._lexical[level] = (rows, self._message_index(level, lists, rows))
        rows, lexical = self._lexical[level]
        out = np.zeros(len(lists), dtype=np.float64)
        if len(rows):
            out[rows] = lexical.scores(query)
        return out


    def _message_index(self, level: str, lists: list[list[int]], rows: np.ndarray) -> LexicalIndex:
        """BM25 over the messages of ``rows``: read from :attr:`folder` when kept there,
        else built (and kept)."""
        saved = self.folder / f"bm25-{level}" if self.folder is not None else None
        if saved is not None and saved.is_dir():
            try:
                index = LexicalIndex.load(saved)
                if index.size == len(rows):
                    return index
            except IndexFormatError as exc:
                log.warning("rebuilding history BM25: %s", exc)
            shutil.rmtree(saved, ignore_errors=True)
        docs = ["\n".join(self.messages[m] for m in lists[i][:MAX_MESSAGES]) for i in rows]
        index = LexicalIndex(docs)
        if saved is not None:
            index.save(saved)
        return index

    def to_bytes(self) -> bytes:
        """What :func:`load_history` keeps of it (not its BM25 indexes: saved beside), in
        ``marshal``'s format: plain lists and strings, read back five times faster than
        JSON (sympy's window: 0.2 s of CPU as JSON) and never code."""
        return marshal.dumps({
            "v": SNAPSHOT_VERSION, "commits": self.commits, "fn": self.function_messages,
            "fl": self.file_messages, "m": self.messages, "p": self.positions,
        })

    @classmethod
    def from_bytes(cls, raw: bytes, folder: Path) -> FunctionHistory:
        """Read :meth:`to_bytes` back; ValueError (or KeyError, EOFError, TypeError) when
        it is not one."""
        data = marshal.loads(raw)
        if data.get("v") != SNAPSHOT_VERSION:
            raise ValueError(f"history snapshot version {data.get('v')!r}")
        return cls(int(data["commits"]), data["fn"], data["fl"], data["m"], data["p"],
                   folder=folder)


def snapshot_key(shas: Sequence[str], made_of: Sequence[str], file_paths: Sequence[str]) -> str:
    """What a kept :class:`FunctionHistory` is made of: the commits read, what fixes the
    index's functions (their keys, or the key of the cached graph they come from) and its
    files."""
    h = hashlib.sha256(f"{SNAPSHOT_VERSION}:{HISTORY_VERSION}".encode())
    for part in (shas, made_of, file_paths):
        h.update("\n".join(part).encode("utf-8", "surrogatepass"))
        h.update(b"\x1e")
    return h.hexdigest()[:32]


def _kept(folder: Path) -> FunctionHistory | None:
    """The snapshot kept in ``folder``, or None (absent, or unreadable: made again)."""
    path = folder / SNAPSHOT_FILE
    try:
        return FunctionHistory.from_bytes(path.read_bytes(), folder)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, EOFError, AttributeError) as exc:
        log.warning("ignoring history snapshot %s: %s", path, exc)
        return None


def _keep(history: FunctionHistory, folder: Path) -> None:
    """Write ``history`` to ``folder`` (renamed into place; a full disk costs only time)."""
    path = folder / SNAPSHOT_FILE
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(history.to_bytes())
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("history snapshot not kept: %s", exc)
        tmp.unlink(missing_ok=True)
        return
    history.folder = folder


def load_history(
    git_dir: Path | None,
    commit: str | None,
    limit: int,
    cache_dir: Path,
    function_keys: Callable[[], Sequence[tuple[str, str]]],
    file_paths: Sequence[str],
    *,
    graph_key: str | None = None,
) -> FunctionHistory:
    """The history of an index's functions and files: the last ``limit`` commits up to
    ``commit`` in ``git_dir``; empty when there is no repository or ``limit`` is 0.

    ``function_keys`` gives each function's (path, short name), asked for only when the
    history is made: with ``graph_key`` (the cache key of the graph the functions come
    from, which fixes them) a kept history is found without them (sympy: 0.09 s a query).
    """
    if git_dir is None or not commit or limit <= 0:
        return FunctionHistory.empty(len(function_keys()), len(file_paths))
    shas = recent_commits(git_dir, commit, limit)
    if not shas:
        return FunctionHistory.empty(len(function_keys()), len(file_paths))
    made_of = [f"graph:{graph_key}"] if graph_key else ["\0".join(k) for k in function_keys()]
    folder = cache_dir / "history" / snapshot_key(shas, made_of, file_paths)
    kept = _kept(folder)
    if kept is not None:
        return kept
    cache = CommitCache(cache_dir)
    keys = function_keys()
    try:
        edits = cache.read(git_dir, shas)
    except SourceError as exc:
        log.warning("history of %s not read: %s", commit[:12], exc)
        return FunctionHistory.empty(len(keys), len(file_paths))
    finally:
        cache.close()
    history = FunctionHistory.from_commits(edits, keys, file_paths)
    _keep(history, folder)
    return history
