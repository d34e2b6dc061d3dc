"""Tuning the encoder: a few real steps write a delta the engine loads, and runs resume."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from spider.cpu import has_native_bf16
from spider.errors import InputError
from spider.learn.encoder_tune import TuneConfig, split_holdout, tune, write_delta
from spider.learn.lora import load_trainable
from spider.learn.model_file import Provenance
from spider.learn.pairs import Pair
from spider.learn.torch_fit import CHECKPOINT, STATE, read_curve
from spider.retrieve.delta import check_base, read_delta, weights_fingerprint
from spider.retrieve.dense import bundled_model_path

pytest.importorskip("peft")

CODE = [
    ("Add two numbers and return the sum.", "m.py\nadd\ndef add(a, b):\n    return a + b"),
    ("Reverse the characters of a string.", "m.py\nrev\ndef rev(s):\n    return s[::-1]"),
    (
        "Open a file and read all its lines.",
        "io.py\nlines\ndef lines(p):\n    return open(p).readlines()",
    ),
    (
        "Sort the users by their last login.",
        "u.py\nby_login\ndef by_login(u):\n    return sorted(u, key=last)",
    ),
]
ISSUE = "Crash when reversing an empty string\nrev('') raises instead of returning ''"


def _pairs() -> dict[str, list[Pair]]:
    docs = [d for _, d in CODE]
    code = [
        Pair("code-text", "acme/m", "m.py", q, d, [x for x in docs if x != d][:2]) for q, d in CODE
    ]
    issues = [
        Pair("issue", "acme/m", f"acme__m-{n}", f"{ISSUE} ({n})", docs[n % 4], [docs[(n + 1) % 4]])
        for n in range(4)
    ]
    return {"code-text": code, "issue": issues}


def _cfg(**kw: object) -> TuneConfig:
    base = dict(
        stages=[("code-text", 2), ("issue", 2)],
        batch=2,
        rank=4,
        alpha=8.0,
        warmup=1,
        checkpoint_every=1,
        max_doc_tokens=32,
        max_query_tokens=32,
        bf16=False,
    )
    base.update(kw)
    return TuneConfig(**base)  # type: ignore[arg-type]


def test_a_short_run_writes_a_delta_the_engine_reads(tmp_path: Path) -> None:
    base = bundled_model_path()
    model, result = tune(_pairs(), base, tmp_path / "work", _cfg())
    assert result.finished and result.steps_done == 4
    assert all(np.isfinite(result.losses))
    provenance = Provenance(command="cmd", comment="", cv={})
    target = write_delta(
        model, tmp_path / "delta.npz", _cfg(), weights_fingerprint(base), provenance
    )
    delta = read_delta(target, base)
    check_base(delta, base)
    assert delta.rank == 4 and len(delta.meta["targets"]) == 6 * 6  # 6 linear maps x 6 layers
    a, b = delta.factors["encoder.layer.0.attention.self.query.weight"]
    assert a.shape == (4, 384) and b.shape == (384, 4)
    assert np.abs(b).max() > 0  # B starts at zero: training moved it


def test_a_stopped_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    work = tmp_path / "work"
    _, first = tune(_pairs(), bundled_model_path(), work, _cfg(), budget_s=0.0)
    assert not first.finished and first.steps_done == 1
    assert (work / CHECKPOINT).exists()
    _, rest = tune(_pairs(), bundled_model_path(), work, _cfg(eval_every=7))  # not a setting
    assert rest.finished and rest.steps_done == 4
    assert len(json.loads((work / STATE).read_text())["losses"]) == 4
    with pytest.raises(InputError, match="other settings"):
        tune(_pairs(), bundled_model_path(), work, _cfg(rank=8, alpha=16.0))


def _two_repos() -> dict[str, list[Pair]]:
    pairs = _pairs()
    other = [
        Pair("issue", "zeta/z", f"zeta__z-{n}", p.query, p.positive, p.negatives)
        for n, p in enumerate(pairs["issue"])
    ]
    code = [Pair("code-text", "zeta/z", p.source, p.query, p.positive, p.negatives)
            for p in pairs["code-text"]]  # fmt: skip
    return {"code-text": pairs["code-text"] + code, "issue": pairs["issue"] + other}


def test_holdout_keeps_whole_repositories_out_of_every_stage() -> None:
    train, held, repos = split_holdout(_two_repos(), 0.4)
    assert len(repos) == 1 and {p.repo for p in held} == set(repos)
    assert all(p.repo not in repos for kind in train.values() for p in kind)
    assert len(train["code-text"]) == 4 and len(train["issue"]) == 4
    assert split_holdout(_two_repos(), 0.4)[2] == repos  # the same ones on a resume
    assert split_holdout(_two_repos(), 0.0)[1] == []


def test_a_run_with_a_holdout_writes_its_learning_curve(tmp_path: Path) -> None:
    work = tmp_path / "work"
    cfg = _cfg(holdout=0.4, eval_every=2, consistency=False)
    _, result = tune(_two_repos(), bundled_model_path(), work, cfg)
    steps = [p["step"] for p in result.curve]
    assert steps == [0, 2, 4]  # the untuned model, the end of each stage
    assert result.curve == read_curve(work)
    assert result.curve[0]["seen"] == {"code-text": 0, "issue": 0}
    assert result.curve[-1]["seen"] == {"code-text": 4, "issue": 4}
    for point in result.curve:
        assert point["queries"] == 4 and 0 < point["mrr"] <= 1 and 0 <= point["top1"] <= 1
    assert result.holdout_repos and result.pairs == {"code-text": 4, "issue": 4}


def test_the_consistency_filter_drops_a_positive_the_base_model_ranks_last() -> None:
    from spider.learn.encoder_tune import consistent

    docs = {q: d for q, d in CODE}
    good = Pair("issue", "acme/m", "i1", ISSUE, docs[CODE[1][0]], [docs[CODE[3][0]]])
    bad = Pair("issue", "acme/m", "i2", CODE[3][0], docs[CODE[0][0]], [docs[CODE[3][0]]])
    alone = Pair("issue", "acme/m", "i3", ISSUE, docs[CODE[1][0]], [])
    cfg = _cfg()
    model, tok = load_trainable(bundled_model_path(), cfg.rank, cfg.alpha, cfg.dropout)
    assert consistent(model, tok, [good, bad, alone], cfg) == [good, alone]


def test_train_delta_command_runs_three_stages_and_reports_its_curve(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from spider.cli import app

    pairs = _pairs_folder(tmp_path / "pairs")
    work = tmp_path / "work"
    out = CliRunner().invoke(
        app,
        ["train", "delta", "--pairs", str(pairs), "--work", str(work), "--code-steps", "1",
         "--commit-steps", "1", "--issue-steps", "1", "--batch", "2", "--rank", "4",
         "--holdout", "0.4", "--eval-every", "1", "--no-consistency", "--no-progress"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "held-out issues (zeta/z) at step 0 (untuned): MRR" in out.output
    assert "at step 3 (code-text 2, commit 2, issue 2): MRR" in out.output
    delta = read_delta(work / "encoder_delta.npz", bundled_model_path())
    assert delta.meta["trained_on"]["held_out"] == ["zeta/z"]
    assert "zeta/z" not in delta.meta["trained_on"]["repositories"]
    assert [p["step"] for p in delta.meta["curve"]] == [0, 1, 2, 3]
    assert delta.meta["config"]["stages"] == [["code-text", 1], ["commit", 1], ["issue", 1]]
    # bf16 only where the CPU multiplies it natively: emulated, it is ~7x slower than fp32
    assert delta.meta["config"]["bf16"] is has_native_bf16()


def _pairs_folder(pairs: Path) -> Path:
    """A `spider train pairs` folder of :func:`_two_repos`, with commit pairs too."""
    from spider.learn.pairs import CODE_TEXT_DIR, COMMITS_FILE, ISSUES_FILE

    data = _two_repos()
    (pairs / CODE_TEXT_DIR).mkdir(parents=True)
    (pairs / CODE_TEXT_DIR / "acme+m.jsonl").write_text(
        "".join(p.to_json() + "\n" for p in data["code-text"])
    )
    commits = [Pair("commit", p.repo, p.source + "c", p.query, p.positive, p.negatives)
               for p in data["issue"]]  # fmt: skip
    (pairs / COMMITS_FILE).write_text("".join(p.to_json() + "\n" for p in commits))
    (pairs / ISSUES_FILE).write_text("".join(p.to_json() + "\n" for p in data["issue"]))
    return pairs


def test_run_tunes_writes_the_delta_and_stops_at_its_budget(tmp_path: Path) -> None:
    """`run(config)` without the command: the file it writes reads back with its
    provenance; a spent budget writes nothing, and the same config goes on."""
    from spider.learn.encoder_tune import DeltaRun, run

    pairs, target = _pairs_folder(tmp_path / "pairs"), tmp_path / "out" / "d.npz"
    cfg = _cfg(holdout=0.4, consistency=False, eval_every=2)
    config = DeltaRun(pairs, tmp_path / "work", target, "spider train delta --pairs P", cfg)
    stopped = run(replace(config, budget_s=0.0))
    assert stopped.written is None and stopped.training.steps_done == 1
    fit = run(config)
    assert fit.written == target and fit.training.finished and fit.training.steps_done == 4
    delta = read_delta(target, bundled_model_path())
    assert delta.command == "spider train delta --pairs P" and "comment" not in delta.meta
    assert delta.meta["trained_on"]["held_out"] == ["zeta/z"] == fit.training.holdout_repos
    assert delta.meta["trained_on"]["repositories"] == ["acme/m"]
    assert [p["step"] for p in delta.meta["curve"]] == [0, 2, 4]


def _many_repos() -> list[Pair]:
    """Three repositories of 5, 4 and 3 pairs; issue ``r-0`` edits two functions."""
    rows = []
    for repo, n in (("a/a", 5), ("b/b", 4), ("c/c", 3)):
        for i in range(n):
            source = f"{repo}-{min(i, n - 2)}"  # the last two pairs share an issue
            rows.append(Pair("issue", repo, source, f"q {repo} {i}", f"d {repo} {i}", ["n"]))
    return rows


def test_repository_batches_draw_from_one_repository_and_spread_an_issue() -> None:
    import random

    from spider.learn.encoder_tune import _batches

    rows = _many_repos()
    batches = _batches(rows, 2, random.Random(1), by_repo=True)
    whole = [b for b in batches if len({p.repo for p in b}) == 1]
    assert len(whole) == 2 + 2 + 1  # a/a: 2 full batches, b/b: 2, c/c: 1
    assert len(batches) == 6  # the three left over (one per repository) make one mixed batch
    assert all(len({p.source for p in b}) == len(b) for b in whole)  # an issue's pairs apart
    counts = {len(_batches(rows, 2, random.Random(s), by_repo=True)) for s in range(5)}
    assert counts == {6}  # an epoch's length depends on counts only: runs resume by step
    mixed = _batches(rows, 2, random.Random(1))
    assert len(mixed) == 6 and sorted(p.query for b in mixed for p in b) == sorted(
        p.query for p in rows
    )


def test_a_run_with_repository_batches_and_more_negatives_trains_and_validates(
    tmp_path: Path,
) -> None:
    cfg = _cfg(holdout=0.4, eval_every=2, consistency=False, batching="repo", negatives=2)
    _, result = tune(_two_repos(), bundled_model_path(), tmp_path / "work", cfg)
    assert result.finished and all(np.isfinite(result.losses))
    for point in result.curve:  # the pool: zeta/z's four functions, the issue's own left out
        assert point["repo_pool"] == 4 and 0 < point["repo_mrr"] <= 1
        assert point["repo_mrr"] <= point["mrr"] + 1e-9 or point["repo_top10"] == 1
    with pytest.raises(InputError, match="batching is one of mixed, repo"):
        tune(_two_repos(), bundled_model_path(), tmp_path / "w2", _cfg(batching="file"))


def test_a_negative_with_the_positives_own_text_is_masked() -> None:
    import random

    import torch

    from spider.learn.encoder_tune import batch_loss

    docs = [d for _, d in CODE]
    cfg = _cfg(negatives=1)
    model, tok = load_trainable(bundled_model_path(), cfg.rank, cfg.alpha, cfg.dropout)
    model.eval()
    # the only negative is the positive's own text (the same function under two names):
    # masked, the target is alone in its row and the loss is 0; counted, it would be log 2
    twin = [Pair("issue", "acme/m", "i1", ISSUE, docs[1], [docs[1]])]
    near = [Pair("issue", "acme/m", "i1", ISSUE, docs[1], [docs[1] + "\n"])]  # another text
    with torch.no_grad():
        assert float(batch_loss(model, tok, twin, cfg, random.Random(0))) == pytest.approx(0.0)
        assert float(batch_loss(model, tok, near, cfg, random.Random(0))) > 0.3
