"""``inherits`` edges: a base-class name resolved to a class, nearest scope first.

Scopes: the names the file's imports bind, its top-level and nested classes, wildcard
imports, the same directory, then a unique class of that name in the repository. A
qualified base (``mod.Base``) looks only in a module the file imports, or this file.
"""

from __future__ import annotations

from spider.graph.extract import UNKNOWN_RECEIVER, split_name
from spider.graph.resolve.base import GLOBAL_MAX_CANDIDATES, FileIndex, Levels, LinkerBase


class InheritanceLinker(LinkerBase):
    """Adds ``inherits`` edges and the base lists that method lookups follow."""

    def link_inherits(self) -> None:
        for fi in self.files.values():
            for ref in fi.outline.bases:
                src = fi.ids[ref.cls]
                targets = self._decide(self._base_levels(fi, src, ref.name, ref.receiver))
                for t in targets:
                    if t != src and self.defs[t].kind == "class":
                        self.cg.add_edge(src, t, "inherits")
                        self.bases[src].append(t)

    def _base_levels(
        self, fi: FileIndex, src: str, name: str, receiver: str | None
    ) -> Levels:
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
