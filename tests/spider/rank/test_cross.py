"""The cross-encoder: its file (read, checked, refused with the command that makes one),
its training data from the corpus (exclusions refused and counted), training that resumes,
ONNX scores equal to the trained model's, and a list that follows the file."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from spider.errors import EncoderDeltaError, InputError
from spider.index import build_index
from spider.learn.corpus import CORPUS_VERSION
from spider.learn.cross_tune import (
    CrossConfig,
    evaluate,
    read_groups,
    split_holdout,
    train,
    write_cross,
)
from spider.learn.excluded import excluded_repos
from spider.learn.model_file import Provenance
from spider.localize import locate
from spider.models import Issue
from spider.rank.cross import (
    CROSS_KIND,
    CrossScorer,
    combined,
    cross_path,
    read_cross,
    rerank_top,
    settings_scorer,
)
from spider.rank.features import RANKER_FEATURES
from spider.retrieve.delta import weights_fingerprint
from spider.retrieve.dense import bundled_model_path
from spider.settings import EngineSettings
from spider.source import DirectorySource
from tests.spider.shop import write_shop
from tests.spider.test_encoder_delta import delta_arrays

pytest.importorskip("peft")

BASE = Path(bundled_model_path())
COMMAND = "spider train cross --corpus TRAIN/corpus --work TRAIN/cross --holdout 0.2"
FUNCS = [
    "shop/cart.py\nCart.add_item\ndef add_item(self, sku, quantity):\n    self.items.append(sku)",
    "shop/cart.py\nCart.total\ndef total(self):\n    return sum(p for p in self.prices)",
    "shop/tax.py\nvat\ndef vat(amount):\n    return amount * 0.2",
    "shop/users.py\nlogin\ndef login(name, password):\n    return check(name, password)",
    "shop/mail.py\nsend\ndef send(to, body):\n    smtp.send(to, body)",
    "shop/report.py\ncsv_rows\ndef csv_rows(orders):\n    return [o.row() for o in orders]",
]
ISSUES = [
    "Cart accepts a negative quantity: add_item(sku, -3) adds the item",
    "The cart total ignores discounts",
    "VAT is computed at the wrong rate",
    "Login fails for names with spaces",
    "Mails are sent twice",
    "The CSV report has no header row",
]
SHOP_ISSUE = Issue(
    title="Cart.total applies the discount wrongly",
    body="Adding a negative quantity of apples gives a negative price after the discount.",
)


def cross_arrays(
    *, seed: int = 0, weight: float = 1.0, depth: int = 50, alpha: float = 8.0, **meta: Any
) -> dict[str, np.ndarray]:
    """A cross-encoder file's arrays: random factors on real tensors, a unit head."""
    body = {
        "kind": CROSS_KIND,
        "bias": 0.5,
        "scale": 20.0,
        "max_tokens": 256,
        "depth": depth,
        "weight": weight,
        "command": COMMAND,
        **meta,
    }
    arrays = delta_arrays(seed=seed, alpha=alpha, meta=body)
    d = np.random.default_rng(seed).normal(size=384)
    arrays["head.direction"] = (d / np.linalg.norm(d)).astype(np.float32)
    return arrays


def write_file(path: Path, arrays: dict[str, np.ndarray] | None = None, **kw: Any) -> Path:
    np.savez(path, **(arrays if arrays is not None else cross_arrays(**kw)))
    return path


def refused(path: Path, *needles: str) -> None:
    with pytest.raises(EncoderDeltaError) as info:
        read_cross(path, BASE)
    message = str(info.value)
    for needle in (str(path), *needles):
        assert needle in message, message


def write_corpus(out: Path, repos: list[str], *, texts: bool = True) -> Path:
    """Corpus files as ``spider train corpus`` writes them: issue n's pool holds the six
    functions, function n edited; features random."""
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for n, repo in enumerate(repos):
        order = [(n + j) % len(FUNCS) for j in range(len(FUNCS))]
        y = np.array([i == n % len(FUNCS) for i in order], dtype=np.int8)
        extra: dict[str, Any] = {}
        if texts:
            extra = {"texts": np.array([FUNCS[i] for i in order]), "issue_text": ISSUES[n % 6]}
        np.savez_compressed(
            out / f"{repo.replace('/', '__')}-{n}.npz",
            version=CORPUS_VERSION,
            features=np.array(RANKER_FEATURES),
            x=rng.normal(size=(len(order), len(RANKER_FEATURES))).astype(np.float32),
            y=y,
            ids=np.array([f"f{i}" for i in order]),
            labels=1,
            unreachable=0,
            repo=repo,
            **extra,
        )
    return out


# --- the file ---------------------------------------------------------------------------


def test_a_written_file_reads_back(tmp_path: Path) -> None:
    model = read_cross(write_file(tmp_path / "x.npz", weight=0.75, depth=30), BASE)
    assert (model.weight, model.depth, model.max_tokens, model.scale) == (0.75, 30, 256, 20.0)
    assert model.bias == 0.5 and model.direction.shape == (384,)
    assert model.delta.command == COMMAND and len(model.digest) == 12


def test_malformed_files_are_refused_with_the_command_that_makes_one(tmp_path: Path) -> None:
    refused(write_file(tmp_path / "delta.npz", delta_arrays()), "'encoder-delta'", CROSS_KIND)
    arrays = cross_arrays()
    del arrays["head.direction"]
    refused(write_file(tmp_path / "nohead.npz", arrays), "head.direction", COMMAND)
    arrays = cross_arrays()
    arrays["head.direction"] = arrays["head.direction"] * 3
    refused(write_file(tmp_path / "norm.npz", arrays), "norm")
    refused(write_file(tmp_path / "weight.npz", weight=-1.0), "weight")
    refused(write_file(tmp_path / "depth.npz", depth=0), "depth")


def test_a_file_for_other_base_weights_is_refused(tmp_path: Path) -> None:
    path = write_file(tmp_path / "other.npz", base_fingerprint="0" * 16)
    with pytest.raises(EncoderDeltaError, match="fingerprint") as info:
        CrossScorer(read_cross(path, BASE), tmp_path / "export")
    assert COMMAND in str(info.value)


def test_the_setting_names_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cross_path("") is None and cross_path(" none ") is None
    assert settings_scorer(EngineSettings(cache_dir=tmp_path)) is None  # off by default
    with pytest.raises(EncoderDeltaError, match="no file at"):
        cross_path(str(tmp_path / "missing.npz"))
    monkeypatch.setattr("spider.rank.cross.CROSS_FILE", tmp_path / "absent.npz")
    with pytest.raises(EncoderDeltaError, match="ships no cross-encoder"):
        cross_path("bundled")


def test_the_top_is_resorted_by_both_scores_and_the_rest_keeps_its_place() -> None:
    order = np.array([7, 3, 5, 1, 9])
    ranker = np.array([3.0, 2.0, 1.0])
    cross = np.array([0.0, 0.0, 10.0])
    same, logits = rerank_top(order, ranker, cross, 0.0)
    assert same.tolist() == order.tolist() and logits.tolist() == [3.0, 2.0, 1.0]
    moved, logits = rerank_top(order, ranker, cross, 2.0)
    assert moved.tolist() == [5, 7, 3, 1, 9] and logits.tolist() == [1.0, 3.0, 2.0]
    assert np.allclose(combined(ranker, np.ones(3), 5.0), combined(ranker, np.zeros(3), 0.0))


# --- training data and training ---------------------------------------------------------


def test_groups_refuse_excluded_repositories_and_old_corpora(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "c", ["acme/a", "django/django", "acme/b", "acme/a"])
    groups, dropped = read_groups(corpus, excluded_repos(), None, 4)
    assert dropped == 1 and {g.repo for g in groups} == {"acme/a", "acme/b"}
    g = groups[0]
    assert len(g.texts) == 4 and len(g.positives) == 1 and g.positives[0] not in g.negatives
    assert g.query in ISSUES and g.total == 1 and len(g.tail) == 2
    teach, held, repos = split_holdout(groups, 0.3, 0)
    assert repos and {x.repo for x in held} == set(repos)
    assert not {x.repo for x in teach} & set(repos)
    old = write_corpus(tmp_path / "old", ["acme/a"], texts=False)
    with pytest.raises(InputError, match="spider train corpus"):
        read_groups(old, excluded_repos(), None, 4)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path, Path]:
    """Three steps of real training on a small corpus, its file and its work folder."""
    root = tmp_path_factory.mktemp("cross")
    corpus = write_corpus(root / "corpus", [f"acme/r{n % 3}" for n in range(9)])
    groups, _ = read_groups(corpus, excluded_repos(), None, 6)
    teach, held, _ = split_holdout(groups, 0.3, 0)
    cfg = CrossConfig(
        steps=3, batch=2, negatives=3, depth=6, rank=4, alpha=8.0, lr=5e-3, warmup=1,
        bf16=False, eval_every=3, checkpoint_every=1, holdout=0.3,
    )  # fmt: skip
    model, result = train(teach, held, str(BASE), root / "work", cfg)
    assert result.finished and result.steps_done == 3 and len(result.losses) == 3
    assert [p["step"] for p in result.curve] == [0, 3]
    assert set(result.curve[-1]["by"]) == {
        *(f"{w:g}" for w in (0, 0.25, 0.5, 0.75, 1, 1.5, 2, 3)),
        "cross",
    }
    provenance = Provenance(command=COMMAND, comment="", cv={})
    path = write_cross(model, root / "cross.npz", weights_fingerprint(BASE), 1.5, provenance)
    return model, path, root


def test_training_resumes_and_refuses_other_settings(
    trained: tuple[Any, Path, Path], tmp_path: Path
) -> None:
    _, _, root = trained
    corpus = root / "corpus"
    groups, _ = read_groups(corpus, excluded_repos(), None, 6)
    cfg = CrossConfig(steps=2, batch=2, negatives=3, depth=6, rank=4, alpha=8.0, bf16=False)
    _, first = train(groups, [], str(BASE), tmp_path / "w", cfg, budget_s=0.0)
    assert not first.finished and first.steps_done == 1
    _, second = train(groups, [], str(BASE), tmp_path / "w", cfg)
    assert second.finished and second.steps_done == 2 and len(second.losses) == 2
    with pytest.raises(InputError, match="other settings"):
        train(groups, [], str(BASE), tmp_path / "w", replace(cfg, negatives=2))


def test_onnx_scores_are_the_trained_models(trained: tuple[Any, Path, Path]) -> None:
    model, path, root = trained
    scorer = CrossScorer(read_cross(path, BASE), root / "export")
    assert scorer.file.weight == 1.5 and scorer.file.depth == 6
    mine = scorer.scores(ISSUES[0], FUNCS)
    theirs = model.score(ISSUES[0], FUNCS)
    assert np.allclose(mine, theirs, atol=2e-3), (mine, theirs)
    meta = json.loads(str(np.load(path)["meta"]))
    assert meta["command"] == COMMAND and meta["kind"] == CROSS_KIND


def test_evaluation_scores_each_weight_and_the_cross_encoder_alone(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "c", ["acme/a"] * 2)
    groups, _ = read_groups(corpus, excluded_repos(), None, 6)
    perfect = [g.labels.astype(float) for g in groups]  # the cross-encoder knows the label
    by = evaluate(groups, perfect)
    assert by["cross"]["MRR@20"] == 1.0 and by["3"]["MRR@20"] >= by["0"]["MRR@20"]


# --- the list ---------------------------------------------------------------------------


def test_the_list_follows_the_cross_encoder_file(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The same index lists another order with a strong cross-encoder than without one,
    and the Method line and the settings record name the file only when it ran."""
    root = write_shop(tmp_path_factory.mktemp("shop"))
    files = tmp_path_factory.mktemp("files")
    strong = write_file(files / "strong.npz", seed=3, alpha=400.0, weight=50.0, depth=10)
    plain = EngineSettings(
        cache_dir=tmp_path_factory.mktemp("cache"), onnx_dir=files / "export", encoder="onnx"
    )
    mine = plain.model_copy(update={"cross_encoder": str(strong)})
    index = build_index(DirectorySource(root), plain)
    before = locate(index, SHOP_ISSUE, plain)
    after = locate(index, SHOP_ISSUE, mine)
    assert [h.id for h in before.hits] != [h.id for h in after.hits]
    assert {h.id for h in before.hits} == {h.id for h in after.hits}  # the top was re-sorted
    digest = read_cross(strong, BASE).digest
    assert after.settings.to_dict()["cross_encoder"] == digest
    assert after.settings.cross_depth == min(10, len(index.function_ids))
    assert f"cross-encoder (MiniLM-L6 + delta {digest})" in after.method()
    assert "cross_encoder" not in before.settings.to_dict()
    assert "cross-encoder" not in before.method()


def test_the_command_trains_writes_and_scores_development_pools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`spider train cross` end to end: the holdout chooses the weight, the file reads back,
    the development pools are scored through the engine's scorer; without a holdout the
    weight must be given."""
    from typer.testing import CliRunner

    from spider.cli import app

    monkeypatch.setenv("SPIDER_CACHE_DIR", str(tmp_path / "cache"))
    corpus = write_corpus(tmp_path / "corpus", [f"acme/r{n % 3}" for n in range(9)])
    args = ["train", "cross", "-c", str(corpus), "--steps", "2", "--batch", "2"]
    args += ["--negatives", "2", "--depth", "6", "--rank", "2", "--fp32", "--no-progress"]
    out = CliRunner().invoke(
        app, [*args, "--work", str(tmp_path / "w"), "--holdout", "0.3", "--dev-corpus", str(corpus)]
    )
    assert out.exit_code == 0, out.output
    assert "held out 3 issues" in out.output and "step 2: held-out R@20" in out.output
    assert "development pools" in out.output and "(the file's)" in out.output
    model = read_cross(tmp_path / "w" / "cross_encoder.npz", BASE)
    assert model.depth == 6 and model.delta.command.startswith("spider train")
    refused_run = CliRunner().invoke(app, [*args, "--work", str(tmp_path / "w2")])
    assert refused_run.exit_code != 0 and "--weight" in refused_run.output


def test_run_trains_chooses_the_weight_and_writes_the_file(tmp_path: Path) -> None:
    """`run(config)` without the command: the holdout is chosen once (the ranker refitted
    without it orders those pools), its best weight is the file's; without a holdout the
    weight must be given."""
    from spider.learn.cross_tune import CrossRun, run

    corpus = write_corpus(tmp_path / "corpus", [f"acme/r{n % 3}" for n in range(9)])
    cfg = CrossConfig(
        steps=2, batch=2, negatives=2, depth=6, rank=2, alpha=4.0, bf16=False, eval_every=2,
        holdout=0.3,
    )  # fmt: skip
    target = tmp_path / "cross.npz"
    fit = run(CrossRun(corpus, tmp_path / "work", target, COMMAND, cfg))
    assert fit.written == target and fit.held_issues == 3 and fit.dropped == 0
    assert fit.weight == fit.training.curve[-1]["best_weight"] and fit.depth == 6
    model = read_cross(target, BASE)
    assert model.weight == fit.weight and model.depth == 6 and model.delta.command == COMMAND
    assert model.delta.meta["trained_on"]["held_out"] == fit.training.holdout_repos
    with pytest.raises(InputError, match="give the weight"):
        run(CrossRun(corpus, tmp_path / "w2", target, COMMAND, replace(cfg, holdout=0.0)))
