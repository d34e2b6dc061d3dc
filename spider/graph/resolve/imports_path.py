"""String imports (JS/TS, C/C++ includes, Ruby/PHP requires, Go packages, Rust ``mod``).

An explicit relative path is joined to the importer's directory; any other is matched
by path suffix (after bundler aliases), trying the language's extensions and index
files. A Go import names a package directory: every file in it.
"""

from __future__ import annotations

import posixpath

from spider.graph.extract import WILDCARD_NAMES
from spider.graph.languages import LanguageSpec
from spider.graph.resolve.base import IMPORT_FANOUT_CAP, FileIndex, LinkerBase

JS_PATH_ALIASES = ("@/", "~/")  # common bundler aliases for the source root


class PathImports(LinkerBase):
    """Resolves path-style imports."""

    def _import_path(
        self, fi: FileIndex, module: str, name: str | None, alias: str | None, relative: bool
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
