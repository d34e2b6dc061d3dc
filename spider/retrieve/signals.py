"""Evidence read from the issue text itself: paths, identifiers and stack-trace frames.

Each signal maps onto function nodes of the graph; ``signal_scores`` turns them into one
score per function that the first stage fuses with the dense and lexical rankings.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

import numpy as np

from spider.graph.model import CodeGraph

SOURCE_EXT = r"py|pyi|java|kt|kts|js|jsx|mjs|cjs|ts|tsx|go|rs|cs|rb|php|c|h|cc|cpp|cxx|hpp|hh"
_PATH = re.compile(rf"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:{SOURCE_EXT}))\b")
_PY_FRAME = re.compile(r'File "([^"]+)", line (\d+), in ([\w<>.]+)')
_JAVA_FRAME = re.compile(r"\bat ([\w$.]+)\.([\w$<>]+)\(([\w$]+\.(?:java|kt|scala)):(\d+)\)")
_JS_FRAME = re.compile(
    r"\bat (?:([\w$.<>\[\] ]+?) \()?((?:[A-Za-z]:)?[^\s():]+\.(?:[cm]?js|jsx|tsx?)):(\d+):\d+\)?"
)
_GO_FRAME = re.compile(r"^\s*([\w./-]+\.go):(\d+)", re.MULTILINE)
_GO_FUNC = re.compile(r"^([\w./-]+)\.(\(?\*?[\w]+\)?\.)?(\w+)\(", re.MULTILINE)
_RUST_FRAME = re.compile(r"(?:at |panicked at )'?((?:[\w.-]+/)*[\w.-]+\.rs):(\d+)(?::\d+)?")
_BACKTICK = re.compile(r"`([^`\n]{1,200})`")
_FENCE = re.compile(r"```.*?```", re.DOTALL)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_CALL = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\(")
_SCOPED = re.compile(r"(?<![\w:])([A-Za-z_]\w*(?:::[A-Za-z_]\w*)+)")  # Foo::bar, a::b::c

MIN_NAME_CHARS = 3  # shorter names (`x`, `id`) match too much to count as a mention
MAX_NAME_MATCHES = 8  # a short name defined more often than this is too ambiguous to use
MAX_MEMBER_CLASSES = 2  # a class name defined more often than this is too ambiguous to use
MIN_COMPONENT_CHARS = 3  # `_print_Sum` counts for `Sum`; shorter components match too much
COMMON_NAMES = frozenset(
    {
        "__init__",
        "__call__",
        "__str__",
        "__repr__",
        "main",
        "run",
        "get",
        "set",
        "init",
        "update",
        "call",
        "apply",
        "value",
        "name",
        "data",
        "self",
        "test",
        "setup",
        "print",
        "list",
        "dict",
        "type",
        "len",
        "str",
        "int",
        "open",
        "close",
        "read",
        "write",
        "save",
        "load",
        "copy",
        "format",
        "error",
        "warn",
        "info",
        "debug",
        "add",
        "remove",
        "new",
    }
)  # names that appear in nearly every issue and every code base

COMMON_WORDS_FILE = "common_words.txt"  # package data beside this module
CODE_NAMES_CACHED = 8  # issues whose code-written names are kept: one query reads one issue


def load_word_list(name: str = COMMON_WORDS_FILE) -> frozenset[str]:
    """The words of a package-data word list (one a line, lower case, ``#`` comments)."""
    text = resources.files(__package__ or "spider.retrieve").joinpath(name).read_text("utf-8")
    words = (line.strip().lower() for line in text.splitlines())
    return frozenset(w for w in words if w and not w.startswith("#"))


COMMON_ENGLISH = load_word_list()  # English words that are identifiers too: run, get, url


def plain_common_word(word: str) -> bool:
    """Whether ``word`` is a common English word written as prose (``run``, ``Run``,
    ``URL``), not as code: such a word names no function unless the issue writes it as
    code (backticks, a call, a dotted name, a traceback frame)."""
    return (
        word.isalpha()
        and word.lower() in COMMON_ENGLISH
        and (word.islower() or word.isupper() or word.istitle())
    )


@lru_cache(maxsize=CODE_NAMES_CACHED)
def code_written_names(text: str) -> frozenset[str]:
    """The identifier parts (lower case) that ``text`` writes as code: inside backticks or
    a fenced block, called (``run()``), dotted (``engine.run``) or in a traceback frame."""
    sig = extract_signals(text)
    names = sig.code_names | sig.prose_names  # prose names: code-shaped or called only
    names.update(func for _, _, func in sig.frames if func)
    return frozenset(part.lower() for n in names for part in n.split("."))


# Strength of each kind of evidence; the ranking only uses their order and the fusion weight.
STRENGTH = {
    "frame": 4.0,  # a stack frame names file, line and function
    "qualified": 3.0,  # `Class.method` / `module.func` mentioned
    "backtick": 2.5,  # a name in backticks or a code block
    "name": 1.5,  # a bare identifier in prose matching a defined name
    "member": 1.0,  # a method of a class the issue names (`Mod(x, 2)` -> Mod.eval, Mod.doit)
    "component": 1.0,  # a name built around a mentioned one (`SeqFormula` -> _print_SeqFormula)
    "file": 0.5,  # a function in a file the issue names
}
MAX_STRENGTH = max(STRENGTH.values())


def signal_bonus(strength: np.ndarray, weight: float, rrf_k: int) -> np.ndarray:
    """Fusion bonus in proportion to the evidence: the strongest signal (a stack frame)
    counts like a rank-1 hit of a ranker of weight ``weight``; a mentioned file much less."""
    return weight * strength / (MAX_STRENGTH * (rrf_k + 1))


@dataclass
class IssueSignals:
    """What the issue names: paths, dotted names, bare names, and stack frames."""

    paths: list[str] = field(default_factory=list)
    frames: list[tuple[str | None, int | None, str | None]] = field(default_factory=list)
    code_names: set[str] = field(default_factory=set)  # in backticks / code blocks
    prose_names: set[str] = field(default_factory=set)


_CODE_SHAPE = re.compile(r"[._]|[a-z][A-Z]|[A-Z].*[A-Z]|\d")


def looks_like_code(word: str) -> bool:
    """A prose word counts as an identifier only with code shape: ``snake_case``,
    ``camelCase``, ``CamelCase``, ``dotted.name`` or digits - not plain English words."""
    return bool(_CODE_SHAPE.search(word.strip("_") or word)) or word.startswith("__")


def scoped_as_dotted(text: str) -> str:
    """``text`` with C++/Rust/PHP scoped names written dotted (``Foo::bar`` ->
    ``Foo.bar``), the way the graph qualifies names in every language."""
    return _SCOPED.sub(lambda m: m.group(1).replace("::", "."), text)


# A member named through its receiver or scope, as a pointer: ``c.ClientIP()``,
# ``Session.send``; a call with arguments (``dayjs.duration('PT3M')``) is a usage example.
_POINTER = re.compile(r"(?<![\w.:])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(\s*\))?(?![\w(])")


@lru_cache(maxsize=CODE_NAMES_CACHED)
def names_written_as_code(text: str) -> frozenset[str]:
    """The member names (lower case) that the issue's prose points at as code through
    their receiver or scope: ``c.ClientIP()``, `` `Session.send` ``, ``Foo::bar``, in prose
    or as a whole inline code span. A call with arguments (``dayjs.duration('PT3M')``: a
    usage example), a bare call (``dayjs()``), a name alone, a capitalised word, a longer
    code span and anything in a fenced block (a pasted log or reproduction) are not
    pointers."""
    prose = _FENCE.sub(" ", scoped_as_dotted(text))
    spans = [m.group(1) for m in _BACKTICK.finditer(prose)]
    names = [m.group(1) for span in spans if (m := _POINTER.fullmatch(span.strip()))]
    names += [m.group(1) for m in _POINTER.finditer(_BACKTICK.sub(" ", prose))]
    return frozenset(n.rsplit(".", 1)[-1].lower() for n in names)


def extract_signals(text: str) -> IssueSignals:
    """Parse paths, identifiers and stack frames (Python, Java/Kotlin, JS/TS, Go, Rust)."""
    sig = IssueSignals()
    for m in _PY_FRAME.finditer(text):
        sig.frames.append((m.group(1), int(m.group(2)), m.group(3)))
    for m in _JAVA_FRAME.finditer(text):
        cls = m.group(1).split(".")[-1]
        sig.frames.append((m.group(3), int(m.group(4)), f"{cls}.{m.group(2)}"))
    for m in _JS_FRAME.finditer(text):
        fn = (m.group(1) or "").strip().split(" ")[-1] or None
        sig.frames.append((m.group(2), int(m.group(3)), fn))
    for m in _GO_FRAME.finditer(text):
        sig.frames.append((m.group(1), int(m.group(2)), None))
    for m in _GO_FUNC.finditer(text):
        sig.frames.append((None, None, m.group(3)))
    for m in _RUST_FRAME.finditer(text):
        sig.frames.append((m.group(1), int(m.group(2)), None))
    sig.paths = list(dict.fromkeys(m.group(1) for m in _PATH.finditer(text)))
    code_parts = [m.group(1) for m in _BACKTICK.finditer(text)]
    code_parts += [m.group(0) for m in _FENCE.finditer(text)]
    for part in code_parts:
        sig.code_names.update(_IDENT.findall(part))
    prose = _FENCE.sub(" ", text)
    sig.prose_names.update(
        n for n in _IDENT.findall(prose) if looks_like_code(n) and not plain_common_word(n)
    )
    sig.prose_names.update(_CALL.findall(prose))  # call-shaped: `Mod(x, 2)`, `idiff(...)`
    return sig


class NameTable:
    """Lookup of function nodes by short name, qualified name and path suffix."""

    def __init__(self, graph: CodeGraph, function_ids: Sequence[str]) -> None:
        self.index_of = {n: i for i, n in enumerate(function_ids)}
        self.by_short: dict[str, list[int]] = defaultdict(list)
        self.by_qual: dict[str, list[int]] = defaultdict(list)
        self.by_class: dict[str, list[int]] = defaultdict(list)
        self.by_component: dict[str, list[int]] = defaultdict(list)
        self.by_scope: dict[str, list[int]] = defaultdict(list)  # enclosing name -> members
        self.scopes: dict[str, set[str]] = defaultdict(set)  # enclosing name -> where defined
        self.by_path: dict[str, list[int]] = defaultdict(list)
        self.lines: list[tuple[str, int, int]] = []
        g = graph.g
        for i, n in enumerate(function_ids):
            a = g.nodes[n]
            name = a.get("name", "").split("#")[0]
            parts = name.split(".")
            # a C++ specialisation's scope is looked up by its template's name: `formatter`
            parts = [p.split("<", 1)[0] or p for p in parts[:-1]] + parts[-1:]
            path = a.get("path", "")
            self.by_short[parts[-1]].append(i)
            if len(parts) > 1:
                self.by_qual[".".join(parts[-2:])].append(i)
                self.by_class[parts[-2]].append(i)
            for depth, scope in enumerate(parts[:-1]):  # Mod.eval.doit is a member of Mod
                self.by_scope[scope].append(i)
                self.scopes[scope].add(f"{path}:{'.'.join(parts[: depth + 1])}")
            comps = [c for c in parts[-1].split("_") if len(c) >= MIN_COMPONENT_CHARS]
            if len(comps) > 1 or (comps and comps[0] != parts[-1]):
                for c in set(comps):
                    self.by_component[c].append(i)
            module = path.rsplit(".", 1)[0].replace("/", ".")
            self.by_qual[f"{module.rsplit('.', 1)[-1]}.{parts[-1]}"].append(i)
            self.by_path[path].append(i)
            self.lines.append((path, int(a.get("start_line", 0)), int(a.get("end_line", 0))))
        self.paths = list(self.by_path)

    def names_one(self, name: str) -> bool:
        """Whether a mentioned name (``ClientIP``, ``Context.ClientIP``) names exactly one
        function: a dotted one by its last two parts, else by its short name."""
        parts = name.split("#")[0].split(".")
        table = self.by_qual if len(parts) > 1 else self.by_short
        return len(set(table.get(".".join(parts[-2:]), ()))) == 1

    def files_matching(self, mention: str) -> list[str]:
        """Graph paths that end with the mentioned path (``a/b.py`` matches ``src/a/b.py``)."""
        m = mention.replace("\\", "/").lstrip("./")
        if not m:
            return []
        return [p for p in self.paths if p == m or p.endswith("/" + m) or m.endswith("/" + p)]

    def at_line(self, path: str, line: int) -> int | None:
        """The innermost function of ``path`` containing ``line``."""
        best: tuple[int, int] | None = None
        for i in self.by_path.get(path, []):
            _, s, e = self.lines[i]
            if s <= line <= e and (best is None or e - s < best[1]):
                best = (i, e - s)
        return None if best is None else best[0]


def _ambiguous(hits: Iterable[int]) -> bool:
    return len(list(hits)) > MAX_NAME_MATCHES


def signal_scores(
    table: NameTable, sig: IssueSignals, size: int
) -> tuple[list[float], dict[int, str]]:
    """Evidence score per function (0 = none) and a short description of the strongest one.

    Long because each kind of signal (frame, path, qualified name, name, member) is matched
    against the table in one place, in order of strength."""
    score = [0.0] * size
    why: dict[int, str] = {}

    def bump(i: int, kind: str, detail: str) -> None:
        s = STRENGTH[kind]
        if s > score[i]:
            score[i] = s
            why[i] = f"{kind}: {detail}"

    for path, line, func in sig.frames:
        files = table.files_matching(path) if path else []
        placed = False
        for f in files:
            if line is not None:
                i = table.at_line(f, line)
                if i is not None:
                    bump(i, "frame", f"{f}:{line}")
                    placed = True
        if not placed and func:
            short = func.split(".")[-1]
            cands = table.by_qual.get(func, []) if "." in func else []
            if (
                not cands
                and short not in COMMON_NAMES
                and not _ambiguous(table.by_short.get(short, []))
            ):
                cands = table.by_short.get(short, [])
            if files:
                cands = [i for i in cands if table.lines[i][0] in files] or cands
            for i in cands:
                bump(i, "frame", func)
    for mention in sig.paths:
        for f in table.files_matching(mention):
            for i in table.by_path[f]:
                bump(i, "file", f)
    for names, kind in ((sig.code_names, "backtick"), (sig.prose_names, "name")):
        for name in names:
            parts = name.split(".")
            if len(parts) > 1:
                q = ".".join(parts[-2:])
                for i in table.by_qual.get(q, []):
                    bump(i, "qualified", q)
                if parts[-2] in table.by_class and len(parts[-1]) >= MIN_NAME_CHARS:
                    continue
            short = parts[-1]
            if len(short) < MIN_NAME_CHARS or short in COMMON_NAMES:
                continue
            hits = table.by_short.get(short, [])
            if hits and not _ambiguous(hits):
                for i in hits:
                    bump(i, kind, short)
            if 0 < len(table.scopes.get(short, ())) <= MAX_MEMBER_CLASSES:
                for i in table.by_scope[short]:
                    bump(i, "member", f"class {short}")
            comp = table.by_component.get(short, [])
            if short[:1].isupper() and comp and not _ambiguous(comp):
                for i in comp:
                    bump(i, "component", short)
    return score, why
