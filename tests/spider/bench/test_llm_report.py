"""`spider bench llm`'s figures from recorded predictions: quality per method over the
issues all of them scored, admissions against what they evicted (η, τ), the reader's
weight swept over its verdicts, and the same per language."""

from __future__ import annotations

from typing import Any

from spider.bench.llm_report import figures, markdown, reading_methods, sweep
from spider.eval.metrics import score_instance


def row(iid: str, repo: str, method: str, ranked: list[str], gt: list[str],
        **extra: Any) -> dict[str, Any]:
    return {"instance_id": iid, "repo": repo, "method": method, "ranked": ranked,
            "ranked_ids": ranked, "dataset_ids": ranked, "gt": gt,
            "metrics": score_instance(ranked, gt), **extra}


def usage(seconds: float, prompt: int, cached: int) -> dict[str, Any]:
    return {"seconds": seconds, "prompt_tokens": prompt, "cached_tokens": cached}


BASE_A = ["a.py:f", "a.py:g", "a.py:h"]   # the fix is h (rank 3) and k (not listed)
GT_A = ["a.py:h", "a.py:k"]
BASE_B = ["b.go:x", "b.go:y"]             # the fix is y: rank 2
ROWS = [
    row("a-1", "o/a", "no-llm", BASE_A, GT_A),
    row("a-1", "o/a", "llm-read", ["a.py:h", "a.py:f", "a.py:g"], GT_A,
        llm={"roles": ["read"], "usage": usage(40.0, 1000, 600),
             "verdicts": {"a.py:f": -2.0, "a.py:g": -2.0, "a.py:h": 3.0}}),
    # the selector admits one right and one wrong neighbour, evicting g (wrong) and h (right)
    row("a-1", "o/a", "llm-select", ["a.py:f", "a.py:k", "a.py:z"], GT_A,
        admitted_ids=["a.py:k", "a.py:z"],
        llm={"roles": ["select"], "usage": usage(20.0, 500, 100),
             "verdicts": {"a.py:k": 2.0, "a.py:z": 1.5}}),
    row("b-1", "o/b", "no-llm", BASE_B, ["b.go:y"]),
    row("b-1", "o/b", "llm-read", ["b.go:x", "b.go:y"], ["b.go:y"],
        llm={"roles": ["read"], "usage": usage(60.0, 2000, 1000),
             "verdicts": {"b.go:x": 0.0, "b.go:y": 0.0}}),
]


def test_every_figure_is_over_the_issues_all_methods_scored() -> None:
    found = {f.method: f for f in figures(ROWS)}
    assert {f.n for f in found.values()} == {1}  # b-1 has no llm-select row
    pair = {f.method: f for f in figures([r for r in ROWS if r["method"] != "llm-select"])}
    assert {f.n for f in pair.values()} == {2}
    assert pair["llm-read"].metrics["MRR@20"] == (1.0 + 0.5) / 2
    assert pair["no-llm"].metrics["MRR@20"] == (1 / 3 + 0.5) / 2
    assert pair["no-llm"].metrics["R@20"] == (0.5 + 1.0) / 2
    assert pair["llm-read"].seconds_p50 in (40.0, 60.0)
    assert pair["llm-read"].cached_share == 1600 / 3000


def test_admissions_are_weighed_against_what_they_evicted() -> None:
    select = {f.method: f for f in figures(ROWS)}["llm-select"]
    assert (select.admitted, select.admitted_right) == (2, 1)   # η 0.5
    assert (select.evicted, select.evicted_right) == (2, 1)     # g and h left: τ 0.5


def test_the_sweep_remixes_the_recorded_verdicts() -> None:
    rows = [r for r in ROWS if r["method"] != "llm-select"]
    sw = sweep(rows)
    assert sw[0.0]["MRR@20"] == (1 / 3 + 0.5) / 2  # weight 0: the ranker's order
    assert sw[3.0]["MRR@20"] == (1.0 + 0.5) / 2    # h's verdict lifts it to the top


def test_the_methods_option_and_the_per_language_tables() -> None:
    text = markdown(ROWS, methods=["no-llm", "llm-read"], per_language=True)
    head = text.split("\n\n")[0]
    assert "`llm-select`" not in text
    assert "| `llm-read` | 2 |" in head
    assert "\npython:\n" in text.lower() and "\ngo:\n" in text.lower()
    lines = text.lower().splitlines()
    python_rows = lines[lines.index("python:"):][:6]
    assert "| `llm-read` | 1 | 0.500 | 0.500 | 0.500 | 1.000 |" in "\n".join(python_rows)
    go_rows = lines[lines.index("go:"):][:6]
    assert any(line.startswith("| `no-llm` | 1 | 0.000 |") for line in go_rows)


def test_the_sweep_re_sorts_only_the_head_the_reader_read() -> None:
    base = ["c.rs:a", "c.rs:b", "c.rs:c"]  # the reader read the top 2 only; the fix is c
    rows = [
        row("c-1", "o/c", "no-llm", base, ["c.rs:c"]),
        row("c-1", "o/c", "llm-read", base, ["c.rs:c"],
            llm={"usage": usage(10.0, 100, 0), "verdicts": {"c.rs:a": -3.0, "c.rs:b": -3.0}}),
    ]
    # two firm "no"s never sink the read functions below the unread c (the run's list)
    assert sweep(rows)[3.0]["MRR@20"] == 1 / 3


def test_a_reading_deeper_than_the_recorded_list_can_lift_into_it() -> None:
    # the run recorded a top 2; the reader read 3 (the ranker's third, c, is the fix)
    base = ["d.ts:a", "d.ts:b"]
    verdicts = {"d.ts:a": -1.0, "d.ts:b": -1.0, "d.ts:c": 2.0}
    rows = [
        row("d-1", "o/d", "no-llm", base, ["d.ts:c"]),
        row("d-1", "o/d", "llm-read:llm_read_depth=3", ["d.ts:c", "d.ts:a"], ["d.ts:c"],
            llm={"roles": ["read"], "usage": usage(10.0, 100, 0), "verdicts": verdicts}),
    ]
    sw = sweep(rows, "llm-read:llm_read_depth=3")
    assert sw[0.0]["MRR@20"] == 1 / 3   # weight 0: c keeps the ranker's third place
    assert sw[1.0]["MRR@20"] == 1.0     # 2 − ln 3 beats −1 − ln 1: c rises to the top
    # a list read only in part gains nothing from beyond it (those ids are folded, not deeper)
    partial = [dict(rows[0], ranked_ids=[*base, "d.ts:e"], ranked=[*base, "d.ts:e"],
                    dataset_ids=[*base, "d.ts:e"]), rows[1]]
    assert sweep(partial, "llm-read:llm_read_depth=3")[1.0]["R@20"] == 0.0


def test_every_reading_method_gets_its_own_sweep_and_a_selector_none() -> None:
    deeper = dict(ROWS[1], method="llm-read:llm_read_depth=30")
    rows = [*ROWS, deeper, dict(ROWS[4], method="llm-read:llm_read_depth=30")]
    assert reading_methods(rows) == ["llm-read", "llm-read:llm_read_depth=30"]
    text = markdown(rows, methods=["no-llm", "llm-read", "llm-read:llm_read_depth=30"])
    assert "| `llm-read`: reader weight |" in text
    assert "| `llm-read:llm_read_depth=30`: reader weight |" in text
    assert "`llm-select`: reader weight" not in markdown(ROWS)
