"""Dotted imports (Java, Kotlin, C#, PHP ``use``, Rust ``use``): packages first, then paths.

A name is split at its separators and matched against the packages/namespaces files
declare, longest prefix first; what remains names a definition inside them. Without a
declared package, the prefix is taken as a module path (Rust, a file named like its type).
"""

from __future__ import annotations

from spider.graph.extract import WILDCARD_NAMES, split_name
from spider.graph.resolve.base import IMPORT_FANOUT_CAP, FileIndex, LinkerBase

RUST_PATH_PREFIXES = frozenset({"crate", "self", "super"})  # relative markers, not modules


class DottedImports(LinkerBase):
    """Resolves the imports of ``import_style == "module"`` files written without ``/``."""

    def _import_module(
        self, fi: FileIndex, module: str, name: str | None, alias: str | None
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
