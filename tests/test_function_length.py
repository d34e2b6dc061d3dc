"""No function in the engine runs over :data:`MAX_LINES` lines unless its docstring says
why ("Long because ..."): orchestrators are split into named steps instead.

``python -m tests.test_function_length`` lists every function over the limit, with or
without a reason.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "spider"
MAX_LINES = 60  # a function's whole extent: signature, docstring and body
REASON = "long because"  # what a docstring says when a function may be longer


def long_functions(package: Path = PACKAGE) -> Iterator[tuple[str, int, bool]]:
    """``(path:line name, lines, has a reason)`` of every function over the limit."""
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > MAX_LINES:
                reason = REASON in (ast.get_docstring(node) or "").lower()
                where = f"{path.relative_to(package.parent)}:{node.lineno} {node.name}"
                yield where, lines, reason


def test_no_function_is_long_without_a_reason() -> None:
    unexplained = [f"{where} ({lines} lines)" for where, lines, ok in long_functions() if not ok]
    assert unexplained == [], "split them, or say in the docstring: 'Long because ...'"


def test_the_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "m.py").write_text(f"def f():\n{body}\n\n\ndef g():\n    return 1\n")
    assert [(w.rsplit(" ", 1)[1], ok) for w, _, ok in long_functions(tmp_path)] == [("f", False)]


if __name__ == "__main__":
    for where, lines, ok in sorted(long_functions(), key=lambda x: -x[1]):
        print(f"{lines:4d}  {where}{'' if ok else '  (no reason given)'}")
