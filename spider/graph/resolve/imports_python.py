"""Python imports: ``import a.b [as x]``, ``from a import f``, relative dots, ``*``.

An absolute module is looked up by its path suffix (``a.b`` is ``…/a/b.py`` or
``…/a/b/__init__.py``, the nearest to the importer); a relative one by its exact path.
"""

from __future__ import annotations

import posixpath

from spider.graph.extract import WILDCARD_NAMES
from spider.graph.resolve.base import FileIndex, LinkerBase


class PythonImports(LinkerBase):
    """Resolves the imports of ``import_style == "python"`` files."""

    def _import_python(
        self, fi: FileIndex, module: str, name: str | None, alias: str | None
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
