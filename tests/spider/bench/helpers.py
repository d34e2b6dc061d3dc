"""Test helpers: throwaway git repositories and a tiny ast-based stand-in for build_graph."""

from __future__ import annotations

import ast
import fnmatch
import os
import subprocess
from pathlib import Path

from spider.graph.model import CodeGraph
from spider.settings import EngineSettings
from spider.source import SourceTree

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` with a fixed identity; return stdout."""
    env = {**os.environ, **GIT_IDENTITY}
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def init_repo(path: Path) -> Path:
    """An empty repository with a default branch and no hooks."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "commit.gpgsign", "false")
    return path


def commit_files(repo: Path, files: dict[str, str | None], message: str) -> str:
    """Write (or delete, for None) files, commit everything, return the new sha."""
    for rel, text in files.items():
        p = repo / rel
        if text is None:
            p.unlink()
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def graph_from_files(files: dict[str, str]) -> CodeGraph:
    """Function and class nodes of Python files, named like the real graph (ast stand-in)."""
    g = CodeGraph()
    for path, text in files.items():
        g.add_node(path, kind="file", path=path, name="", language="python")
        _walk(g, path, ast.parse(text).body, "", path)
    return g


def _walk(g: CodeGraph, path: str, body: list[ast.stmt], prefix: str, parent: str) -> None:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            qual = f"{prefix}.{node.name}" if prefix else node.name
            nid = f"{path}:{qual}"
            n = 2
            while nid in g.g:
                nid = f"{path}:{qual}#{n}"
                n += 1
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            g.add_node(
                nid,
                kind=kind,
                path=path,
                name=qual,
                language="python",
                start_line=min([node.lineno] + [d.lineno for d in node.decorator_list]),
                end_line=node.end_lineno or node.lineno,
                text=ast.unparse(node),
            )
            g.add_edge(parent, nid, "contains")
            _walk(g, path, node.body, qual, nid)
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
            for block in ("body", "orelse", "finalbody"):
                _walk(g, path, getattr(node, block, []), prefix, parent)
            for handler in getattr(node, "handlers", []):
                _walk(g, path, handler.body, prefix, parent)


def ast_builder(source: SourceTree, settings: EngineSettings) -> CodeGraph:
    """A build_graph stand-in: Python files of ``source`` honouring ``settings.include``."""
    paths = [f.path for f in source.files() if f.path.endswith(".py")]
    if settings.include:
        globs = [g.lstrip("/") for g in settings.include]  # anchored literal globs
        paths = [p for p in paths if any(fnmatch.fnmatchcase(p, g) for g in globs)]
    texts = {p: b.decode() for p, b in source.read_many(paths)}
    return graph_from_files(texts)
