"""What every resolution rule looks names up in: an index of every definition.

``LinkerBase`` indexes the outlines once (definitions by file, directory, family, owner,
module path) and offers the lookups shared by the import, inheritance and call rules:
scopes, constructors, base-class lineage and the names a module exports.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from spider.graph.extract import FileOutline, split_name
from spider.graph.languages import LanguageSpec, spec_for_path
from spider.graph.model import CodeGraph

CONSTRUCTOR_NAMES = frozenset({"__init__", "constructor", "initialize", "__construct", "init"})
RUBY_NEW = "new"  # Foo.new(...) runs Foo#initialize
IMPORT_FANOUT_CAP = 50  # a wildcard / namespace / package import links at most this many files
MAX_BASE_DEPTH = 8  # base-class hops followed when looking up self.f()
MAX_REEXPORT_DEPTH = 4  # `from a import f` where a itself imports f: hops followed
GLOBAL_MAX_CANDIDATES = 1  # the repository-wide scope links only a unique match


@dataclass(slots=True)
class Definition:
    """One class or function, with what name resolution needs to know of it."""

    id: str
    path: str
    family: str
    kind: str
    name: str
    label: str
    member: bool
    owner_name: str
    parent: str  # id of the enclosing definition, or the file path
    self_name: str | None


@dataclass(slots=True)
class FileIndex:
    """One file's definitions by name, and the names its imports bind."""

    spec: LanguageSpec
    outline: FileOutline
    ids: list[str]
    top: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    members: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    classes: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    bindings: dict[str, list[tuple[str, ...]]] = field(default_factory=lambda: defaultdict(list))
    stars: list[str] = field(default_factory=list)


Levels = Iterator[tuple[list[str], int]]  # scopes tried in order, each with its own cap


class LinkerBase:
    """Indexes of every definition, and the lookups the resolution rules share."""

    def __init__(
        self, cg: CodeGraph, outlines: list[FileOutline], ids: dict[str, list[str]], cap: int
    ) -> None:
        self.cg = cg
        self.cap = cap
        self.defs: dict[str, Definition] = {}
        self.files: dict[str, FileIndex] = {}
        self.children: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        self.ctors: dict[str, list[str]] = defaultdict(list)
        self.nonmembers: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.members: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.by_owner: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        self.classes: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.dir_files: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.dir_top: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(
            lambda: defaultdict(list)
        )
        self.path_suffix: dict[tuple[str, tuple[str, ...]], list[str]] = defaultdict(list)
        self.module_suffix: dict[tuple[str, tuple[str, ...]], list[str]] = defaultdict(list)
        self.packages: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.bases: dict[str, list[str]] = defaultdict(list)
        self._exported: dict[tuple[str, str], list[str]] = {}
        headers_cpp = any(o.language == "cpp" for o in outlines)
        for o in outlines:
            spec = spec_for_path(o.path, headers_are_cpp=headers_cpp)
            assert spec is not None
            self._index_file(o, spec, ids[o.path])

    # -- indexing -------------------------------------------------------------------------
    def _index_file(self, o: FileOutline, spec: LanguageSpec, ids: list[str]) -> None:
        fam = spec.family
        fi = self.files[o.path] = FileIndex(spec, o, ids)
        directory = posixpath.dirname(o.path)
        self.dir_files[(fam, directory)].append(o.path)
        segs = tuple(o.path.split("/"))
        for k in range(1, len(segs) + 1):
            self.path_suffix[(fam, segs[-k:])].append(o.path)
        stem, _ = posixpath.splitext(segs[-1])
        mod = (*segs[:-1], stem) if stem not in spec.module_stems else segs[:-1]
        for k in range(1, len(mod) + 1):
            self.module_suffix[(fam, mod[-k:])].append(o.path)
        for pkg in o.packages:
            self.packages[(fam, ".".join(split_name(pkg)))].append(o.path)
        for d, node_id in zip(o.definitions, ids, strict=True):  # records first: a Go
            parent = ids[d.parent] if d.parent >= 0 else o.path  # method may precede its type
            self.defs[node_id] = Definition(
                node_id,
                o.path,
                fam,
                d.kind,
                d.name,
                d.label,
                d.member,
                d.owner_name,
                parent,
                d.self_name,
            )
        for d, node_id in zip(o.definitions, ids, strict=True):
            parent = ids[d.parent] if d.parent >= 0 else o.path
            if d.parent < 0:
                fi.top[d.name].append(node_id)
                self.dir_top[(fam, directory)][d.name].append(node_id)
            if d.kind == "class":
                fi.classes[d.name].append(node_id)
                self.classes[(fam, d.name)].append(node_id)
                continue
            owner = self.defs.get(parent)
            in_class = owner is not None and owner.kind == "class"
            if d.member:
                fi.members[d.name].append(node_id)
                self.members[(fam, d.name)].append(node_id)
                if d.owner_name and not in_class:  # declared outside its type's body
                    self.by_owner[(fam, d.owner_name, d.name)].append(node_id)
            elif d.parent < 0:
                self.nonmembers[(fam, d.name)].append(node_id)
            self.children[parent][d.name].append(node_id)
            if (
                owner is not None
                and in_class
                and (
                    d.label == "constructor" or d.name in CONSTRUCTOR_NAMES or d.name == owner.name
                )
            ):
                self.ctors[parent].append(node_id)

    # -- helpers --------------------------------------------------------------------------
    def _callables(self, ids: Iterable[str]) -> list[str]:
        """Functions among ids, with classes replaced by their constructors."""
        out: list[str] = []
        for i in ids:
            d = self.defs[i]
            if d.kind == "function":
                out.append(i)
                continue
            for c in self._lineage(i):  # a class without a constructor runs its base's
                if c in self.ctors:
                    out.extend(self.ctors[c])
                    break
        return list(dict.fromkeys(out))

    def _classes_only(self, ids: Iterable[str]) -> list[str]:
        """The classes among ids."""
        return [i for i in ids if self.defs[i].kind == "class"]

    def _decide(self, levels: Levels) -> list[str]:
        """The first non-empty scope decides: its ids if few enough, else nothing."""
        for ids, limit in levels:
            if ids:
                uniq = list(dict.fromkeys(ids))
                return uniq if len(uniq) <= limit else []
        return []

    def _class_of(self, d: Definition) -> str | None:
        """The nearest class enclosing a definition."""
        p = self.defs.get(d.parent)
        while p is not None:
            if p.kind == "class":
                return p.id
            p = self.defs.get(p.parent)
        return None

    def _lineage(self, cls: str) -> Iterator[str]:
        """A class, then its bases breadth-first (bounded, cycle-safe)."""
        seen = {cls}
        frontier = [cls]
        for _ in range(MAX_BASE_DEPTH + 1):
            nxt: list[str] = []
            for c in frontier:
                yield c
                for b in self.bases.get(c, ()):
                    if b not in seen:
                        seen.add(b)
                        nxt.append(b)
            if not nxt:
                return
            frontier = nxt

    def _member_in_lineage(self, cls: str, name: str, *, skip_self: bool = False) -> list[str]:
        for c in self._lineage(cls):
            if skip_self and c == cls:
                continue
            hits = self.children.get(c, {}).get(name)
            if hits:
                return hits
            d = self.defs[c]
            owned = self.by_owner.get((d.family, d.name, name))
            if owned:
                return owned  # methods declared outside the type's file (Go, Rust impls)
        return []

    def _type_members(self, classes: list[str], name: str) -> list[str]:
        out: list[str] = []
        for c in classes:
            hits = self._member_in_lineage(c, name)
            if not hits and name == RUBY_NEW:
                hits = self.ctors.get(c, [])
            out.extend(hits)
        return out

    def _in_files(self, files: Iterable[str], name: str) -> list[str]:
        out: list[str] = []
        for f in files:
            out.extend(self.files[f].top.get(name, ()))
        return out

    def _same_dir(self, fi: FileIndex, name: str) -> list[str]:
        """Top-level definitions named ``name`` in the other files of the same directory."""
        path = fi.outline.path
        table = self.dir_top.get((fi.spec.family, posixpath.dirname(path)))
        hits = table.get(name, ()) if table else ()
        return [i for i in hits if self.defs[i].path != path]

    def exported(self, path: str, name: str, depth: int = 0) -> list[str]:
        """Top-level definitions a module offers under a name (following re-exports)."""
        key = (path, name)
        hit = self._exported.get(key)
        if hit is not None:
            return hit
        fi = self.files.get(path)
        out: list[str] = list(fi.top.get(name, ())) if fi else []
        if fi is not None and not out and depth < MAX_REEXPORT_DEPTH:
            self._exported[key] = []  # cycle guard
            for target in fi.bindings.get(name, ()):
                out.extend(self._expand(target, depth + 1))
            for star in fi.stars:
                if not out:
                    out.extend(self.exported(star, name, depth + 1))
        self._exported[key] = out
        return out

    def _expand(self, target: tuple[str, ...], depth: int = 0) -> list[str]:
        """Definition ids a binding stands for (a module binding stands for none)."""
        if target[0] == "def":
            return [target[1]]
        if target[0] == "from":
            return self.exported(target[1], target[2], depth)
        return []

    # -- shared by the import rules ------------------------------------------------------
    def _bind(self, fi: FileIndex, name: str | None, target: tuple[str, ...]) -> None:
        if name:
            fi.bindings[name].append(target)

    def _pick(self, files: list[str], importer: str) -> str:
        """The likeliest of several files for one module: nearest to the importer."""
        here = importer.split("/")[:-1]

        def key(f: str) -> tuple[int, int, str]:
            parts = f.split("/")[:-1]
            common = 0
            for a, b in zip(parts, here, strict=False):
                if a != b:
                    break
                common += 1
            return (-common, len(parts), f)

        return min(files, key=key)

    def _module_file(self, fam: str, segs: tuple[str, ...], importer: str) -> str | None:
        files = self.module_suffix.get((fam, segs))
        return self._pick(files, importer) if files else None
