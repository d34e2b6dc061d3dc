"""``invokes`` edges: each call site resolved by its name and receiver, nearest scope first.

See the package docstring for the scopes of a bare call, ``self.f()``, ``super().f()``
and ``x.f()``. Common container/string/stream methods (``stopwords.txt``) are never linked
at the repository-wide scope: ``x.append()`` on an unknown ``x`` is a list's.
"""

from __future__ import annotations

import posixpath
from importlib import resources

from spider.graph.extract import UNKNOWN_RECEIVER, split_name
from spider.graph.resolve.base import (
    GLOBAL_MAX_CANDIDATES,
    RUBY_NEW,
    Definition,
    FileIndex,
    Levels,
    LinkerBase,
)

SELF_RECEIVERS = frozenset({"self", "this", "cls", "$this", "Self", "static", "@"})
SUPER_RECEIVERS = frozenset({"super", "super()", "base", "parent"})
DEFAULT_EXPORT = "default"  # the name given to `export default function () {}`
STOPWORDS_FILE = "stopwords.txt"  # package data beside this module


def load_stopwords(name: str = STOPWORDS_FILE) -> frozenset[str]:
    """The method names of a package-data word list (one a line, ``#`` comments)."""
    text = resources.files(__name__.rpartition(".")[0]).joinpath(name).read_text(encoding="utf-8")
    words = (line.strip() for line in text.splitlines())
    return frozenset(w for w in words if w and not w.startswith("#"))


COMMON_METHOD_NAMES = load_stopwords()


class CallLinker(LinkerBase):
    """Adds ``invokes`` edges from each function to the definitions its calls name."""

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
        self, fi: FileIndex, caller: Definition, name: str, receiver: str | None, is_path: bool
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
        self, fi: FileIndex, caller: Definition, name: str
    ) -> Levels:
        cap, fam = self.cap, fi.spec.family
        scope: Definition | None = caller  # functions nested in the caller or its enclosing functions
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
        self, fi: FileIndex, caller: Definition, name: str
    ) -> Levels:
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
        self, fi: FileIndex, name: str, receiver: str, is_path: bool
    ) -> Levels:
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
