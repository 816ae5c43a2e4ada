"""The training-only sets in the cross-encoder's bundle: their tuning documents' claims are
trained on in every fold and in the final training at their set's weight and never scored; their
held-out documents' claims are scored by the final cross-encoder only."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tests.components import require_module

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", autouse=True)
def _paths() -> None:
    for folder in (ROOT / "benchmarks", ROOT / "training"):
        if str(folder) not in sys.path:
            sys.path.insert(1, str(folder))


def test_extra_claims_are_trained_on_in_every_fold_and_scored_only_when_held_out() -> None:
    from _crossencoder_bundle import EXTRA_HELD, EXTRA_TRAIN, final_rows, splits_of

    # Claims 0-5 in two tuning folds, 6-7 locked, 8-9 a set's tuning claims, 10 a held-out one.
    fold = np.array([0, 0, 0, 1, 1, 1, -1, -1, EXTRA_TRAIN, EXTRA_TRAIN, EXTRA_HELD])
    splits = splits_of(fold)
    assert [sorted(train.tolist()) for train, _ in splits] == [[3, 4, 5, 8, 9], [0, 1, 2, 8, 9]]
    assert [test.tolist() for _, test in splits] == [[0, 1, 2], [3, 4, 5]]
    train, scored = final_rows(fold, np.array([6, 7]))
    assert train.tolist() == [0, 1, 2, 3, 4, 5, 8, 9]
    assert scored.tolist() == [6, 7, 10]


def test_without_extra_claims_the_folds_and_final_rows_are_as_before() -> None:
    from _crossencoder_bundle import final_rows, splits_of

    fold = np.array([0, 1, 0, 1, -1])
    synthetic = np.array([False, False, False, True, False])
    assert [(a.tolist(), b.tolist()) for a, b in splits_of(fold, synthetic)] == [
        ([1, 3], [0, 2]),
        ([0, 2], [1]),  # the synthetic claim 3 is trained on, never tested
    ]
    train, scored = final_rows(fold, np.array([4]))
    assert train.tolist() == [0, 1, 2, 3] and scored.tolist() == [4]


def test_the_class_balance_counts_each_claim_at_its_weight() -> None:
    from train_crossencoder import class_balance

    labels = np.array([0, 0, 0, 1, 1, 1])
    assert class_balance(labels) == 1.0
    assert class_balance(labels, np.array([1, 1, 1, 1, 0.5, 0.5])) == 1.5
    assert class_balance(np.array([0, 0])) == 2.0  # no unsupported claim: divided by 1


def test_extra_sets_are_named_with_a_weight_each() -> None:
    from crossencoder_locked import extra_weights

    assert extra_weights("summedits:0.5, wice:1") == {"summedits": 0.5, "wice": 1.0}
    with pytest.raises(SystemExit):
        extra_weights("ragtruth:1")
    with pytest.raises(SystemExit):
        extra_weights("begin")


def test_extra_claims_keep_the_named_sets_at_their_weight_held_out_by_document() -> None:
    from _labelled_data import GroundingExample, locked_groups
    from crossencoder_locked import extra_claims

    extra = [
        GroundingExample(f"e{i}", name, "Summary", f"{name}-{i // 2}", None, ("Doc.",), "A.", i % 2)
        for name in ("summedits", "begin")
        for i in range(40)
    ]
    owner = np.repeat(np.arange(len(extra)), 2)  # two claims per answer
    pairs = {
        "claim": [f"c{k}" for k in range(len(owner))],
        "evidence": [f"e{k}" for k in range(len(owner))],
        "y": np.asarray([extra[i].label for i in owner]),
        "owner": owner,
    }
    got = extra_claims(extra, pairs, {"summedits": 0.5})
    assert len(got["claim"]) == 80  # begin's claims are left out
    assert {extra[i].dataset for i in got["owner"]} == {"summedits"}
    assert got["weight"].tolist() == [0.5] * 80
    held = locked_groups(extra)
    assert got["held"].tolist() == [extra[i].group in held for i in got["owner"]]
    assert 0 < got["held"].sum() < 80


def test_extra_held_out_reports_claims_and_answers_per_set() -> None:
    from _labelled_data import GroundingExample
    from crossencoder_locked import extra_held_out

    extra = [
        GroundingExample(f"e{i}", "wice", "Claim", f"g{i}", None, ("Doc.",), "A. B.", i % 2)
        for i in range(4)
    ]
    claims = {  # the first two claims are of a tuning document: not scored
        "owner": np.array([0, 0, 0, 0, 1, 1, 2, 2, 3, 3]),
        "y": np.array([1, 1, 0, 0, 0, 1, 0, 0, 1, 0]),
        "held": np.array([False, False] + [True] * 8),
    }
    # Answers 1 and 3 (unfaithful) hold the highest claim logits, but a supported claim of
    # answer 3 outranks its unsupported one.
    logit = np.array([9.0, 9.0, 0.0, 0.1, 0.2, 0.9, 0.3, 0.0, 0.8, 0.85])
    got = extra_held_out(extra, claims, {"run": logit})["wice"]["run"]
    assert got["claims"] == 8 and got["answers"] == 4
    assert got["answer_auroc"] == 1.0
    assert got["claim_auroc"] == round(11 / 12, 3)


def test_a_bundle_with_extra_claims_trains_them_and_scores_the_held_out_ones(
    tmp_path: Path,
) -> None:
    require_module("torch", "pip install torch==2.13.0")
    from _crossencoder_bundle import train_bundle, write_bundle

    n = 10
    pairs = {
        "claim": [f"The firm sold {k} cars." for k in range(n)],
        "evidence": ["The firm sold 3 cars."] * n,
        "y": np.array([0, 1] * (n // 2)),
    }
    split = {"fold": np.array([0, 0, 1, 1, 2, 2, 3, 3, -1, -1]), "locked": np.array([8, 9])}
    extra = {
        "claim": ["Its profit rose.", "Its profit fell.", "It hired staff."],
        "evidence": ["Its profit rose."] * 3,
        "y": np.array([0, 1, 1]),
        "weight": np.array([0.5, 0.5, 0.5]),
        "held": np.array([False, False, True]),
    }
    vocabulary = {"claim": extra["claim"], "evidence": extra["evidence"]}
    write_bundle(tmp_path, pairs, split, [16], None, extra, vocabulary)
    write_bundle(tmp_path / "without", pairs, split, [16], None, None, vocabulary)
    base = (tmp_path / "base" / "model.safetensors").read_bytes()
    assert (tmp_path / "without" / "base" / "model.safetensors").read_bytes() == base  # shared
    saved = np.load(tmp_path / "tokens_16.npz")
    assert saved["weight"].tolist() == [1.0] * n + [0.5] * 3
    assert not saved["synthetic"].any()
    logits, params = train_bundle(tmp_path, "cpu", "1:16:1:1e-3", 4)
    assert len(logits) == n + 1  # the real claims, then the held-out extra claim
    assert np.isfinite(logits).all() and logits[-1] != 0  # scored by the final cross-encoder
    assert "head.weight" in params
