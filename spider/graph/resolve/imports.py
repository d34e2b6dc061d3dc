"""``imports`` edges: each import dispatched by the importer's import style.

File-to-file edges first (capped per import), then file-to-definition edges for the
``from`` bindings, once every file's bindings exist (re-exports are followed).
"""

from __future__ import annotations

from spider.graph.resolve.base import IMPORT_FANOUT_CAP, FileIndex
from spider.graph.resolve.imports_dotted import DottedImports
from spider.graph.resolve.imports_path import PathImports
from spider.graph.resolve.imports_python import PythonImports


class ImportLinker(PythonImports, DottedImports, PathImports):
    """Adds ``imports`` edges and records the bindings the other rules look names up in."""

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

    def _resolve_import(
        self, fi: FileIndex, module: str, name: str | None, alias: str | None, relative: bool
    ) -> tuple[list[str], list[str]]:
        """(files, definitions) an import names; records bindings and wildcard imports."""
        style = fi.spec.import_style
        if style == "python":
            return self._import_python(fi, module, name, alias)
        if style == "module" and not relative and "/" not in module:
            return self._import_module(fi, module, name, alias)
        return self._import_path(fi, module, name, alias, relative)
