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

Modules, one concern each: ``base`` (the index of every definition and the shared
lookups), ``imports`` (dispatch by import style to ``imports_python``, ``imports_dotted``
for Java/Kotlin/C#/PHP/Rust ``use``, ``imports_path`` for JS/TS, C/C++, Ruby, Go and Rust
``mod``), ``inheritance`` and ``calls``; ``stopwords.txt`` is package data.
"""

from __future__ import annotations

from spider.graph.extract import FileOutline
from spider.graph.model import CodeGraph
from spider.graph.resolve.calls import CallLinker
from spider.graph.resolve.imports import ImportLinker
from spider.graph.resolve.inheritance import InheritanceLinker

__all__ = ["link"]


class _Linker(ImportLinker, InheritanceLinker, CallLinker):
    """Every rule over one shared index."""


def link(
    cg: CodeGraph, outlines: list[FileOutline], ids: dict[str, list[str]], max_candidates: int
) -> None:
    """Add imports, inherits and invokes edges between the nodes of ``outlines``."""
    linker = _Linker(cg, outlines, ids, max_candidates)
    linker.link_imports()
    linker.link_inherits()
    linker.link_calls()
