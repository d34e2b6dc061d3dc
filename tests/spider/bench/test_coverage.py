"""`spider bench coverage`: hunks judged by the syntax tree, covered by graph functions."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from spider.bench.cli import bench_app
from spider.bench.coverage import measure_coverage
from spider.eval.dataset import Instance
from spider.eval.snapshot import fixed_resolver
from spider.settings import EngineSettings

from .helpers import commit_files, init_repo

SOURCE = """\
const x = 1;

function covered(a) {
  return a + 1;
}

defineGetter(req, 'host', function () {
  return this.host;
});
"""

PATCH = """\
diff --git a/lib/app.js b/lib/app.js
--- a/lib/app.js
+++ b/lib/app.js
@@ -1,4 +1,4 @@
-const x = 1;
+const x = 2;
~
 function covered(a) {
   return a + 1;
@@ -3,5 +3,5 @@
 function covered(a) {
-  return a + 1;
+  return a + 2;
 }
~
 defineGetter(req, 'host', function () {
@@ -7,3 +7,3 @@
 defineGetter(req, 'host', function () {
-  return this.host;
+  return this.hostname;
 });
diff --git a/tests/app.test.js b/tests/app.test.js
--- a/tests/app.test.js
+++ b/tests/app.test.js
@@ -1 +1 @@
-test('x', () => {});
+test('y', () => {});
""".replace("~\n", " \n")  # blank context lines keep their leading space


def _dataset(tmp_path: Path) -> tuple[Path, Instance]:
    repo = init_repo(tmp_path / "repo")
    sha = commit_files(
        repo, {"lib/app.js": SOURCE, "tests/app.test.js": "test('x', () => {});\n"}, "base"
    )
    inst = Instance("o__r-1", "o/r", sha, "issue", None, PATCH)
    return repo, inst


def test_hunks_are_counted_by_category(tmp_path: Path) -> None:
    repo, inst = _dataset(tmp_path)
    report = measure_coverage([inst], fixed_resolver(repo), EngineSettings())
    js = report.languages["javascript"]
    assert (js.hunks, js.parsed, js.function_bearing, js.covered) == (4, 3, 2, 1)
    assert dict(js.excluded) == {"tests": 1}
    assert dict(js.categories) == {"top-level": 1, "function": 2}
    assert [(u["path"], u["line"], u["code"]) for u in report.uncovered] == [
        ("lib/app.js", 8, "return this.host;")  # an anonymous callback: no function node
    ]
    assert report.outside[0]["code"] == "const x = 1;"


def test_missing_repositories_are_skipped_and_counted(tmp_path: Path) -> None:
    _, inst = _dataset(tmp_path)
    report = measure_coverage([inst], fixed_resolver(tmp_path / "nowhere"), EngineSettings())
    assert report.instances == 0
    assert dict(report.skipped_repos) == {"o/r": 1}


def test_cli_writes_the_report(tmp_path: Path) -> None:
    repo, inst = _dataset(tmp_path)
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps(inst.to_dict()) + "\n")
    out = tmp_path / "cov.json"
    result = CliRunner().invoke(
        bench_app, ["coverage", "-d", str(dataset), "-r", str(repo), "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "| javascript | 4 | 1 | 3 | 2 | 1 | 50.0% |" in result.output
    body = json.loads(out.read_text())
    assert body["languages"]["javascript"]["share"] == 0.5
    assert len(body["uncovered"]) == 1
