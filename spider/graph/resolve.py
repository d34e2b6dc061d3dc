"""Link file outlines into ``imports``, ``inherits`` and ``invokes`` edges, by name.

There is no type inference: a call is resolved by its name, trying scopes from the
nearest outwards, and the first scope that knows the name decides:

- bare call ``f()``: functions nested in the caller (and its enclosing functions); the
  caller's class and its bases (languages where a bare call can reach a sibling method);
  a name bound by an import; the file's top-level definitions; wildcard imports; the
  files of the same directory (same package); then a unique match in the repository;
- ``self.f()`` / ``this.f()`` / a Go receiver: the caller's class and its bases, then
  members named ``f`` in the same file, then a unique member in the repository;
- ``super().f()``: the bases only;
- ``x.f()``: ``x`` bound by an import (module: its top-level ``f``; class: its member
  ``f``), ``x`` naming a class (its member ``f``), then members named ``f`` in the same
  file, then a unique member in the repository.

A name that is a class resolves to the class's constructors. A scope matching more than
``max_candidates`` definitions links nothing (the name is too ambiguous); the repository
level links only a unique match. Languages are never mixed except within a family
(Java+Kotlin, JavaScript+TypeScript, C+C++).
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from spider.graph.extract import (
    UNKNOWN_RECEIVER,
    WILDCARD_NAMES,
    FileOutline,
    split_name,
)
from spider.graph.languages import LanguageSpec, spec_for_path
from spider.graph.model import CodeGraph

SELF_RECEIVERS = frozenset({"self", "this", "cls", "$this", "Self", "static", "@"})
SUPER_RECEIVERS = frozenset({"super", "super()", "base", "parent"})
CONSTRUCTOR_NAMES = frozenset({"__init__", "constructor", "initialize", "__construct", "init"})
RUBY_NEW = "new"  # Foo.new(...) runs Foo#initialize
RUST_PATH_PREFIXES = frozenset({"crate", "self", "super"})  # relative markers, not modules
DEFAULT_EXPORT = "default"  # the name given to `export default function () {}`
JS_PATH_ALIASES = ("@/", "~/")  # common bundler aliases for the source root

# Methods of the standard containers, strings, streams and promises of the supported
# languages: called on an object of unknown type they are almost never the repository's
# one method of that name, so the repository-wide level does not link them.
COMMON_METHOD_NAMES = frozenset(
    [
        "append",
        "extend",
        "insert",
        "remove",
        "pop",
        "clear",
        "index",
        "count",
        "sort",
        "reverse",
        "copy",
        "get",
        "items",
        "keys",
        "values",
        "update",
        "setdefault",
        "popitem",
        "add",
        "discard",
        "union",
        "intersection",
        "difference",
        "issubset",
        "join",
        "split",
        "rsplit",
        "strip",
        "lstrip",
        "rstrip",
        "replace",
        "format",
        "startswith",
        "endswith",
        "lower",
        "upper",
        "encode",
        "decode",
        "find",
        "rfind",
        "read",
        "write",
        "readline",
        "readlines",
        "close",
        "open",
        "seek",
        "tell",
        "flush",
        "send",
        "recv",
        "put",
        "exists",
        "push",
        "shift",
        "unshift",
        "slice",
        "splice",
        "concat",
        "map",
        "filter",
        "reduce",
        "forEach",
        "some",
        "every",
        "includes",
        "indexOf",
        "then",
        "catch",
        "finally",
        "toString",
        "valueOf",
        "hasOwnProperty",
        "call",
        "apply",
        "bind",
        "log",
        "error",
        "warn",
        "info",
        "debug",
        "trim",
        "substring",
        "charAt",
        "emit",
        "on",
        "off",
        "once",
        "set",
        "has",
        "delete",
        "next",
        "resolve",
        "reject",
        "equals",
        "hashCode",
        "size",
        "isEmpty",
        "contains",
        "containsKey",
        "length",
        "iterator",
        "stream",
        "collect",
        "println",
        "print",
        "Error",
        "String",
        "Len",
        "Less",
        "Swap",
        "Close",
        "Read",
        "Write",
        "Lock",
        "Unlock",
        "Done",
        "Wait",
        "each",
        "select",
        "inject",
        "ToString",
        "Equals",
        "GetHashCode",
        "Add",
        "Remove",
        "Count",
        "Contains",
        "Dispose",
    ]
)
IMPORT_FANOUT_CAP = 50  # a wildcard / namespace / package import links at most this many files
MAX_BASE_DEPTH = 8  # base-class hops followed when looking up self.f()
MAX_REEXPORT_DEPTH = 4  # `from a import f` where a itself imports f: hops followed
GLOBAL_MAX_CANDIDATES = 1  # the repository-wide scope links only a unique match


@dataclass(slots=True)
class _Def:
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
class _FileIndex:
    spec: LanguageSpec
    outline: FileOutline
    ids: list[str]
    top: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    members: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    classes: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    bindings: dict[str, list[tuple[str, ...]]] = field(default_factory=lambda: defaultdict(list))
    stars: list[str] = field(default_factory=list)


class _Linker:
    """Indexes of every definition, and the resolution rules above."""

    def __init__(
        self, cg: CodeGraph, outlines: list[FileOutline], ids: dict[str, list[str]], cap: int
    ) -> None:
        self.cg = cg
        self.cap = cap
        self.defs: dict[str, _Def] = {}
        self.files: dict[str, _FileIndex] = {}
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
        fi = self.files[o.path] = _FileIndex(spec, o, ids)
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
            self.defs[node_id] = _Def(
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

    def _decide(self, levels: Iterator[tuple[list[str], int]]) -> list[str]:
        """The first non-empty scope decides: its ids if few enough, else nothing."""
        for ids, limit in levels:
            if ids:
                uniq = list(dict.fromkeys(ids))
                return uniq if len(uniq) <= limit else []
        return []

    def _class_of(self, d: _Def) -> str | None:
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

    def _same_dir(self, fi: _FileIndex, name: str) -> list[str]:
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

    # -- imports --------------------------------------------------------------------------
    def link_imports(self) -> None:
        for path, fi in self.files.items():
            for imp in fi.outline.imports:
                files, defs = self._resolve_import(
                    fi, imp.module, imp.name, imp.alias, imp.relative
                )
                for f in files[:IMPORT_FANOUT_CAP]:
                    if f != path:
                        self.cg.add_edge(path, f, "imports")
                for d in defs:
                    self.cg.add_edge(path, d, "imports")
        for path, fi in self.files.items():  # from-imports resolved once every binding exists
            for targets in fi.bindings.values():
                for t in targets:
                    if t[0] == "from":
                        for d in self.exported(t[1], t[2]):
                            self.cg.add_edge(path, d, "imports")

    def _bind(self, fi: _FileIndex, name: str | None, target: tuple[str, ...]) -> None:
        if name:
            fi.bindings[name].append(target)

    def _resolve_import(
        self, fi: _FileIndex, module: str, name: str | None, alias: str | None, relative: bool
    ) -> tuple[list[str], list[str]]:
        """(files, definitions) an import names; records bindings and wildcard imports."""
        style = fi.spec.import_style
        if style == "python":
            return self._import_python(fi, module, name, alias)
        if style == "module" and not relative and "/" not in module:
            return self._import_module(fi, module, name, alias)
        return self._import_path(fi, module, name, alias, relative)

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

    def _import_python(
        self, fi: _FileIndex, module: str, name: str | None, alias: str | None
    ) -> tuple[list[str], list[str]]:
        fam, importer = fi.spec.family, fi.outline.path
        dots = len(module) - len(module.lstrip("."))
        segs = tuple(s for s in module.lstrip(".").split(".") if s)
        if dots:
            base = [b for b in posixpath.dirname(importer).split("/") if b]
            if dots - 1 > len(base):
                return [], []
            full = (*base[: len(base) - (dots - 1)], *segs)

            def find(key: tuple[str, ...]) -> str | None:
                return self._exact_module(key)
        else:
            full = segs

            def find(key: tuple[str, ...]) -> str | None:
                return self._module_file(fam, key, importer) if key else None

        target = find(full)
        if name is None:  # import a.b.c [as x]
            if target is None:
                return [], []
            if alias:
                self._bind(fi, alias, ("module", target))
            else:
                self._bind(fi, module, ("module", target))
                first = find(full[:1])
                if first is not None:
                    self._bind(fi, full[0], ("module", first))
            return [target], []
        if name in WILDCARD_NAMES:
            if target is None:
                return [], []
            fi.stars.append(target)
            return [target], []
        sub = find((*full, name))
        if sub is not None:  # from pkg import submodule
            self._bind(fi, alias or name, ("module", sub))
            return [sub], []
        if target is None:
            return [], []
        self._bind(fi, alias or name, ("from", target, name))
        return [target], []

    def _exact_module(self, segs: tuple[str, ...]) -> str | None:
        """A Python module by its path from the repository root."""
        base = "/".join(segs)
        for cand in (f"{base}.py", f"{base}/__init__.py" if base else "__init__.py"):
            if cand in self.files:
                return cand
        return None

    def _import_module(
        self, fi: _FileIndex, module: str, name: str | None, alias: str | None
    ) -> tuple[list[str], list[str]]:
        """Dotted imports (Java, Kotlin, C#, PHP, Rust): packages first, then paths."""
        fam, importer = fi.spec.family, fi.outline.path
        segs = split_name(module)
        if fi.spec.name == "rust":
            while segs and segs[0] in RUST_PATH_PREFIXES:
                segs = segs[1:]
        wildcard = name is not None and (name in WILDCARD_NAMES or name.endswith("*"))
        if name and not wildcard:
            segs = segs + split_name(name)
        if not segs:
            return [], []
        if wildcard:
            files = self.packages.get((fam, ".".join(segs)))
            if not files:
                one = self._module_file(fam, tuple(segs), importer)
                files = [one] if one else []
            fi.stars.extend(files[:IMPORT_FANOUT_CAP])
            return files, []
        for i in range(len(segs), 0, -1):  # declared packages/namespaces first
            head, rest = segs[:i], segs[i:]
            pkg_files = self.packages.get((fam, ".".join(head)))
            if not pkg_files:
                continue
            if not rest:  # a namespace (C# using): everything in it is visible
                fi.stars.extend(pkg_files[:IMPORT_FANOUT_CAP])
                return pkg_files, []
            defs = self._qualified_in(pkg_files, rest)
            if defs:
                for d in defs:
                    self._bind(fi, alias or rest[-1], ("def", d))
                return sorted({self.defs[d].path for d in defs}), defs
        for i in range(len(segs), 0, -1):  # then module paths (Rust, layouts without packages)
            head, rest = segs[:i], segs[i:]
            target = self._module_file(fam, tuple(head), importer)
            if target is None:
                continue
            if not rest:  # a file named like its type (Foo.java holds class Foo)?
                defs = self._classes_only(self.files[target].top.get(head[-1], ()))
            else:
                defs = self._qualified_in([target], rest)
            for d in defs:
                self._bind(fi, alias or (rest or head)[-1], ("def", d))
            if not defs:
                self._bind(fi, alias or head[-1], ("module", target))
            return [target], defs
        return [], []

    def _qualified_in(self, files: list[str], rest: list[str]) -> list[str]:
        """Definitions named by a dotted remainder (``Outer.Inner`` or a top-level name)."""
        qual = ".".join(rest)
        out: list[str] = []
        for f in files:
            fi = self.files[f]
            for d, node_id in zip(fi.outline.definitions, fi.ids, strict=True):
                if d.qualname == qual:
                    out.append(node_id)
        if not out and len(rest) == 1:
            out = self._in_files(files, rest[0])
        return out

    def _import_path(
        self, fi: _FileIndex, module: str, name: str | None, alias: str | None, relative: bool
    ) -> tuple[list[str], list[str]]:
        """String imports (JS/TS, C/C++, Ruby, PHP include, Go, Rust `mod`)."""
        spec, importer = fi.spec, fi.outline.path
        if spec.import_targets_directory:
            files = self._go_package(spec.family, module)
            if not files:
                return [], []
            if name in WILDCARD_NAMES:
                fi.stars.extend(files[:IMPORT_FANOUT_CAP])
            else:
                last = module.rstrip("/").rsplit("/", 1)[-1]
                for bound in {alias or last, *self.files[files[0]].outline.packages} - {None}:
                    for f in files[:IMPORT_FANOUT_CAP]:
                        self._bind(fi, bound, ("module", f))
            return files, []
        target = self._path_target(spec, importer, module, relative)
        if target is None:
            return [], []
        if name is None:
            if alias:
                self._bind(fi, alias, ("module", target))
            elif spec.family != "js":  # C/C++ includes, Ruby/PHP requires: all names visible
                fi.stars.append(target)
            return [target], []
        if name in WILDCARD_NAMES:
            fi.stars.append(target)
            return [target], []
        self._bind(fi, alias or name, ("from", target, name))
        return [target], []

    def _go_package(self, fam: str, import_path: str) -> list[str]:
        segs = [s for s in import_path.split("/") if s]
        if not segs:
            return []
        # a first segment without a dot is the standard library unless it names a repo dir
        shortest = 1 if "." in segs[0] else len(segs)
        for k in range(len(segs), shortest - 1, -1):
            files = self.dir_files.get((fam, "/".join(segs[-k:])))
            if files:
                return files
        return []

    def _path_target(
        self, spec: LanguageSpec, importer: str, module: str, relative: bool
    ) -> str | None:
        fam = spec.family
        here = posixpath.dirname(importer)
        explicit = relative or module.startswith(("./", "../")) or module in (".", "..")
        if explicit:
            bases = [posixpath.normpath(posixpath.join(here, module.lstrip("/")))]
            if spec.name == "rust":  # `mod x;` in a/b.rs lives in a/b/x.rs
                stem = posixpath.splitext(posixpath.basename(importer))[0]
                if stem not in ("mod", "lib", "main"):
                    bases.append(posixpath.join(here, stem, module))
            for base in bases:
                if base.startswith("../"):
                    continue
                hit = self._first_existing(spec, base)
                if hit is not None:
                    return hit
            if module.startswith(("./", "../")):
                return None
        spec_path = module
        for prefix in JS_PATH_ALIASES:
            if spec_path.startswith(prefix):
                spec_path = spec_path[len(prefix) :]
                break
        else:
            if len([s for s in spec_path.split("/") if s]) < spec.bare_specifier_min_segments:
                return None
        spec_path = spec_path.strip("/")
        for cand in self._candidates(spec, spec_path):
            files = self.path_suffix.get((fam, tuple(cand.split("/"))))
            if files:
                return self._pick(files, importer)
        return None

    def _candidates(self, spec: LanguageSpec, base: str) -> list[str]:
        out = [base]
        root, ext = posixpath.splitext(base)
        out.extend(base + s for s in spec.path_suffixes)
        if ext:
            out.extend(root + s for s in spec.path_suffixes)
        for stem in spec.module_stems:
            out.extend(f"{base}/{stem}{s}" for s in (spec.path_suffixes or spec.extensions))
        return [c for c in out if c and not c.startswith("../")]

    def _first_existing(self, spec: LanguageSpec, base: str) -> str | None:
        for cand in self._candidates(spec, base):
            fi = self.files.get(cand)
            if fi is not None and fi.spec.family == spec.family:
                return cand
        return None

    # -- inherits -------------------------------------------------------------------------
    def link_inherits(self) -> None:
        for fi in self.files.values():
            for ref in fi.outline.bases:
                src = fi.ids[ref.cls]
                targets = self._decide(self._base_levels(fi, src, ref.name, ref.receiver))
                for t in targets:
                    if t != src and self.defs[t].kind == "class":
                        self.cg.add_edge(src, t, "inherits")
                        self.bases[src].append(t)

    def _classes_only(self, ids: Iterable[str]) -> list[str]:
        return [i for i in ids if self.defs[i].kind == "class"]

    def _base_levels(
        self, fi: _FileIndex, src: str, name: str, receiver: str | None
    ) -> Iterator[tuple[list[str], int]]:
        cap, fam = self.cap, fi.spec.family
        if receiver:  # mod.Base: only a module we know, or a class nested in this file
            head = split_name(receiver)[0] if receiver != UNKNOWN_RECEIVER else receiver
            mods = [t[1] for t in fi.bindings.get(head, ()) if t[0] == "module"]
            if mods:
                yield self._classes_only(self._in_files(mods, name)), cap
            yield [c for c in fi.classes.get(name, ()) if c != src], cap
            return
        bound: list[str] = []
        for t in fi.bindings.get(name, ()):
            bound.extend(self._expand(t))
        yield self._classes_only(bound), cap
        yield [c for c in self._classes_only(fi.top.get(name, ())) if c != src], cap
        yield [c for c in fi.classes.get(name, ()) if c != src], cap
        yield self._classes_only(self._in_files(fi.stars, name)), cap
        yield self._classes_only(self._same_dir(fi, name)), cap
        yield [c for c in self.classes.get((fam, name), ()) if c != src], GLOBAL_MAX_CANDIDATES

    # -- invokes --------------------------------------------------------------------------
    def link_calls(self) -> None:
        known = {(d.family, d.name) for d in self.defs.values()}
        for fi in self.files.values():
            fam = fi.spec.family
            done: set[tuple[int, str, str | None, bool]] = set()
            for site in fi.outline.calls:
                # most calls name no definition at all (builtins, libraries): skip them fast
                if (
                    (fam, site.name) not in known
                    and site.name not in fi.bindings
                    and site.name != RUBY_NEW
                ):
                    continue
                key = (site.caller, site.name, site.receiver, site.is_path)
                if key in done:  # the same call again in the same function
                    continue
                done.add(key)
                caller = self.defs[fi.ids[site.caller]]
                for callee in self._resolve_call(
                    fi, caller, site.name, site.receiver, site.is_path
                ):
                    if callee != caller.id:
                        self.cg.add_edge(caller.id, callee, "invokes")

    def _resolve_call(
        self, fi: _FileIndex, caller: _Def, name: str, receiver: str | None, is_path: bool
    ) -> list[str]:
        if receiver is None:
            levels = self._bare_levels(fi, caller, name)
        elif receiver in SELF_RECEIVERS or receiver == caller.self_name:
            levels = self._self_levels(fi, caller, name)
        elif receiver in SUPER_RECEIVERS:
            cls = self._class_of(caller)
            return self._callables(
                self._member_in_lineage(cls, name, skip_self=True) if cls else []
            )
        else:
            levels = self._receiver_levels(fi, name, receiver, is_path)
        return self._callables(self._decide(levels))

    def _bare_levels(
        self, fi: _FileIndex, caller: _Def, name: str
    ) -> Iterator[tuple[list[str], int]]:
        cap, fam = self.cap, fi.spec.family
        scope: _Def | None = caller  # functions nested in the caller or its enclosing functions
        while scope is not None and scope.kind == "function":
            yield list(self.children.get(scope.id, {}).get(name, ())), cap
            scope = self.defs.get(scope.parent)
        if fi.spec.implicit_self_calls:
            cls = self._class_of(caller)
            if cls is not None:
                yield self._member_in_lineage(cls, name), cap
                if name == RUBY_NEW:  # `new(...)` inside a class method
                    yield self._callables([cls]), cap
        bound: list[str] = []
        for t in fi.bindings.get(name, ()):
            bound.extend(self._expand(t))
            if t[0] == "module":  # `import f from './f'` then f(): its f or default export
                bound.extend(self.exported(t[1], name) or self.exported(t[1], DEFAULT_EXPORT))
        yield bound, cap
        yield list(fi.top.get(name, ())), cap
        yield self._in_files(fi.stars, name), cap
        yield self._same_dir(fi, name), cap
        implicit = fi.spec.implicit_self_calls and self._class_of(caller) is not None
        if implicit:  # an abstract method called in the base, defined in a subclass
            yield list(fi.members.get(name, ())), cap
        everywhere = self.nonmembers.get((fam, name), []) + self.classes.get((fam, name), [])
        if implicit:
            everywhere = everywhere + self.members.get((fam, name), [])
        yield everywhere, GLOBAL_MAX_CANDIDATES

    def _self_levels(
        self, fi: _FileIndex, caller: _Def, name: str
    ) -> Iterator[tuple[list[str], int]]:
        cap, fam = self.cap, fi.spec.family
        cls = self._class_of(caller)
        if cls is None and caller.owner_name:  # its type lives in another file of the package
            types = list(fi.classes.get(caller.owner_name, ())) or self._classes_only(
                self._same_dir(fi, caller.owner_name)
            )
            cls = types[0] if len(types) == 1 else None
        if cls is not None:
            yield self._member_in_lineage(cls, name), cap
        elif caller.owner_name:  # a method declared outside its type (Go, Rust impl)
            owned = self.by_owner.get((fam, caller.owner_name, name), [])
            yield [i for i in owned if self.defs[i].path == fi.outline.path], cap
            directory = posixpath.dirname(fi.outline.path)
            yield [i for i in owned if posixpath.dirname(self.defs[i].path) == directory], cap
            yield owned, cap
        yield list(fi.members.get(name, ())), cap
        yield self.members.get((fam, name), []), GLOBAL_MAX_CANDIDATES

    def _receiver_levels(
        self, fi: _FileIndex, name: str, receiver: str, is_path: bool
    ) -> Iterator[tuple[list[str], int]]:
        cap, fam = self.cap, fi.spec.family
        if receiver != UNKNOWN_RECEIVER:
            segs = split_name(receiver)
            head, last = (segs[0], segs[-1]) if segs else (receiver, receiver)
            for key in dict.fromkeys((receiver, head)):
                targets = fi.bindings.get(key, ())
                if not targets:
                    continue
                hits: list[str] = []
                for t in targets:
                    if t[0] == "module":
                        hits.extend(self.exported(t[1], name))
                    else:
                        classes = self._classes_only(self._expand(t))
                        hits.extend(self._type_members(classes, name))
                yield hits, cap
            for classes, limit in (  # the receiver names a type: Util.go(), Foo::new()
                (list(fi.classes.get(last, ())), cap),
                (self._classes_only(self._same_dir(fi, last)), cap),
                (self.classes.get((fam, last), []), GLOBAL_MAX_CANDIDATES),
            ):
                if classes and len(classes) <= limit:
                    found = self._type_members(classes, name)
                    if found:
                        yield found, cap
                        break
            yield self.by_owner.get((fam, last, name), []), cap
            if last[:1].isupper():  # an unknown type (a library's): its members are not ours
                return
            if is_path:  # ns::f(): a function in a namespace or module
                yield list(fi.top.get(name, ())), cap
                yield self._in_files(fi.stars, name), cap
                yield self._same_dir(fi, name), cap
                yield self.nonmembers.get((fam, name), []), GLOBAL_MAX_CANDIDATES
                return
        yield list(fi.members.get(name, ())), cap
        if name not in COMMON_METHOD_NAMES:  # x.append() is a list's, not our only append
            yield self.members.get((fam, name), []), GLOBAL_MAX_CANDIDATES


def link(
    cg: CodeGraph, outlines: list[FileOutline], ids: dict[str, list[str]], max_candidates: int
) -> None:
    """Add imports, inherits and invokes edges between the nodes of ``outlines``."""
    linker = _Linker(cg, outlines, ids, max_candidates)
    linker.link_imports()
    linker.link_inherits()
    linker.link_calls()
