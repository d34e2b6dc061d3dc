"""Rendering a summary: Markdown and console tables share one grid; missing reads as –."""

from __future__ import annotations

import io

from spider.bench.report import markdown_report, markdown_table, render_tables
from spider.bench.store import language_of

HEADER = "| method | n | R@1 | R@5 | R@10 | R@20 | A@20 | MRR@20 | adm/issue | offered/issue |"


def test_markdown_table_rows_and_rounding() -> None:
    text = markdown_table(
        {"dense": {"n": 3, "R@1": 0.0, "R@20": 0.66666, "MRR@20": 0.5, "adm/issue": 1.0 / 3}}
    )
    lines = text.splitlines()
    assert lines[0] == HEADER
    assert lines[1] == "|---|" + "---:|" * 9
    # metrics the summary lacks, and rows without expansion accounting, read as missing
    assert lines[2] == "| dense | 3 | 0.000 | – | – | 0.667 | – | 0.500 | 0.33 | – |"


def test_markdown_report_has_per_repo_and_provenance() -> None:
    summary = {
        "methods": {"bm25": {"n": 1, "R@20": 1.0}},
        "per_repo": {"bm25": {"a/b": {"n": 1, "R@20": 1.0}}},
        "command": "spider bench x", "date": "d", "machine": "m",
    }  # fmt: skip
    text = markdown_report(summary, "bm25")
    assert "| bm25: repository |" in text and "| a/b | 1 |" in text
    assert text.endswith("`spider bench x` · d · m")


def _metrics(r20: float, mrr: float) -> dict[str, float]:
    return {"R@1": 0.0, "R@5": 0.0, "R@10": 0.0, "R@20": r20, "A@20": 0.0, "MRR@20": mrr}


def test_repository_subsets_average_over_their_instances() -> None:
    summary = {
        "methods": {"bm25": {"n": 6, "R@20": 0.5}},
        "per_repo": {
            "bm25": {
                # rows of a/big predate the accounting: its means are missing, not zero
                "a/big": {"n": 3, **_metrics(0.0, 0.0), "n_expansion": 0,
                          "adm/issue": None, "offered/issue": None},
                "c/small": {"n": 1, **_metrics(1.0, 0.5), "n_expansion": 1,
                            "adm/issue": 2.0, "offered/issue": 10.0},
                "d/other": {"n": 2, **_metrics(0.5, 1.0), "n_expansion": 2,
                            "adm/issue": 0.5, "offered/issue": 4.0},
            }
        },
    }  # fmt: skip
    only = markdown_report(summary, only=["a/big", "c/small"])
    assert "| bm25 | 4 | 0.000 | 0.000 | 0.000 | 0.250 | 0.000 | 0.125 | 2.00 | 10.00 |" in only
    skip = markdown_report(summary, skip=["a/big"])
    assert "| bm25 | 3 | 0.000 | 0.000 | 0.000 | 0.667 | 0.000 | 0.833 | 1.00 | 6.00 |" in skip
    none = markdown_report(summary, only=["a/big"])
    assert "| bm25 | 3 | 0.000 | 0.000 | 0.000 | 0.000 | 0.000 | 0.000 | – | – |" in none


def test_console_tables_show_the_expansion_columns() -> None:
    summary = {
        "scored": 2, "instances": 2, "k": 20, "model": "m",
        "metrics": ["R@20", "MRR@20"],
        "methods": {
            "old": {"n": 2, "R@20": 0.5, "MRR@20": 0.25},  # a summary from before
            "expand": {"n": 2, "R@20": 1.0, "MRR@20": 0.5, "adm/issue": 1.5,
                       "offered/issue": 12.0, "n_expansion": 2},
        },
        "per_repo": {},
    }  # fmt: skip
    buf = io.StringIO()
    render_tables(summary, file=buf)
    text = buf.getvalue()
    assert "adm/issue" in text and "offered/issue" in text
    old = next(line for line in text.splitlines() if " old " in line)
    assert old.count("–") == 2
    expand = next(line for line in text.splitlines() if " expand " in line)
    assert "1.50" in expand and "12.00" in expand


def test_an_instance_counts_under_the_language_of_its_fix() -> None:
    assert language_of(["src/a.ts:f", "src/b.js:g", "lib/c.py:h"]) == "JS/TS"
    assert language_of(["src/x.h:f", "src/x.cpp:g"]) == "cpp"  # headers beside C++ are C++
    assert language_of(["src/x.h:f", "src/x.c:g"]) == "c"
    assert language_of(["README.md:x"]) == language_of([]) == "unknown"


def test_markdown_report_has_a_per_language_table() -> None:
    summary = {
        "methods": {"dense": {"n": 2, "R@20": 0.5}},
        "per_repo": {},
        "per_language": {"dense": {"go": {"n": 1, "R@20": 1.0}, "rust": {"n": 1, "R@20": 0.0}}},
    }
    text = markdown_report(summary, language="dense")
    assert "| dense: language |" in text and "| Go | 1 |" in text and "| Rust | 1 |" in text


def test_a_repository_counts_under_the_language_of_all_its_fixes() -> None:
    from types import SimpleNamespace

    from spider.bench.store import summarise
    from spider.eval.dataset import Instance
    from spider.settings import EngineSettings

    def row(iid: str, gt: list[str]) -> dict[str, object]:
        return {"instance_id": iid, "repo": "o/json", "method": "bm25", "gt": gt,
                "metrics": {"R@20": 1.0}, "seconds": 1.0, "timings": {}}  # fmt: skip

    rows = [row("a", ["include/x.h:parse"]), row("b", ["src/x.cpp:parse", "src/y.cpp:f"])]
    insts = [Instance(i, "o/json", "0" * 40, "t", "") for i in ("a", "b")]
    cfg = SimpleNamespace(
        methods=[SimpleNamespace(name="bm25")], settings=EngineSettings(), command="x"
    )
    summary = summarise(rows, insts, cfg)  # type: ignore[arg-type]
    assert summary["per_language"]["bm25"] == {"cpp": summary["methods"]["bm25"]}


def test_the_summary_names_the_tuned_models_the_predictions_ran_with() -> None:
    from types import SimpleNamespace

    from spider.bench.store import summarise
    from spider.eval.dataset import Instance
    from spider.settings import EngineSettings

    def row(iid: str, settings: dict[str, object]) -> dict[str, object]:
        return {"instance_id": iid, "repo": "o/r", "method": "default", "gt": ["a.py:f"],
                "metrics": {"R@20": 1.0}, "seconds": 1.0, "timings": {}, "settings": settings}  # fmt: skip

    insts = [Instance(i, "o/r", "0" * 40, "t", "") for i in ("a", "b")]
    cfg = SimpleNamespace(
        methods=[SimpleNamespace(name="default")], settings=EngineSettings(), command="x"
    )
    plain = summarise([row("a", {}), row("b", {})], insts, cfg)  # type: ignore[arg-type]
    assert plain["model"] == "all-MiniLM-L6-v2 (bundled)"
    assert "cross_encoders" not in plain and "encoder_deltas" not in plain
    assert "ranker_files" not in plain
    tuned = [
        row("a", {"encoder_delta": "d1", "cross_encoder": "c1"}),
        row("b", {"ranker_file": "r1"}),
    ]
    summary = summarise(tuned, insts, cfg)  # type: ignore[arg-type]
    assert summary["encoder_deltas"] == ["d1"] and summary["cross_encoders"] == ["c1"]
    assert summary["ranker_files"] == ["r1"]
    assert summary["model"] == "all-MiniLM-L6-v2 (bundled) + tuned delta d1; cross-encoder c1"
