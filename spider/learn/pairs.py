"""Training pairs for the encoder: (query, the function it is about, hard negatives).

    spider train pairs --repos TEMPLATE --code-repos owner/name,... --dataset FILE
                       --mined DIR --out DIR

Three kinds, all written as JSONL rows ``{"kind", "repo", "source", "query", "positive",
"negatives"}`` whose texts are what the engine embeds (``spider.index.document_text``:
path, qualified name, source):

- **code–text** (``DIR/code-text/<owner>+<name>.jsonl``): a function's docstring or leading
  comment is the query and the function *without it* is the document, so the model must
  match a description to code rather than copy words; negatives are other documented
  functions of the same file (the same repository at the same commit).
- **issues** (``DIR/issues.jsonl``): a real issue is the query, each function its fix
  edits is a positive, and the negatives are the functions of the same commit that BM25
  ranks highest for the issue (the fix's files and a sample of others are parsed, not the
  whole repository, so that a thousand commits take minutes).
- **commits** (``DIR/commits.jsonl``): a fix commit mined from history is the query, by
  its message and by the line it adds to a changelog (:mod:`spider.learn.fragments`),
  built like an issue's pairs.

Repositories on the exclusion list (:mod:`spider.learn.excluded`) never enter any kind;
how many rows were dropped is reported. A repository or issue already written is not
redone, so the command resumes.
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from spider.errors import SpiderError
from spider.eval.dataset import Instance
from spider.eval.snapshot import RepoResolver, ground_truth
from spider.graph.exclusions import PathRules
from spider.graph.languages import spec_for_path
from spider.ids import dataset_id_map, graph_ids_for
from spider.index import document_text
from spider.learn.corpus import dedupe_by_text
from spider.learn.excluded import drop_excluded
from spider.learn.fragments import changelog_fragment
from spider.patch import parse_patch
from spider.progress import INSTANCES, Progress
from spider.retrieve.bm25 import LexicalIndex
from spider.settings import EngineSettings
from spider.source import GitSource, SourceTree

log = logging.getLogger(__name__)

CODE_TEXT_DIR = "code-text"
ISSUES_FILE = "issues.jsonl"
COMMITS_FILE = "commits.jsonl"
PAIR_FILES = {"issue": ISSUES_FILE, "commit": COMMITS_FILE}  # kind -> file under the folder
FRAGMENT_SUFFIX = "#changelog"
SUMMARY_FILE = "pairs.json"
MIN_QUERY_CHARS = 20
MIN_QUERY_WORDS = 4
MAX_QUERY_CHARS = 400
ISSUE_QUERY_CHARS = 2000
GLOB_CHARS = frozenset("*?[]!{}")

# A Python definition's header (decorators, signature over any lines) and the string
# literal that opens its body.
_PY_DOCSTRING = re.compile(
    r"^(?P<head>(?:[ \t]*@[^\n]*\n)*[ \t]*(?:async[ \t]+)?(?:def|class)\b.*?:[ \t]*"
    r"(?:#[^\n]*)?\n)(?P<indent>[ \t]*)[rRuUbB]{0,2}(?P<q>\"\"\"|'''|\"|')(?P<doc>.*?)(?P=q)"
    r"[ \t]*(?:\n|$)",
    re.S,
)
_HASH_COMMENT_LANGUAGES = frozenset({"python", "ruby", "bash", "perl", "r", "elixir"})
_SECTION = re.compile(
    r"^(?:@\w+|:(?:param|type|return|returns|rtype|raises?)\b|(?:Args|Arguments|Parameters|"
    r"Returns?|Raises|Yields|Examples?|Notes?|See Also|Attributes)\s*:?\s*$|-{3,}|>>>)",
    re.I,
)
_HTML_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_INLINE_TAG = re.compile(r"\{@\w+\s+([^}]*)\}")  # {@code x}, {@link Y} -> x, Y
_BOILERPLATE = re.compile(
    r"^(?::|copyright|license|spdx|todo|fixme|xxx|hack|noinspection|eslint|pylint|type:|"
    r"nolint|generated|auto-?generated|deprecated|inheritdoc|\{@inheritdoc\}|see\b|override)",
    re.I,
)


@dataclass
class Pair:
    """One training example: a query, the document it is about, and hard negatives."""

    kind: str  # "code-text", "commit" (a mined fix commit or its changelog line) or "issue"
    repo: str
    source: str  # the file (code-text) or the instance id (commit, issue)
    query: str
    positive: str
    negatives: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        """One JSONL line."""
        return json.dumps(asdict(self), ensure_ascii=False)


# -- docstrings and comments ---------------------------------------------------------------


def split_python_docstring(text: str) -> tuple[str, str]:
    """``(docstring, text without it)`` of one Python definition; ``("", text)`` when the
    body does not open with a string literal."""
    m = _PY_DOCSTRING.match(text)
    if not m:
        return "", text
    return m.group("doc"), text[: m.end("head")] + text[m.end() :]


def _strip_markers(line: str, language: str) -> str | None:
    """A comment line without its markers; None when the line is not a comment."""
    s = line.strip()
    for marker in ("///", "//!", "//"):
        if s.startswith(marker):
            return s[len(marker) :].strip()
    if s.startswith("/*"):
        return s.lstrip("/*!").rstrip("*/").strip()
    if s.startswith("*/"):
        return ""
    if s.startswith("*"):
        return s.lstrip("*").rstrip("*/").strip()
    hash_comments = language in _HASH_COMMENT_LANGUAGES or language == "php"
    if hash_comments and s.startswith("#") and not s.startswith(("#[", "#!")):
        return s.lstrip("#").strip()
    return None


def _is_attribute(line: str, language: str) -> bool:
    """Annotations, attributes and decorators that sit between a comment and its code."""
    s = line.strip()
    if s.startswith("#[") or s.startswith("#!["):
        return True
    return s.startswith("@") and language not in _HASH_COMMENT_LANGUAGES - {"python"}


def leading_comment(lines: Sequence[str], start_line: int, language: str) -> str:
    """The comment block right above line ``start_line`` (1-based) of a file, markers
    stripped; attributes and decorators between the two are stepped over."""
    i = min(start_line - 2, len(lines) - 1)
    while i >= 0 and _is_attribute(lines[i], language):
        i -= 1
    found: list[str] = []
    while i >= 0:
        text = _strip_markers(lines[i], language)
        if text is None:
            break
        found.append(text)
        i -= 1
    return "\n".join(reversed(found))


def strip_leading_comments(text: str, language: str) -> str:
    """``text`` without comment lines before its first line of code (where a grammar puts
    a definition's doc comment inside its node)."""
    lines = text.split("\n")
    n = 0
    while n < len(lines) and (
        not lines[n].strip() or _strip_markers(lines[n], language) is not None
    ):
        n += 1
    return "\n".join(lines[n:])


def clean_query(doc: str) -> str:
    """The describing part of a docstring or comment: its first paragraphs before any
    parameter list, tag or example, one line, at most MAX_QUERY_CHARS; "" when what is
    left is too short or boilerplate to describe code."""
    kept: list[str] = []
    for raw in doc.strip().split("\n"):
        line = raw.strip().strip("*").strip()
        if _SECTION.match(line):
            break
        if not line and kept and len(" ".join(kept)) >= 2 * MIN_QUERY_CHARS:
            break  # the summary paragraph(s) are enough
        kept.append(line)
    joined = _INLINE_TAG.sub(r"\1", _HTML_TAG.sub(" ", " ".join(kept)))
    text = " ".join(joined.split())[:MAX_QUERY_CHARS]
    if len(text) < MIN_QUERY_CHARS or len(text.split()) < MIN_QUERY_WORDS:
        return ""
    if _BOILERPLATE.match(text) or sum(c.isalpha() for c in text) < len(text) / 2:
        return ""
    return text


# -- sampling a commit ---------------------------------------------------------------------


def code_paths(source: SourceTree, settings: EngineSettings) -> list[str]:
    """The files of ``source`` the graph would parse by name: a supported language, not a
    test, vendored, generated, build or documentation file."""
    paths = [f.path for f in source.files()]
    rules = PathRules(settings, paths)
    return sorted(
        p
        for p in paths
        if spec_for_path(p) is not None
        and rules.reason(p) is None
        and not (GLOB_CHARS & set(p))  # used as include globs below
    )


def parse_paths(source: SourceTree, settings: EngineSettings, paths: Iterable[str]) -> Any:
    """The code graph of just ``paths`` of ``source``."""
    from spider.graph.build import build_graph

    only = settings.model_copy(update={"include": sorted(set(paths))})
    return build_graph(source, only)


# -- code–text pairs -----------------------------------------------------------------------


def code_text_pairs(
    source: SourceTree,
    repo: str,
    settings: EngineSettings,
    *,
    max_files: int = 400,
    max_pairs: int = 3000,
    negatives: int = 2,
    seed: int = 0,
) -> list[Pair]:
    """Docstring/comment → function pairs from up to ``max_files`` sampled files; the
    negatives are other functions of the same file (described or not)."""
    rng = random.Random(f"{seed}:{repo}")
    paths = code_paths(source, settings)
    if len(paths) > max_files:
        paths = sorted(rng.sample(paths, max_files))
    if not paths:
        return []
    graph = parse_paths(source, settings, paths)
    contents = {p: b.decode("utf-8", "replace").split("\n") for p, b in source.read_many(paths)}
    by_file: dict[str, list[tuple[str, str]]] = {}
    g = graph.g
    for node in graph.functions():
        a = g.nodes[node]
        path, name, text = a.get("path", ""), a.get("name", ""), a.get("text", "")
        language = a.get("language", "")
        if language == "python":
            doc, body = split_python_docstring(text)
            if not doc:
                doc = leading_comment(contents.get(path, []), int(a.get("start_line", 0)), language)
        else:
            doc = leading_comment(contents.get(path, []), int(a.get("start_line", 0)), language)
            body = strip_leading_comments(text, language)
        if len(body.strip().split("\n")) < 2:
            continue  # a one-line declaration: nothing to match a description against
        by_file.setdefault(path, []).append((clean_query(doc), document_text(path, name, body)))
    pairs: list[Pair] = []
    for path, items in by_file.items():
        for n, (query, doc) in enumerate(items):
            if not query:
                continue
            others = [d for m, (_, d) in enumerate(items) if m != n]
            negs = rng.sample(others, min(negatives, len(others)))
            pairs.append(Pair("code-text", repo, path, query, doc, negs))
    rng.shuffle(pairs)
    return pairs[:max_pairs]


# -- issue pairs ---------------------------------------------------------------------------


def fix_paths_of(inst: Instance) -> list[str]:
    """The files an instance's fix edits (its labels' paths, else its patch's old paths)."""
    if inst.edit_functions:
        return sorted({e.split(":", 1)[0] for e in inst.edit_functions})
    if inst.patch:
        return sorted({fp.path for fp in parse_patch(inst.patch) if fp.path})
    return []


def issue_pairs(
    inst: Instance,
    source: GitSource,
    settings: EngineSettings,
    *,
    sample_files: int = 40,
    negatives: int = 16,
    max_positives: int = 5,
    seed: int = 0,
    kind: str = "issue",
) -> list[Pair]:
    """Pairs of one issue: each edited function with the same hard negatives (BM25's
    best non-edited functions among the fix's files and ``sample_files`` others)."""
    rng = random.Random(f"{seed}:{inst.instance_id}")
    all_paths = code_paths(source, settings)
    parsed = set(all_paths)
    fixed = [p for p in fix_paths_of(inst) if p in parsed]
    if not fixed:
        return []
    others = sorted(parsed - set(fixed))
    sample = rng.sample(others, min(sample_files, len(others)))
    graph = parse_paths(source, settings, [*fixed, *sample])
    truth, _ = ground_truth(inst, graph, source)
    wanted = graph_ids_for(set(truth), dataset_id_map(graph))
    g = graph.g
    ids = list(graph.functions())
    docs = [
        document_text(g.nodes[n].get("path", ""), g.nodes[n].get("name", ""), g.nodes[n]["text"])
        for n in ids
    ]
    pos = [i for i, n in enumerate(ids) if n in wanted]
    if not pos or len(ids) <= len(pos):
        return []
    query = inst.problem_statement.strip()[:ISSUE_QUERY_CHARS]
    scores = LexicalIndex(docs).scores(query)
    ranked = [int(i) for i in scores.argsort()[::-1] if ids[int(i)] not in wanted]
    negs = [docs[i] for i in ranked[:negatives]]
    rng.shuffle(pos)
    return [
        Pair(kind, inst.repo, inst.instance_id, query, docs[i], negs) for i in pos[:max_positives]
    ]


# -- the command ---------------------------------------------------------------------------


def build_code_text(
    repos: Sequence[str],
    resolve_repo: Any,
    settings: EngineSettings,
    out: Path,
    excluded: frozenset[str],
    *,
    max_files: int = 400,
    max_pairs: int = 3000,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Write ``out/code-text/<owner>+<name>.jsonl`` for each repository not done yet."""
    folder = out / CODE_TEXT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    kept, dropped = drop_excluded(repos, lambda r: r, excluded)
    counts: dict[str, int] = {}
    missing: list[str] = []
    for n, repo in enumerate(kept):
        if progress is not None:
            progress(INSTANCES, n, len(kept), repo)
        target = folder / (repo.replace("/", "+") + ".jsonl")
        if target.exists():
            counts[repo] = sum(1 for _ in target.open(encoding="utf-8"))
            continue
        path = Path(resolve_repo(repo))
        if not path.exists():
            missing.append(repo)
            continue
        try:
            pairs = code_text_pairs(
                GitSource(path, "HEAD"), repo, settings, max_files=max_files, max_pairs=max_pairs
            )
        except SpiderError as exc:
            log.warning("%s: %s", repo, exc)
            missing.append(repo)
            continue
        tmp = target.with_suffix(".tmp")
        tmp.write_text("".join(p.to_json() + "\n" for p in pairs), encoding="utf-8")
        tmp.replace(target)
        counts[repo] = len(pairs)
        log.info("%s: %d code-text pairs", repo, len(pairs))
    return {
        "pairs": sum(counts.values()),
        "by_repo": counts,
        "excluded": dict(dropped),
        "not_on_disk": missing,
    }


def build_issue_pairs(
    instances: Sequence[Instance],
    resolve: RepoResolver,
    settings: EngineSettings,
    out: Path,
    excluded: frozenset[str],
    *,
    max_per_repo: int = 200,
    kind: str = "issue",
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Append the pairs of every issue not yet in the folder's file for ``kind``
    (``issues.jsonl``, or ``commits.jsonl`` for mined fix commits)."""
    out.mkdir(parents=True, exist_ok=True)
    target = out / PAIR_FILES[kind]
    done_file = target.with_suffix(".done")
    done = set(done_file.read_text().split()) if done_file.exists() else set()
    kept, dropped = drop_excluded(instances, lambda i: i.repo, excluded)
    todo: list[Instance] = []
    per_repo: Counter[str] = Counter()
    for inst in dedupe_by_text(kept):
        per_repo[inst.repo] += 1
        if per_repo[inst.repo] <= max_per_repo:
            todo.append(inst)
    missing: Counter[str] = Counter()
    failed = 0
    for n, inst in enumerate(todo):
        if progress is not None:
            progress(INSTANCES, n, len(todo), inst.instance_id)
        if inst.instance_id in done:
            continue
        path = resolve(inst)
        if not path.exists():
            missing[inst.repo] += 1
            continue
        try:
            pairs = issue_pairs(inst, GitSource(path, inst.base_commit), settings, kind=kind)
        except SpiderError as exc:
            failed += 1
            log.warning("%s: %s", inst.instance_id, exc)
            pairs = []
        with target.open("a", encoding="utf-8") as fh:
            fh.write("".join(p.to_json() + "\n" for p in pairs))
        with done_file.open("a", encoding="utf-8") as fh:
            fh.write(inst.instance_id + "\n")
    rows = read_pairs(target) if target.exists() else []
    return {
        "pairs": len(rows),
        "queries": len({r.source for r in rows}),
        "by_repo": dict(Counter(r.repo for r in rows)),
        "excluded": dict(dropped),
        "not_on_disk": dict(missing),
        "failed_this_run": failed,
    }


def commit_queries(commits: Sequence[Instance], *, fragments: bool = True) -> list[Instance]:
    """Each mined fix commit as a query (its cleaned message), plus a second one from the
    changelog fragment it adds (``<id>#changelog``), both for the functions it edits."""
    out: list[Instance] = []
    for inst in commits:
        out.append(inst)
        text = changelog_fragment(inst.patch) if fragments and inst.patch else ""
        if text:
            out.append(
                replace(
                    inst, instance_id=inst.instance_id + FRAGMENT_SUFFIX, problem_statement=text
                )
            )
    return out


def read_pairs(path: Path) -> list[Pair]:
    """Every pair of a JSONL file."""
    out: list[Pair] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                out.append(Pair(**json.loads(line)))
    return out


def read_pair_folder(out: Path, excluded: frozenset[str]) -> dict[str, list[Pair]]:
    """The code-text, commit and issue pairs under ``out``, excluded repositories dropped again
    (a folder made with an older list is still refused what the current one names)."""
    code: list[Pair] = []
    for f in sorted((out / CODE_TEXT_DIR).glob("*.jsonl")):
        code.extend(read_pairs(f))
    found: dict[str, list[Pair]] = {"code-text": code}
    for kind, name in PAIR_FILES.items():
        found[kind] = read_pairs(out / name) if (out / name).exists() else []
    return {
        kind: drop_excluded(rows, lambda p: p.repo, excluded)[0] for kind, rows in found.items()
    }


@dataclass(frozen=True)
class PairsRun:
    """What ``spider train pairs`` asks for: where the repositories are (``repos``, a
    template of ``{owner}`` and ``{name}``), the folder to write, and the sources of
    pairs (code repositories, mined commits, issue datasets)."""

    repos: str
    out: Path
    command: str  # as typed: recorded in the summary
    settings: EngineSettings
    code_repos: tuple[str, ...] | None = None  # owner/name whose HEAD gives code-text pairs
    datasets: tuple[Path, ...] = ()
    mined: tuple[Path, ...] = ()  # mined fix commits: a file or a `bench history` folder
    fragments: bool = True  # a mined commit's changelog line as a second query
    excluded: tuple[Path, ...] = ()  # further lists of repositories never to train on
    max_files: int = 2000
    max_pairs: int = 4000
    max_per_repo: int = 200
    progress: Progress | None = None


@dataclass
class PairsFit:
    """What :func:`run` wrote: its summary (also ``OUT/pairs.json``), per kind."""

    summary: dict[str, Any]

    def excluded(self) -> dict[str, dict[str, int]]:
        """Per kind, the pairs dropped from each excluded repository (kinds with none left out)."""
        out: dict[str, dict[str, int]] = {}
        for kind in ("code-text", "commits", "issues"):
            part = self.summary.get(kind)
            if isinstance(part, dict) and part.get("excluded"):
                out[kind] = dict(part["excluded"])
        return out


def mined_file(path: Path) -> Path:
    """A mined dataset: the file itself, or the one a ``spider bench history`` folder holds."""
    from spider.eval.dataset import HISTORY_DATASET_FILE

    return path / HISTORY_DATASET_FILE if path.is_dir() else path


def run(config: PairsRun) -> PairsFit:
    """Write the code-text, commit and issue pairs ``config`` asks for into ``config.out``
    (resumable) and the summary beside them."""
    from spider.eval.dataset import read_dataset
    from spider.eval.snapshot import template_resolver
    from spider.learn.excluded import excluded_repos

    banned = excluded_repos(list(config.excluded))
    resolve = template_resolver(config.repos)
    settings, out, progress = config.settings, config.out, config.progress
    summary: dict[str, Any] = {"command": config.command}
    if config.code_repos is not None:

        def repo_path(repo: str) -> str:
            owner, _, name = repo.partition("/")
            return config.repos.format(owner=owner, name=name)

        summary["code-text"] = build_code_text(
            list(config.code_repos), repo_path, settings, out, banned,
            max_files=config.max_files, max_pairs=config.max_pairs, progress=progress,
        )  # fmt: skip
    if config.mined:
        commits = [i for d in config.mined for i in read_dataset(mined_file(d))]
        summary["commits"] = build_issue_pairs(
            commit_queries(commits, fragments=config.fragments), resolve, settings, out, banned,
            max_per_repo=2 * config.max_per_repo, kind="commit", progress=progress,
        )  # fmt: skip
    if config.datasets:
        rows = [i for d in config.datasets for i in read_dataset(d)]
        summary["issues"] = build_issue_pairs(
            rows, resolve, settings, out, banned, max_per_repo=config.max_per_repo,
            progress=progress,
        )  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n")
    return PairsFit(summary)
