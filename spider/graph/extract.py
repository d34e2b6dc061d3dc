"""Per-file extraction: parse one file and turn its query captures into an outline.

Every language's syntax knowledge is in ``queries/<lang>.scm``; this module is
language-independent. It understands these capture names (aider's repo-map style):

``@definition.<kind>`` + ``@name.definition.<kind>``
    A class-like node (kind ``class``, ``interface``, ``enum``, ``struct``, ``union``,
    ``trait``, ``module``, ``object``, ``record``) or a function node (kind ``function``,
    ``method``, ``constructor``). The definition capture gives the line span, the name
    capture the name. A name written with separators (``A::f``, ``Foo::Bar``, ``a.b``)
    is split: the last segment is the name, the others are its owner.
``@name.owner``
    Inside a definition: the type that owns a definition written outside its body (a Go
    receiver, ``Foo.prototype.bar = ...``, a Kotlin extension's receiver).
``@self.definition.<kind>``
    Inside a definition: the identifier that means "this object" in its body (Go receiver).
``@scope`` + ``@name.scope``
    A construct that qualifies the names defined inside it without being a node itself
    (Rust ``impl`` blocks, TS namespaces, object literals bound to a name). When a class of
    that name is defined in the same file, the scope's definitions belong to that class.
``@reference.call`` + ``@name.reference.call`` [+ ``@receiver.reference.call``]
    A call (or instantiation) by name, with the object it is called on.
``@reference.inherits`` + ``@name.reference.inherits`` [+ ``@receiver.reference.inherits``]
    A base class / implemented interface / mixin of the enclosing class.
``@reference.import`` + ``@module.reference.import`` or ``@path.reference.import``
    [+ ``@name.reference.import``, ``@alias.reference.import``]
    An import of a module (dotted name or path string; ``@path`` means relative to the
    importing file), optionally of one name from it (``*`` or ``.``: all of them), optionally
    bound to an alias.
``@name.package``
    The package or namespace the file declares (Java, Kotlin, C#, PHP, Go).

Two directives, comments to tree-sitter, shape what a query file compiles to:

``;; inherits: parent[, other]``
    In the file's header (before its first pattern): compile the parents' patterns first
    (each file once, parents in the order named), then this file's own. A child holds
    only what its language adds (``typescript`` inherits ``javascript``, ``cpp``
    inherits ``c``).
``;; only-grammar: g[, h]``
    The lines after it, up to the next such line, are compiled only for those grammars
    (JSX nodes exist in the ``javascript`` and ``tsx`` grammars, not ``typescript``). In
    an inherited file it is the child's grammar that counts, so a parent keeps what only
    it parses in such a section.

Captures starting with ``_`` only serve predicates. The definition with the widest span
wins when two patterns capture the same name (decorated Python definitions start at
their first decorator, which is how the benchmark's ground truth counts them).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from tree_sitter import Node, Parser, Query, QueryCursor, Tree
from tree_sitter_language_pack import get_language

from spider.models import (  # re-exported: the graph's naming of anonymous exports
    ANONYMOUS_EXPORTS as ANONYMOUS_EXPORTS,
)
from spider.models import SCRIPT_SUFFIXES as SCRIPT_SUFFIXES
from spider.models import anonymous_export_name as anonymous_export_name
from spider.models import display_name as display_name

CLASS_KINDS = frozenset(
    {"class", "interface", "enum", "struct", "union", "trait", "module", "object", "record"}
)
FUNCTION_KINDS = frozenset({"function", "method", "constructor"})
MEMBER_KINDS = frozenset({"method", "constructor"})

ONLY_GRAMMAR_MARKER = ";; only-grammar:"
INHERITS_MARKER = ";; inherits:"
QUERY_DIRECTORY = "queries"  # package data of spider.graph: <stem>.scm per query file
QUERY_SUFFIX = ".scm"
READ_CHUNK_BYTES = 1 << 16  # how much source the parser is handed per read callback
MAX_RECEIVER_CHARS = 120  # longer receivers are expressions, useless for name resolution
MAX_NESTING_DEPTH = 32  # deeper definitions are generated or pathological; ids would explode
UNKNOWN_RECEIVER = "?"  # a member call on an expression we cannot name
WILDCARD_NAMES = frozenset({"*", "."})  # `from m import *`, Go's dot import
PATH_SEPARATOR = "::"  # receivers written as a path (C++, Rust, PHP) may name a namespace

_SEPARATORS = re.compile(r"::|\\|\.")
_GENERIC_ARGS = re.compile(r"<[^<>]*>")
_QUOTES = "\"'`"


class ParseTimeout(Exception):
    """The parser ran past the per-file time budget."""


class ParseFailure(Exception):
    """The parser gave up on a file (or produced nothing usable)."""


class QueryInheritanceError(Exception):
    """A query file's ``;; inherits:`` names a missing file, comes after a pattern, or
    leads back to the file itself: a defect of the package's queries, not of the input."""


@dataclass(slots=True)
class Definition:
    """One class or function of a file, with its place in the file's tree."""

    kind: str  # "class" or "function"
    label: str  # the capture's kind: class, interface, ..., function, method, constructor
    name: str  # simple name
    qualname: str  # full qualified name within the file ("Outer.Inner.method")
    parent: int  # index of the enclosing definition node in the file, -1 for the file
    start_line: int
    end_line: int
    text: str
    member: bool  # callable through an object or type (methods, object-literal members)
    owner_name: str  # simple name of the type a member belongs to ("" if none)
    self_name: str | None  # identifier meaning "this object" in the body, if declared


@dataclass(slots=True)
class CallSite:
    """A call made inside a function."""

    caller: int  # index into FileOutline.definitions
    name: str
    receiver: str | None  # None for a bare call
    is_path: bool = False  # written `ns::f()`: the receiver may be a namespace


@dataclass(slots=True)
class BaseRef:
    """A base-class name written in a class header."""

    cls: int  # index into FileOutline.definitions
    name: str
    receiver: str | None


@dataclass(slots=True)
class ImportRef:
    """One imported module (and optionally one name from it)."""

    module: str
    name: str | None
    alias: str | None
    relative: bool  # a path relative to the importing file


@dataclass(slots=True)
class FileOutline:
    """What a file defines and references, as plain data."""

    path: str
    language: str
    lines: int
    definitions: list[Definition] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    bases: list[BaseRef] = field(default_factory=list)
    imports: list[ImportRef] = field(default_factory=list)
    packages: list[str] = field(default_factory=list)


# -- queries and parsing ----------------------------------------------------------------


QueryReader = Callable[[str], str]  # query stem -> the text of its file


def read_query_file(query_stem: str) -> str:
    """The text of ``queries/<stem>.scm`` from the package (FileNotFoundError if none)."""
    return (
        resources.files("spider.graph")
        .joinpath(QUERY_DIRECTORY, f"{query_stem}{QUERY_SUFFIX}")
        .read_text(encoding="utf-8")
    )


def _is_pattern_line(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith(";")


def query_parents(query_stem: str, text: str) -> list[str]:
    """The stems a query file names in its ``;; inherits:`` lines, in order."""
    parents: list[str] = []
    seen_pattern = False
    for line in text.splitlines():
        if line.startswith(INHERITS_MARKER):
            if seen_pattern:
                raise QueryInheritanceError(
                    f"{query_stem}{QUERY_SUFFIX}: {INHERITS_MARKER!r} must come before the patterns"
                )
            parents.extend(line[len(INHERITS_MARKER) :].replace(",", " ").split())
        elif _is_pattern_line(line):
            seen_pattern = True
    return parents


def query_lineage(query_stem: str, read: QueryReader = read_query_file) -> list[tuple[str, str]]:
    """The files a query compiles from, as (stem, text): every ancestor once, each after
    its own parents, the query itself last."""
    done: dict[str, str] = {}

    def visit(stem: str, chain: tuple[str, ...]) -> None:
        if stem in chain:
            raise QueryInheritanceError(
                f"query files inherit in a cycle: {' -> '.join((*chain, stem))}"
            )
        if stem in done:
            return
        try:
            text = read(stem)
        except FileNotFoundError as exc:
            if not chain:
                raise
            raise QueryInheritanceError(
                f"{chain[-1]}{QUERY_SUFFIX} inherits {stem!r}, which has no query file"
            ) from exc
        for parent in query_parents(stem, text):
            visit(parent, (*chain, stem))
        done[stem] = text

    visit(query_stem, ())
    return list(done.items())


def _grammar_lines(text: str, grammar: str) -> list[str]:
    """A file's lines without directives, keeping ``;; only-grammar:`` sections only for grammar."""
    kept: list[str] = []
    keep = True
    for line in text.splitlines():
        if line.startswith(ONLY_GRAMMAR_MARKER):
            grammars = line[len(ONLY_GRAMMAR_MARKER) :].replace(",", " ").split()
            keep = grammar in grammars
            continue
        if keep and not line.startswith(INHERITS_MARKER):
            kept.append(line)
    return kept


def query_source(query_stem: str, grammar: str, read: QueryReader = read_query_file) -> str:
    """The text a language's query compiles from for one grammar: its inherited files'
    lines, then its own (see the module docstring for the two directives)."""
    return "\n".join(
        line
        for _stem, text in query_lineage(query_stem, read)
        for line in _grammar_lines(text, grammar)
    )


@cache
def load_query(query_stem: str, grammar: str) -> Query:
    """The compiled query of a language for one grammar (cached per process)."""
    return Query(get_language(grammar), query_source(query_stem, grammar))


def parse_source(parser: Parser, data: bytes, timeout_s: float) -> Tree:
    """Parse under a time budget; raise ParseTimeout or ParseFailure."""
    deadline = time.monotonic() + timeout_s
    view = memoryview(data)
    timed_out = False

    def read(offset: int, _point: Any) -> memoryview:
        return view[offset : offset + READ_CHUNK_BYTES]

    def progress(_offset: int, _has_error: bool) -> bool:
        nonlocal timed_out
        if time.monotonic() > deadline:
            timed_out = True
        return timed_out

    try:
        tree = parser.parse(read, progress_callback=progress)
    except ValueError as exc:
        parser.reset()  # do not resume this parse on the next file
        if timed_out:
            raise ParseTimeout(f"parse exceeded {timeout_s}s") from exc
        raise ParseFailure(str(exc)) from exc
    if tree is None:
        parser.reset()
        raise ParseFailure("parser returned no tree")
    # A tree parsed through a callback holds no source, and query predicates (#eq?) read
    # node text from it (crashing without it); re-parsing with the old tree reuses every
    # node and costs about 1% of the first parse.
    return parser.parse(data, old_tree=tree)


# -- text helpers -----------------------------------------------------------------------


def _text(data: bytes, node: Node) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "replace")


def split_name(text: str) -> list[str]:
    """Split a written name (``A::B<T>::f``, ``Foo.bar``, ``App\\Models\\User``) into segments."""
    if text.isidentifier():  # the common case: one plain name
        return [text]
    text = text.strip().strip(_QUOTES)
    while "<" in text:
        stripped = _GENERIC_ARGS.sub("", text)
        if stripped == text:
            break
        text = stripped
    parts = [p.strip().strip(_QUOTES) for p in _SEPARATORS.split(text)]
    return [p for p in parts if p]


_TEMPLATE_PUNCT = re.compile(r"\s*([<>,&*()\[\]])\s*")


def specialisation_name(written: str) -> str:
    """A C++ template specialisation's class name with its arguments, blanks squeezed
    (``formatter<R,Char,enable_if_t<is_range<R>::value>>``): one name segment, so no
    ``.`` or ``#`` (they would read as a scope or a duplicate number)."""
    text = _TEMPLATE_PUNCT.sub(r"\1", " ".join(written.split()))
    return text.replace(".", "_").replace("#", "_")


def definition_name_text(data: bytes, node: Node) -> str:
    """The written name of a definition's name capture.

    A C++ conversion operator has no name token: ``operator bool() {}`` (possibly
    qualified, ``A::operator T&()``) is named by the text before its parameter list
    (``operator bool``, ``A::operator T&``), blanks collapsed.
    """
    inner = node
    while inner.type == "qualified_identifier" and inner.child_by_field_name("name") is not None:
        inner = inner.child_by_field_name("name")
    if inner.type != "operator_cast":
        return _text(data, node)
    end = inner.end_byte
    stack = [inner]
    while stack:  # the parameter list, under pointer/reference/function declarators
        n = stack.pop()
        if n.type == "parameter_list":
            end = min(end, n.start_byte)
        stack.extend(n.named_children)
    return " ".join(data[node.start_byte : end].decode("utf-8", "replace").split())


def _receiver(data: bytes, node: Node | None) -> str | None:
    if node is None:
        return None
    if node.end_byte - node.start_byte > MAX_RECEIVER_CHARS:
        return UNKNOWN_RECEIVER
    text = _text(data, node).strip()
    if not text or len(text) > MAX_RECEIVER_CHARS or "\n" in text:
        return UNKNOWN_RECEIVER
    return text


def _end_line(node: Node) -> int:
    """1-based inclusive last line (a span ending at column 0 ends on the line before)."""
    row, col = node.end_point
    start_row = node.start_point[0]
    return row + 1 if col > 0 or row == start_row else row


def count_lines(data: bytes) -> int:
    """Number of lines of a file (at least 1)."""
    if not data:
        return 1
    n = data.count(b"\n")
    return n + (0 if data.endswith(b"\n") else 1)


# -- raw captures -----------------------------------------------------------------------


@dataclass(slots=True)
class _Item:
    """A definition or a scope before qualification."""

    is_scope: bool
    kind: str
    label: str
    segments: list[str]  # written name split into segments
    owner: list[str]
    start: int
    end: int
    name_start: int
    node: Node
    self_name: str | None
    parent: int = -1


@dataclass(slots=True)
class _Ref:
    is_call: bool
    name: str
    receiver: str | None
    pos: int
    is_path: bool  # written `ns::f`: the receiver may be a namespace, not a type
    holder: int = -1  # innermost enclosing item


_ROLE_DEF, _ROLE_SCOPE, _ROLE_CALL, _ROLE_INHERITS, _ROLE_IMPORT, _ROLE_PACKAGE = range(6)


def _role(keys: list[str]) -> tuple[int, str]:
    for k in keys:
        if k.startswith("definition."):
            return _ROLE_DEF, k[len("definition.") :]
    if "scope" in keys:
        return _ROLE_SCOPE, ""
    if "name.reference.call" in keys:
        return _ROLE_CALL, ""
    if "name.reference.inherits" in keys:
        return _ROLE_INHERITS, ""
    if "module.reference.import" in keys or "path.reference.import" in keys:
        return _ROLE_IMPORT, ""
    if "name.package" in keys:
        return _ROLE_PACKAGE, ""
    return -1, ""


def _collect(
    tree: Tree, query: Query, data: bytes
) -> tuple[list[_Item], list[_Ref], list[ImportRef], list[str]]:
    """One tree-sitter query pass: definitions, references, imports and packages by capture name.

    Long because every capture kind is dispatched in one loop over the query's matches (a match carries captures of several kinds)."""
    items: list[_Item] = []
    by_node: dict[tuple[int, int], int] = {}
    refs: list[_Ref] = []
    imports: list[ImportRef] = []
    packages: list[str] = []
    roles: dict[int, tuple[int, str]] = {}
    for pattern, caps in QueryCursor(query).matches(tree.root_node):
        role = roles.get(pattern)
        if role is None:
            role = roles[pattern] = _role(list(caps))
        kind, label = role
        if kind in (_ROLE_CALL, _ROLE_INHERITS):
            key = "call" if kind == _ROLE_CALL else "inherits"
            name_node = caps[f"name.reference.{key}"][0]
            written = _text(data, name_node)
            segs = split_name(written)
            if not segs:
                continue
            rec = caps.get(f"receiver.reference.{key}")
            receiver = _receiver(data, rec[0]) if rec else None
            is_path = receiver is None and len(segs) > 1 and PATH_SEPARATOR in written
            if receiver is None and len(segs) > 1:  # written as a path: geo::twice, Self::new
                receiver = ".".join(segs[:-1])
            refs.append(_Ref(kind == _ROLE_CALL, segs[-1], receiver, name_node.start_byte, is_path))
        elif kind in (_ROLE_DEF, _ROLE_SCOPE):
            if kind == _ROLE_DEF:
                node = caps[f"definition.{label}"][0]
                name_node = caps[f"name.definition.{label}"][0]
            else:
                node = caps["scope"][0]
                name_node = caps["name.scope"][0]
            owner_nodes = caps.get("name.owner")
            self_name = next(
                (_text(data, v[0]) for k, v in caps.items() if k.startswith("self.")), None
            )
            key = (node.start_byte, node.end_byte)
            known = by_node.get(key)
            if known is not None:  # same node from another pattern: keep the first, fill gaps
                it = items[known]
                if it.is_scope == (kind == _ROLE_SCOPE):
                    if not it.owner and owner_nodes:
                        it.owner = split_name(_text(data, owner_nodes[0]))
                    it.self_name = it.self_name or self_name
                    continue
            # "#" would read as a duplicate number in the node id (JS string keys)
            written = definition_name_text(data, name_node)
            if name_node.type == "template_type":  # a specialisation: one segment, args kept
                segs = [specialisation_name(written)]
            else:
                segs = [seg.replace("#", "_") for seg in split_name(written)]
            if not segs:
                continue
            if kind == _ROLE_DEF:
                dkind = "class" if label in CLASS_KINDS else "function"
                if label not in CLASS_KINDS and label not in FUNCTION_KINDS:
                    continue
            else:
                dkind = "scope"
            by_node[key] = len(items)
            items.append(
                _Item(
                    kind == _ROLE_SCOPE,
                    dkind,
                    label,
                    segs,
                    split_name(_text(data, owner_nodes[0])) if owner_nodes else [],
                    node.start_byte,
                    node.end_byte,
                    name_node.start_byte,
                    node,
                    self_name,
                )
            )
        elif kind == _ROLE_IMPORT:
            rel = "path.reference.import" in caps
            mod = caps["path.reference.import" if rel else "module.reference.import"][0]
            module = _text(data, mod).strip().strip(_QUOTES + "<>")
            if not module:
                continue
            names = caps.get("name.reference.import")
            aliases = caps.get("alias.reference.import")
            imports.append(
                ImportRef(
                    module,
                    _text(data, names[0]).strip() if names else None,
                    _text(data, aliases[0]).strip() if aliases else None,
                    rel,
                )
            )
        elif kind == _ROLE_PACKAGE:
            packages.append(_text(data, caps["name.package"][0]).strip())
    return _drop_values(_dedupe_names(items)), refs, imports, packages


def _dedupe_names(items: list[_Item]) -> list[_Item]:
    """Two definitions sharing a name node: keep the outermost (decorated form)."""
    best: dict[tuple[bool, int], _Item] = {}
    for it in items:
        key = (it.is_scope, it.name_start)
        cur = best.get(key)
        if cur is None or (it.end - it.start) > (cur.end - cur.start):
            best[key] = it
    kept = {id(v) for v in best.values()}
    return [it for it in items if id(it) in kept]


def _drop_values(items: list[_Item]) -> list[_Item]:
    """A function that is the direct value of another function definition is that
    definition, not a nested one: ``const f = function g() {}`` is ``f``, not ``f.g``
    (patterns that name a function expression by itself also match it there).

    Children are read downwards: ``Node.parent`` walks from the root, quadratic on the
    deeply nested files this module must survive.
    """
    values: set[tuple[int, int]] = set()
    for it in items:
        if not it.is_scope and it.kind == "function":
            values.update(
                (c.start_byte, c.end_byte)
                for c in it.node.named_children
                if (c.start_byte, c.end_byte) != (it.start, it.end)
            )
    if not values:
        return items
    return [
        it
        for it in items
        if it.is_scope or it.kind != "function" or (it.start, it.end) not in values
    ]


# -- outline ----------------------------------------------------------------------------


def _nest(items: list[_Item], refs: list[_Ref]) -> list[_Item]:
    """Set each item's and reference's innermost enclosing item (one sweep, no recursion).

    Definitions nested deeper than MAX_NESTING_DEPTH are dropped (their code, and the
    calls in it, belong to the deepest kept definition). Returns the kept items, with
    parents and holders re-indexed into that list.
    """
    events: list[tuple[int, int, int, int]] = []
    for i, it in enumerate(items):
        events.append((it.start, -it.end, 0, i))
    for j, r in enumerate(refs):
        events.append((r.pos, -(r.pos + 1), 1, j))
    events.sort()
    stack: list[int] = []
    kept = [False] * len(items)
    for _start, neg_end, is_ref, idx in events:
        end = -neg_end
        while stack and items[stack[-1]].end < end:
            stack.pop()
        holder = stack[-1] if stack else -1
        if is_ref:
            refs[idx].holder = holder
        elif len(stack) < MAX_NESTING_DEPTH:
            items[idx].parent = holder
            kept[idx] = True
            stack.append(idx)
    new_index = {old: new for new, old in enumerate(i for i, k in enumerate(kept) if k)}
    out = [it for it, k in zip(items, kept, strict=True) if k]
    for it in out:
        it.parent = new_index.get(it.parent, -1)
    for r in refs:
        r.holder = new_index.get(r.holder, -1)
    return out


def build_outline(path: str, language: str, data: bytes, tree: Tree, query: Query) -> FileOutline:
    """Turn a parsed file into definitions with qualified names, calls, bases and imports."""
    raw_items, refs, imports, packages = _collect(tree, query, data)
    raw_items.sort(key=lambda it: (it.start, -it.end))
    raw_items = _nest(raw_items, refs)
    outline = FileOutline(path, language, count_lines(data), imports=imports, packages=packages)
    _qualify(raw_items, outline, data)
    index_of = _def_index(raw_items)
    for r in refs:
        _attach_ref(r, raw_items, index_of, outline)
    return outline


def _def_index(items: list[_Item]) -> dict[int, int]:
    out: dict[int, int] = {}
    for i, it in enumerate(items):
        if not it.is_scope:
            out[i] = len(out)
    return out


def _qualify(items: list[_Item], outline: FileOutline, data: bytes) -> None:
    """Give every definition its qualified name, node parent and member facts.

    Long because the pre-pass (class names for owners written before the class) and the main
    pass share their indices; apart they would rebuild them."""
    n = len(items)
    # Pre-pass: structural qualified names of classes, for owners written before the class.
    pre_prefix: list[tuple[str, ...]] = [()] * n
    pre_classes: dict[str, int] = {}
    for i, it in enumerate(items):
        base = pre_prefix[it.parent] if it.parent >= 0 else ()
        pre_prefix[i] = base + tuple(it.owner) + tuple(it.segments)
        if it.kind == "class":
            pre_classes.setdefault(".".join(pre_prefix[i]), i)

    prefix: list[tuple[str, ...]] = [()] * n
    node_of: list[int] = [-1] * n  # the definition that children of item i attach to
    scope_owner: list[str] = [""] * n
    classes: dict[str, int] = {}
    index_of = _def_index(items)

    def qual_of(i: int) -> tuple[str, ...]:
        return prefix[i] if prefix[i] else pre_prefix[i]

    def find_class(segs: tuple[str, ...], context: tuple[str, ...], me: int) -> int:
        keys = [".".join(context + segs), ".".join(segs)] if context else [".".join(segs)]
        for key in keys:
            for table in (classes, pre_classes):
                hit = table.get(key)
                if hit is not None and hit != me:
                    return hit
        suffix = "." + ".".join(segs)
        hits = {
            v
            for table in (classes, pre_classes)
            for k, v in table.items()
            if k.endswith(suffix) and v != me
        }
        return hits.pop() if len(hits) == 1 else -1

    for i, it in enumerate(items):
        p = it.parent
        base = prefix[p] if p >= 0 else ()
        base_node = node_of[p] if p >= 0 else -1
        owner = tuple(it.owner) + tuple(it.segments[:-1])
        simple = it.segments[-1]
        if it.is_scope:
            segs = tuple(it.segments)
            cls = find_class(segs, base, i)
            if cls >= 0:
                prefix[i], node_of[i] = qual_of(cls), cls
            else:
                prefix[i], node_of[i] = base + segs, base_node
            scope_owner[i] = segs[-1]
            continue
        member = False
        owner_name = ""
        parent_node = base_node
        if owner:
            member, owner_name = True, owner[-1]
            cls = find_class(owner, base, i)
            if cls >= 0:
                parent_node, qual = cls, (*qual_of(cls), simple)
                owner_name = qual_of(cls)[-1]
            else:
                qual = (*base, *owner, simple)
        else:
            qual = (*base, simple)
            if p >= 0 and items[p].is_scope:
                member, owner_name = True, scope_owner[p]
            elif parent_node >= 0 and (
                items[parent_node].kind == "class" or it.label in MEMBER_KINDS
            ):  # a method of a class, or `this.f = function` in a constructor function
                member, owner_name = True, items[parent_node].segments[-1]
        prefix[i], node_of[i] = qual, i
        if it.kind == "class":
            classes.setdefault(".".join(qual), i)
        node = it.node
        outline.definitions.append(
            Definition(
                kind=it.kind,
                label=it.label,
                name=simple,
                qualname=".".join(qual),
                parent=index_of[parent_node] if parent_node >= 0 else -1,
                start_line=node.start_point[0] + 1,
                end_line=_end_line(node),
                text=data[it.start : it.end].decode("utf-8", "replace"),
                member=member,
                owner_name=owner_name,
                self_name=it.self_name,
            )
        )
    # remember, per item, the definition its children attach to (for references)
    for i in range(n):
        items[i].parent = node_of[i]


def _attach_ref(r: _Ref, items: list[_Item], index_of: dict[int, int], out: FileOutline) -> None:
    if r.holder < 0:
        return
    target = items[r.holder].parent  # node_of(holder), stored by _qualify
    if target < 0:
        return
    d = out.definitions[index_of[target]]
    if r.is_call:
        if d.kind == "function":
            out.calls.append(CallSite(index_of[target], r.name, r.receiver, r.is_path))
    elif d.kind == "class":
        out.bases.append(BaseRef(index_of[target], r.name, r.receiver))
