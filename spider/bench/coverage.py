"""Graph fidelity: how many fix hunks fall inside a function node of the base-commit graph.

A fix inside a function the graph does not know can never be found, whatever the ranker.
For every instance (repository, base commit, patch) the graph of the patch's files is
built at the base commit with the product's settings, and every hunk of a source file in a
supported language is judged on its *targets*: the non-blank removed lines of the hunk
(all removed lines when they are all blank), or, for a pure addition, the two old lines
the addition sits between (the precise ground-truth rule's view, ``groundtruth.old_side``).

Whether a hunk is **function-bearing** is decided by the syntax tree itself, not by the
graph: a target line is "function" when the smallest syntax node spanning the line has a
function-like ancestor (``FUNCTION_SYNTAX``: ``function_definition``, ``arrow_function``,
``method_declaration``, ``func_literal``, ``closure_expression``, ... of any grammar); an
insertion is "function" when one function-like node spans both of its neighbours. Other
lines are, in this order, "macro" (inside a macro body or invocation, which tree-sitter
leaves as unparsed tokens), "error" (inside an ERROR node), "class" (inside a class-like
body outside any function: fields, annotations), or "top-level". A hunk is
function-bearing when any target is "function"; it is **covered** when every "function"
target lies inside some function node's line range of the graph. Hunks that are not
function-bearing are counted by category and listed too (a macro or error hunk may still
be a function the grammar cannot see).

Hunks of files the product excludes (tests, vendored, generated ...) or could not parse
are counted separately by reason; hunks of added files have no pre-image and are counted
as ``added_file``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tree_sitter import Node, Parser, Tree

from spider.errors import NoSourceFiles, SpiderError
from spider.eval.dataset import Instance
from spider.eval.snapshot import RepoResolver
from spider.graph import build_graph
from spider.graph.build import exclusion_reasons
from spider.graph.languages import LanguageSpec, has_cpp_sources, spec_for_path
from spider.graph.parse_file import parser_for
from spider.patch import (
    FilePatch,
    Hunk,
    Span,
    align_hunks,
    function_spans,
    literal_globs,
    old_side,
    parse_patch,
)
from spider.settings import EngineSettings
from spider.source import GitSource

log = logging.getLogger(__name__)

# Syntax node types that are a function body in some grammar (a union over the grammars
# spider parses: a name that means nothing in one grammar never occurs in it).
FUNCTION_SYNTAX = frozenset(
    {
        # Python, C, C++, PHP
        "function_definition",
        "lambda",
        # JavaScript / TypeScript
        "function_declaration",
        "function_expression",
        "function",
        "generator_function",
        "generator_function_declaration",
        "arrow_function",
        "method_definition",
        # Java, C#, Kotlin, PHP
        "method_declaration",
        "constructor_declaration",
        "compact_constructor_declaration",
        "lambda_expression",
        "local_function_statement",
        "accessor_declaration",
        "operator_declaration",
        "conversion_operator_declaration",
        "destructor_declaration",
        "anonymous_method_expression",
        "anonymous_function",
        "anonymous_function_creation_expression",
        "secondary_constructor",
        "getter",
        "setter",
        "lambda_literal",
        # Go
        "func_literal",
        # Rust
        "function_item",
        "closure_expression",
        # Ruby
        "method",
        "singleton_method",
    }
)
MACRO_SYNTAX = frozenset(
    {"token_tree", "macro_invocation", "macro_definition", "preproc_function_def"}
)
CLASS_SYNTAX_WORDS = (
    "class",
    "struct",
    "interface",
    "enum",
    "impl",
    "trait",
    "object",
    "record",
    "namespace",
    "module",
    "declaration_list",
)
CATEGORIES = ("function", "macro", "error", "class", "top-level")  # best first
ADDED_FILE = "added_file"
NOT_PARSED = "not_parsed"


@dataclass
class LanguageCoverage:
    """One language's hunk counts."""

    hunks: int = 0  # hunks of existing files in this language
    excluded: Counter[str] = field(default_factory=Counter)  # exclusion reason -> hunks
    not_parsed: Counter[str] = field(default_factory=Counter)  # why a file was not in the graph
    parsed: int = 0  # hunks of files the graph parsed
    categories: Counter[str] = field(default_factory=Counter)  # parsed hunks by category
    covered: int = 0  # function-bearing hunks inside a function node

    @property
    def function_bearing(self) -> int:
        """Parsed hunks with a target inside a function by the syntax tree."""
        return self.categories["function"]

    @property
    def share(self) -> float | None:
        """Covered / function-bearing (None when there is none)."""
        return round(self.covered / self.function_bearing, 4) if self.function_bearing else None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "hunks": self.hunks,
            "excluded": dict(self.excluded),
            "not_parsed": dict(self.not_parsed),
            "parsed": self.parsed,
            "function_bearing": self.function_bearing,
            "covered": self.covered,
            "share": self.share,
            "categories": dict(self.categories),
        }


@dataclass
class CoverageReport:
    """Per-language counts, the hunks no function covers, and what was skipped."""

    languages: dict[str, LanguageCoverage] = field(default_factory=dict)
    uncovered: list[dict[str, Any]] = field(default_factory=list)
    outside: list[dict[str, Any]] = field(default_factory=list)  # not function-bearing
    instances: int = 0
    added_file_hunks: int = 0
    unsupported_hunks: int = 0
    skipped: dict[str, str] = field(default_factory=dict)  # instance id -> reason
    skipped_repos: Counter[str] = field(default_factory=Counter)  # repo -> instances

    def lang(self, name: str) -> LanguageCoverage:
        """The counts of one language (created on first use)."""
        return self.languages.setdefault(name, LanguageCoverage())

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "instances": self.instances,
            "skipped_instances": len(self.skipped),
            "skipped_repos": dict(self.skipped_repos),
            "skipped": self.skipped,
            "added_file_hunks": self.added_file_hunks,
            "unsupported_hunks": self.unsupported_hunks,
            "languages": {k: v.to_dict() for k, v in sorted(self.languages.items())},
            "uncovered": self.uncovered,
            "outside_functions": self.outside,
        }


@dataclass(frozen=True)
class Target:
    """What one hunk touches in the old file: changed lines, or an insertion point."""

    lines: tuple[int, ...]  # changed old lines (1-based)
    between: tuple[int, int] | None = None  # a pure addition between these old lines


def hunk_target(hunk: Hunk, lines: list[str]) -> Target:
    """The pre-image lines a hunk is judged on (see the module docstring)."""
    side = old_side(FilePatch("x", "x", [hunk]))
    changed = sorted(side.changed)
    if changed:
        solid = [n for n in changed if 1 <= n <= len(lines) and lines[n - 1].strip()]
        return Target(tuple(solid or changed))
    ins = side.insertions[0] if side.insertions else None
    before = ins.before if ins is not None else hunk.old_start
    return Target((), (before, before + 1))


def _line_node(tree: Tree, lines: list[str], n: int) -> Node | None:
    """The smallest named node spanning the text of old line ``n`` (1-based)."""
    if not 1 <= n <= len(lines):
        return None
    text = lines[n - 1]
    stripped = text.strip()
    if not stripped:
        return None
    start = len(text.encode()) - len(text.lstrip().encode())
    end = start + len(stripped.encode())
    return tree.root_node.named_descendant_for_point_range((n - 1, start), (n - 1, end))


def _ancestors(node: Node | None) -> Iterator[Node]:
    while node is not None:
        yield node
        node = node.parent


def _category(chain: list[Node]) -> str:
    """The category of a position whose enclosing syntax nodes are ``chain`` (innermost first)."""
    if any(a.type in FUNCTION_SYNTAX for a in chain):
        return "function"
    if any(a.type in MACRO_SYNTAX for a in chain):
        return "macro"
    if any(a.type == "ERROR" or a.is_error for a in chain):
        return "error"
    if any(w in a.type for a in chain[:-1] for w in CLASS_SYNTAX_WORDS):
        return "class"
    return "top-level"


def line_category(tree: Tree, lines: list[str], n: int) -> str:
    """Where old line ``n`` lies by the syntax tree: one of CATEGORIES."""
    return _category(list(_ancestors(_line_node(tree, lines, n))))


def gap_category(tree: Tree, lo: int, hi: int) -> str:
    """Where an insertion between old lines ``lo`` and ``hi`` lies: "function" only when one
    function-like node spans both lines (an addition just before a function's header or
    after its end is outside it)."""
    if lo < 1:
        return "top-level"
    node = tree.root_node.named_descendant_for_point_range((lo - 1, 0), (hi - 1, 0))
    chain = [
        a
        for a in _ancestors(node)
        if a.start_point[0] <= lo - 1 and (a.end_point[0], a.end_point[1]) > (hi - 1, 0)
    ]
    return _category(chain)


def _inside(spans: list[Span], *lines: int) -> bool:
    return any(all(s.contains(n) for n in lines) for s in spans)


def judge_hunk(
    hunk: Hunk, lines: list[str], tree: Tree, spans: list[Span]
) -> tuple[str, bool, int, bool]:
    """(category, covered, the line to show, whether the hunk is a pure insertion) of one
    hunk of a parsed file; an insertion shows the old line it is inserted before."""
    t = hunk_target(hunk, lines)
    if t.between is not None:
        lo, hi = t.between
        category = gap_category(tree, lo, hi)
        return category, category == "function" and _inside(spans, lo, hi), hi, True
    cats = {n: line_category(tree, lines, n) for n in t.lines}
    fn = [n for n, c in cats.items() if c == "function"]
    if fn:
        missed = [n for n in fn if not _inside(spans, n)]
        return "function", not missed, (missed or fn)[0], False
    best = min(cats.values(), key=CATEGORIES.index) if cats else "top-level"
    return best, False, t.lines[0] if t.lines else hunk.old_start, False


def _parse(spec: LanguageSpec, data: bytes, parsers: dict[str, Parser]) -> Tree:
    return parser_for(spec.grammar, parsers).parse(data)


def measure_instance(
    inst: Instance, source: GitSource, settings: EngineSettings, report: CoverageReport
) -> None:
    """Add one instance's hunks to ``report``.

    Long because one hunk walk classifies every way a hunk can miss a function node (no parser,
    excluded file, outside any definition), each a counter of the report."""
    files = parse_patch(inst.patch or "")
    listing = source.files()
    headers_are_cpp = has_cpp_sources([f.path for f in listing])
    present = {f.path for f in listing}
    specs: dict[str, LanguageSpec] = {}
    for fp in files:
        path = fp.old_path or fp.new_path or ""
        spec = spec_for_path(path, headers_are_cpp=headers_are_cpp)
        if spec is None:
            report.unsupported_hunks += len(fp.hunks)
        elif fp.old_path is None or fp.old_path not in present:
            report.added_file_hunks += len(fp.hunks)
        else:
            specs[fp.old_path] = spec
    if not specs:
        return
    reasons = exclusion_reasons(source, settings, list(specs))
    kept = [p for p in specs if p not in reasons]
    graph = None
    if kept:
        narrow = settings.model_copy(update={"include": literal_globs(kept)})
        try:
            graph = build_graph(source, narrow)
        except NoSourceFiles:
            graph = None
    spans = function_spans(graph, kept) if graph is not None else {}
    parsed = {p for p in kept if graph is not None and p in graph.g}
    texts = {p: b for p, b in source.read_many(sorted(parsed))}
    parsers: dict[str, Parser] = {}
    for fp in files:
        path = fp.old_path
        if path is None or path not in specs:
            continue
        lc = report.lang(specs[path].name)
        lc.hunks += len(fp.hunks)
        if path in reasons:
            lc.excluded[reasons[path]] += len(fp.hunks)
            continue
        if path not in parsed or path not in texts:
            lc.not_parsed[NOT_PARSED] += len(fp.hunks)
            continue
        data = texts[path]
        text = data.decode("utf-8", "replace")
        lines = text.splitlines()
        tree = _parse(specs[path], data, parsers)
        for hunk in align_hunks(fp, lines).hunks:
            lc.parsed += 1
            category, covered, line, insertion = judge_hunk(
                hunk, lines, tree, spans.get(path, [])
            )
            lc.categories[category] += 1
            row = {
                "instance_id": inst.instance_id,
                "repo": inst.repo,
                "language": specs[path].name,
                "path": path,
                "line": line,
                "code": lines[line - 1].strip()[:200] if 1 <= line <= len(lines) else "",
                "category": category,
                "insertion": insertion,  # lines added before `line`, none removed
            }
            if category != "function":
                report.outside.append(row)
            elif covered:
                lc.covered += 1
            else:
                report.uncovered.append(row)


def measure_coverage(
    instances: Iterable[Instance], resolve: RepoResolver, settings: EngineSettings
) -> CoverageReport:
    """The coverage report of a dataset; instances whose repository or commit is missing
    here are skipped and counted per repository."""
    report = CoverageReport()
    for inst in instances:
        path = resolve(inst)
        if not path.is_dir():
            report.skipped[inst.instance_id] = f"repository not found at {path}"
            report.skipped_repos[inst.repo] += 1
            continue
        try:
            source = GitSource(path, inst.base_commit)
            measure_instance(inst, source, settings, report)
        except SpiderError as exc:
            report.skipped[inst.instance_id] = str(exc)
            report.skipped_repos[inst.repo] += 1
            continue
        report.instances += 1
    return report


def render_coverage(report: CoverageReport, min_hunks: int = 0) -> str:
    """A Markdown table: per language hunks, parsed, function-bearing, covered, share."""
    out = [
        "| language | hunks | excluded | parsed | function-bearing | covered | share |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, lc in sorted(report.languages.items()):
        if lc.hunks < min_hunks:
            continue
        share = f"{lc.share:.1%}" if lc.share is not None else "–"
        out.append(
            f"| {name} | {lc.hunks} | {sum(lc.excluded.values())} | {lc.parsed} "
            f"| {lc.function_bearing} | {lc.covered} | {share} |"
        )
    out.append("")
    out.append(
        f"instances: {report.instances}, skipped: {len(report.skipped)} "
        f"({', '.join(f'{r} {n}' for r, n in sorted(report.skipped_repos.items())) or 'none'}); "
        f"hunks of added files: {report.added_file_hunks}, of unsupported files: "
        f"{report.unsupported_hunks}"
    )
    return "\n".join(out)
