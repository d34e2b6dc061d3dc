"""``spider bench speed``: what a first and a later comment cost, measured in one run.

On one repository commit, in one process (plus child processes for the CLI):
whether the CPU multiplies bf16 natively (the torch-bf16 rows mean little where not),
encoder throughput per backend on the same function texts, the ONNX thread setting's
effect (idle threads spinning or not, timed in alternation), the full cold index with the
shipped backend, the cold path's time to a first ranking (only the pool embedded, or the
whole repository where a pool would cost nearly as much), the warm index load, the
history window read from its commit parses and from the kept snapshot, query latency
p50/p99 over N issues, and a warm ``spider locate`` in a new process: wall, CPU, and
its imports (seconds, and whether any heavy library was imported). Every step records
the load average beside its figure: on a shared machine, compare ratios measured in the
same run.

The webhook-to-comment latency through the dev stack is the app's half: ``--hook CMD``
runs and times any command (e.g. a ``spider-bot-replay`` invocation) as one more row.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from spider.cpu import cpu_summary, has_native_bf16
from spider.models import Issue
from spider.retrieve.dense import BACKENDS
from spider.settings import DEFAULT_COLD_POOL, EngineSettings, embeds_whole

WARMUP_TEXTS = 8  # embedded before timing a backend: model load is reported apart
DEFAULT_SAMPLE = 512  # function texts per backend throughput measurement (0 = every function)
DEFAULT_QUERIES = 20  # issues for the latency percentiles
CLI_TIMEOUT_S = 600  # a warm CLI run that takes longer than this is a failure, not a figure
# what a warm query must never import (seconds each, and the encoder's torch stack)
HEAVY_MODULES = ("torch", "transformers", "sentence_transformers", "bm25s", "scipy")


def _load() -> float:
    return round(os.getloadavg()[0], 2)


@dataclass
class Step:
    """One measured figure with the machine load when it was taken."""

    name: str
    value: float | None
    unit: str
    load: float
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class SpeedRun:
    """Everything measured, in order; ``to_dict`` is what the JSON file holds."""

    repo: str
    commit: str
    functions: int = 0
    steps: list[Step] = field(default_factory=list)
    cpu: str = field(default_factory=cpu_summary)  # model and vector features (AMX or not)

    def add(self, name: str, value: float | None, unit: str, **detail: Any) -> Step:
        """Record one figure (with the load average now)."""
        step = Step(name, None if value is None else round(float(value), 3), unit, _load(), detail)
        self.steps.append(step)
        return step

    def to_dict(self) -> dict[str, Any]:
        """The run as JSON-ready data."""
        return {
            "repo": self.repo,
            "commit": self.commit,
            "functions": self.functions,
            "cpus": os.cpu_count(),
            "cpu": self.cpu,
            "steps": [s.__dict__ for s in self.steps],
        }


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _sample(docs: Sequence[str], n: int) -> list[str]:
    if n <= 0 or n >= len(docs):
        return list(docs)
    step = len(docs) / n
    return [docs[int(i * step)] for i in range(n)]


def _fresh_cache(root: Path, name: str, export: Path) -> Path:
    """A cache directory with nothing in it but a link to the exported ONNX graphs."""
    d = root / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    (d / "models").symlink_to(export / "models", target_is_directory=True)
    return d


def _issues(texts: Sequence[str], n: int, fallback: Sequence[str]) -> list[Issue]:
    chosen = list(texts[:n]) or [f"{name} does not work as documented" for name in fallback[:n]]
    out = []
    for t in chosen:
        title, _, body = t.strip().partition("\n")
        out.append(Issue(title=title, body=body))
    return out


def measure_speed(
    repo: Path,
    commit: str,
    *,
    base: EngineSettings,
    work: Path,
    backends: Sequence[str] = BACKENDS,
    sample: int = DEFAULT_SAMPLE,
    full: bool = True,
    queries: int = DEFAULT_QUERIES,
    issue_texts: Sequence[str] = (),
    hook: str | None = None,
    index_encoders: Sequence[str] = (),
    log: Callable[[str], None] = lambda _m: None,
) -> SpeedRun:
    """Measure one repository commit (see the module docstring); ``work`` holds the caches.
    The index phases run once per document encoder of ``index_encoders`` (default: the
    configured one), each row then naming its encoder.

    Long because it is a linear script of timed phases (export, graph, each backend's
    throughput), each timing read right after its step."""
    from spider.index import build_index
    from spider.retrieve.dense import Encoder, settings_delta
    from spider.retrieve.onnx_encoder import export_onnx
    from spider.source import GitSource

    run = SpeedRun(repo=str(repo), commit=commit)
    run.add("CPU multiplies bf16 natively (1 = yes)", float(has_native_bf16()), "",
            encoder=base.encoder)
    work.mkdir(parents=True, exist_ok=True)
    export = work / "export"
    delta = settings_delta(base)  # tuned weights: every backend embeds with them

    def model_dir() -> Path:
        encoder = Encoder(base.model, base.max_seq_length, None, export_dir=export, delta=delta)
        return Path(encoder.model_dir())

    _, secs = _timed(lambda: export_onnx(model_dir(), export))
    run.add("onnx export (once per model)", secs, "s")
    log(f"export {secs:.1f} s")

    main = _fresh_cache(work, "main", export)
    settings = base.model_copy(update={"cache_dir": main, "cold_pool": 0})
    index, secs = _timed(lambda: build_index(GitSource(repo, commit), settings, embed=False))
    run.functions = len(index.function_ids)
    parsers = index.graph.stats.parsers
    run.add(f"graph + BM25 (cold; {parsers} parsing process{'es' if parsers > 1 else ''})",
            secs, "s", functions=run.functions, parsers=parsers)  # fmt: skip
    log(f"graph {secs:.1f} s, {run.functions} functions")
    if parsers > 1:
        ratio = _parse_ratio(repo, commit, base, parsers)
        run.add(f"graph build: one parsing process / {parsers}", ratio, "x", rounds=ROUNDS)
        log(f"graph build, 1 / {parsers} parsing processes: {ratio:.2f}")
    docs = index.documents()

    texts = _sample(docs, sample)
    rates: dict[str, float] = {}
    vectors: dict[str, Any] = {}
    for backend in backends:
        enc = Encoder(base.model, base.max_seq_length, None, base.embed_batch_size,
                      backend=backend, export_dir=export, delta=delta,
                      document_seq_length=base.document_seq_length)  # fmt: skip
        _, load_s = _timed(lambda enc=enc: enc.encode(texts[:WARMUP_TEXTS]))
        vectors[backend], secs = _timed(lambda enc=enc: enc.encode(texts))
        rates[backend] = len(texts) / secs if secs else 0.0
        run.add(f"encode {backend}", rates[backend], "fn/s", texts=len(texts),
                seconds=round(secs, 2), first_batch_s=round(load_s, 2))  # fmt: skip
        log(f"{backend}: {rates[backend]:.1f} fn/s")
        if delta is not None:  # the tuned weights' cost, against the bundled ones, same run
            ratio = _delta_ratio(base, backend, export, delta, texts)
            run.add(f"tuned / bundled {backend}", ratio, "x", texts=len(texts), rounds=ROUNDS)
            log(f"{backend}: tuned / bundled {ratio:.3f}")
    ref = rates.get("torch")
    for backend, rate in rates.items():
        if ref and backend != "torch":
            run.add(f"speed-up {backend} / torch", rate / ref, "x")
    _versus_onnx_fp32(run, rates, vectors)
    if "onnx" in rates:
        ratio = _spinning_ratio(model_dir(), export, base.document_seq_length, texts,
                                base.embed_batch_size)
        run.add("onnx fp32: idle threads not spinning / spinning", ratio, "x",
                texts=len(texts), rounds=ROUNDS)
        log(f"threads not spinning / spinning {ratio:.2f}")
        if base.document_seq_length != base.max_seq_length:
            ratio = _cap_ratio(model_dir(), export, base, texts)
            run.add(f"onnx fp32: documents cut at {base.document_seq_length} tokens / at "
                    f"{base.max_seq_length}", ratio, "x", texts=len(texts), rounds=ROUNDS)
            log(f"document cap {base.document_seq_length} / {base.max_seq_length}: {ratio:.2f}")

    issues = _issues(issue_texts, max(queries, 1), [f.split(":")[-1] for f in index.function_ids])
    encoders = list(index_encoders) or [base.encoder]
    for encoder in encoders:
        tag = f" [{encoder}]" if len(encoders) > 1 else ""
        _index_rows(run, repo, commit, base.model_copy(update={"encoder": encoder}),
                    _PhaseDirs(work, export, main, encoder if tag else ""), issues,
                    full=full, queries=queries, tag=tag, log=log)  # fmt: skip
    if hook:
        done, secs = _timed(lambda: subprocess.run(hook, shell=True, check=False))
        run.add("hook", secs, "s", command=hook, returncode=done.returncode)
    return run


@dataclass(frozen=True)
class _PhaseDirs:
    """Where one encoder's phases keep their caches: ``main`` (graph and BM25 measured
    there first) shared by a run of one encoder, a copy of its graphs for each of several."""

    work: Path
    export: Path
    main: Path
    name: str = ""

    def index_cache(self) -> Path:
        return self._with_graphs(f"main-{self.name}") if self.name else self.main

    def cold_cache(self) -> Path:
        return self._with_graphs(f"cold-{self.name}" if self.name else "cold")

    def _with_graphs(self, name: str) -> Path:
        """A fresh cache holding ``main``'s graphs: the graph's cost is its own row."""
        d = _fresh_cache(self.work, name, self.export)
        shutil.copytree(self.main / "graphs", d / "graphs")
        return d


def _index_rows(
    run: SpeedRun,
    repo: Path,
    commit: str,
    base: EngineSettings,
    dirs: _PhaseDirs,
    issues: list[Issue],
    *,
    full: bool,
    queries: int,
    tag: str,
    log: Callable[[str], None],
) -> None:
    """One document encoder's rows: the full cold index, the cold path's first ranking,
    the warm load, the history window, query percentiles and a warm CLI run (``tag`` names
    the encoder in each row when a run measures several).

    Long because it is a linear script of timed phases, each timing read right after its
    step."""
    from spider.index import build_index
    from spider.localize import locate
    from spider.source import GitSource

    main = dirs.index_cache()
    settings = base.model_copy(update={"cache_dir": main, "cold_pool": 0})
    index = build_index(GitSource(repo, commit), settings, embed=False)
    if full:
        _, secs = _timed(index.vectors)
        run.add(f"full cold index: embed all ({base.encoder})", secs, "s",
                functions=run.functions, per_second=round(run.functions / secs, 1) if secs else None)  # fmt: skip
        log(f"full embed {secs:.1f} s")

    cold_dir = dirs.cold_cache()
    pool = base.cold_pool or DEFAULT_COLD_POOL
    cold_settings = base.model_copy(update={"cache_dir": cold_dir, "cold_pool": pool})

    def first_ranking() -> Any:
        idx = build_index(GitSource(repo, commit), cold_settings)
        return locate(idx, issues[0], cold_settings)

    loc, secs = _timed(first_ranking)
    graph_s = next(s.value for s in run.steps if s.name.startswith("graph")) or 0.0
    run.add(f"cold path: first ranking (graph cached){tag}", secs, "s", pool=pool,
            partial=loc.settings.partial is not None,
            whole=embeds_whole(run.functions, pool))  # fmt: skip
    run.add(f"cold path: first ranking incl. graph{tag}", secs + graph_s, "s")
    log(f"cold first ranking {secs:.1f} s")

    if full:
        warm, secs = _timed(lambda: build_index(GitSource(repo, commit), settings))
        run.add(f"warm index load (in process){tag}", secs, "s",
                vectors=warm.stats.get("vectors_from"))  # fmt: skip
        _history_rows(run, repo, commit, settings, tag)
        warm_settings = settings
        lat = []
        locate(warm, issues[0], warm_settings)  # the query encoder's load is not a query
        for issue in issues[:queries]:
            _, secs = _timed(lambda issue=issue: locate(warm, issue, warm_settings))
            lat.append(secs)
        run.add(f"query p50{tag}", float(np.percentile(lat, 50)), "s", n=len(lat))
        run.add(f"query p99{tag}", float(np.percentile(lat, 99)), "s", n=len(lat))
        log(f"query p50 {np.percentile(lat, 50):.2f} s")
        wall, cpu = _cli_wall(repo, commit, main, issues[0], base)
        run.add(f"warm CLI locate (new process): wall{tag}", wall, "s", encoder=base.encoder)
        run.add(f"warm CLI locate (new process): CPU user+sys{tag}", cpu, "s")
        imports, heavy = _cli_imports(repo, commit, main, issues[0], base)
        run.add(f"warm CLI locate (new process): imports{tag}", imports, "s",
                heavy=",".join(heavy) or "none")


ROUNDS = 3  # alternate the compared runs this many times; the best of each counts


def _versus_onnx_fp32(run: SpeedRun, rates: dict[str, float], vectors: dict[str, Any]) -> None:
    """Each other backend's throughput and vectors against ONNX fp32 (the path of a CPU
    without bf16), where both were measured: how much faster, and how close (cosine)."""
    fp32 = vectors.get("onnx")
    if fp32 is None or not rates.get("onnx"):
        return
    for backend, vecs in vectors.items():
        if backend == "onnx":
            continue
        run.add(f"speed-up {backend} / onnx fp32", rates[backend] / rates["onnx"], "x")
        cos = (vecs * fp32).sum(axis=1)
        run.add(f"cosine {backend} / onnx fp32 (mean)", float(cos.mean()), "",
                minimum=round(float(cos.min()), 5), texts=len(cos))  # fmt: skip


def _best_alternating(runs: Sequence[Callable[[], Any]]) -> list[float]:
    """The best seconds of each of ``runs``, timed in alternation (first, second, first,
    ...) :data:`ROUNDS` times, so that the machine's load hits each alike."""
    best = [float("inf")] * len(runs)
    for _ in range(ROUNDS):
        for n, run in enumerate(runs):
            best[n] = min(best[n], _timed(run)[1])
    return best


def _parse_ratio(repo: Path, commit: str, base: EngineSettings, parsers: int) -> float:
    """A graph build's seconds (every file parsed: no outline cache) with one parsing
    process over with ``parsers``, timed in alternation; the best of each counts."""
    from spider.graph import build_graph
    from spider.source import GitSource

    settings = [base.model_copy(update={"parse_workers": n}) for n in (1, parsers)]
    best = _best_alternating([lambda s=s: build_graph(GitSource(repo, commit), s) for s in settings])
    return best[0] / best[1] if best[1] else 0.0


def _delta_ratio(
    base: EngineSettings, backend: str, export: Path, delta: Any, texts: Sequence[str]
) -> float:
    """Throughput of the tuned weights over the bundled ones on one backend, timed in
    alternation (bundled, tuned, bundled, ...) so that the machine's load hits both."""
    from spider.retrieve.dense import Encoder

    encoders = [
        Encoder(
            base.model,
            base.max_seq_length,
            None,
            base.embed_batch_size,
            backend=backend,
            export_dir=export,
            delta=d,
            document_seq_length=base.document_seq_length,
        )
        for d in (None, delta)
    ]
    for enc in encoders:
        enc.encode(list(texts[:WARMUP_TEXTS]))  # load and export outside the timing
    # no cache: every text runs
    best = _best_alternating([lambda enc=enc: enc.encode(list(texts)) for enc in encoders])
    return best[0] / best[1] if best[1] else 0.0


def _cap_ratio(model_dir: Path, export: Path, base: EngineSettings, texts: Sequence[str]) -> float:
    """fp32 ONNX throughput with documents cut at ``base.document_seq_length`` tokens over
    cut at the query cap ``base.max_seq_length`` (one session), timed in alternation."""
    from spider.retrieve.dense import clip_text
    from spider.retrieve.onnx_encoder import OnnxModel, onnx_paths

    model = OnnxModel(onnx_paths(model_dir, export)[0], model_dir, base.max_seq_length)
    caps = (base.max_seq_length, base.document_seq_length)
    clipped = {cap: [clip_text(t, cap) for t in texts] for cap in caps}
    for cap in caps:
        model.encode(clipped[cap][:WARMUP_TEXTS], base.embed_batch_size, cap)
    best = _best_alternating(
        [lambda c=cap: model.encode(clipped[c], base.embed_batch_size, c) for cap in caps]
    )
    return best[0] / best[1] if best[1] else 0.0


def _spinning_ratio(
    model_dir: Path, export: Path, max_seq_length: int, texts: Sequence[str], batch: int
) -> float:
    """fp32 ONNX throughput with idle threads not spinning (the shipped setting) over
    spinning (ONNX Runtime's default), timed in alternation; the best of each counts."""
    from spider.retrieve.onnx_encoder import OnnxModel, onnx_paths

    graph = onnx_paths(model_dir, export)[0]
    models = [OnnxModel(graph, model_dir, max_seq_length, spinning=spin) for spin in (False, True)]
    for m in models:
        m.encode(list(texts[:WARMUP_TEXTS]), batch)
    best = _best_alternating([lambda m=m: m.encode(list(texts), batch) for m in models])
    return best[1] / best[0] if best[0] else 0.0


def _history_rows(
    run: SpeedRun, repo: Path, commit: str, settings: EngineSettings, tag: str = ""
) -> None:
    """The history window as a query reads it: from the commits' cached parses (what each
    new process did before the snapshot was kept) and from the kept snapshot."""
    from spider.index import build_index
    from spider.source import GitSource

    kept = settings.cache_dir / "history"
    shutil.rmtree(kept, ignore_errors=True)  # the parses stay cached in history.sqlite
    for name in ("history window: from the commits' cached parses", "history window: kept"):
        index = build_index(GitSource(repo, commit), settings)
        history, secs = _timed(index.history)
        history.scores("speed")  # its BM25 over the messages: built, then read back
        run.add(name + tag, secs, "s", commits=history.commits)


def _cli_env(cache: Path, settings: EngineSettings) -> dict[str, str]:
    return {
        **os.environ,
        "SPIDER_CACHE_DIR": str(cache),
        "SPIDER_ENCODER": settings.encoder,
        "SPIDER_MODEL": settings.model,
        "SPIDER_ENCODER_DELTA": settings.encoder_delta,
        "SPIDER_MAX_SEQ_LENGTH": str(settings.max_seq_length),
        "SPIDER_DOCUMENT_SEQ_LENGTH": str(settings.document_seq_length),
    }


def _cli_imports(
    repo: Path, commit: str, cache: Path, issue: Issue, settings: EngineSettings
) -> tuple[float | None, list[str]]:
    """Seconds a warm ``spider locate`` spends importing (``python -X importtime``, every
    module's own time summed) and which of :data:`HEAVY_MODULES` it imported."""
    cmd = [sys.executable, "-X", "importtime", "-m", "spider.cli", "locate", str(repo),
           "--rev", commit, "--issue", issue.text, "--json"]  # fmt: skip
    done = subprocess.run(cmd, env=_cli_env(cache, settings), capture_output=True, text=True,
                          check=False, timeout=CLI_TIMEOUT_S)  # fmt: skip
    if done.returncode != 0:
        return None, []
    total_us = 0
    seen: set[str] = set()
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        own, _, name = line[len("import time:"):].split("|")
        if own.strip().isdigit():  # the header line's columns are names
            total_us += int(own.strip())
        seen.add(name.strip().split(".")[0])
    return total_us / 1e6, [m for m in HEAVY_MODULES if m in seen]


def _cli_wall(
    repo: Path, commit: str, cache: Path, issue: Issue, settings: EngineSettings
) -> tuple[float | None, float | None]:
    """Wall and CPU (user + system) seconds of a warm ``spider locate`` in a fresh process
    (the second of two). On a busy machine the CPU time bounds the quiet machine's wall."""
    env = _cli_env(cache, settings)
    cmd = [sys.executable, "-m", "spider.cli", "locate", str(repo), "--rev", commit,
           "--issue", issue.text, "--json"]  # fmt: skip
    wall: float | None = None
    cpu: float | None = None
    for _ in range(2):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, check=False, timeout=CLI_TIMEOUT_S)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        ok = done.returncode == 0
        wall = time.perf_counter() - t0 if ok else None
        used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        cpu = round(used, 3) if ok else None
    return wall, cpu


def render_speed(run: SpeedRun) -> str:
    """The run as a Markdown table."""
    lines = [
        f"`{run.repo}` at `{run.commit[:10]}`, {run.functions} functions, {os.cpu_count()} CPUs: "
        + run.cpu,
        "",
        "| step | value | unit | load (1 min) |",
        "|---|---:|---|---:|",
    ]
    for s in run.steps:
        value = "failed" if s.value is None else f"{s.value:g}"
        lines.append(f"| {s.name} | {value} | {s.unit} | {s.load:g} |")
    return "\n".join(lines) + "\n"


def write_speed(run: SpeedRun, out: Path | None) -> None:
    """Write the JSON (and a Markdown copy beside it) when ``out`` is given."""
    if out is None:
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(run.to_dict(), indent=2) + "\n")
    out.with_suffix(".md").write_text(render_speed(run))


def default_work_dir() -> Path:
    """A temporary folder for the run's caches."""
    return Path(tempfile.mkdtemp(prefix="spider-speed-"))
