"""The training-only faithfulness sets in the training scripts: read, split by document, labelled
per claim, and taken by the claim models of the tasks they are meant for, at their weight."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", autouse=True)
def _paths() -> None:
    for folder in (ROOT / "benchmarks", ROOT / "training"):
        if str(folder) not in sys.path:
            sys.path.insert(1, str(folder))


def _write(folder: Path, name: str, rows: list[dict[str, object]]) -> None:
    with (folder / name).open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


def _row(i: int, context: str, response: str, label: int) -> dict[str, object]:
    return {
        "id": f"s-{i}",
        "source": "test",
        "licence": "MIT",
        "task_type": "Summary",
        "question": None,
        "context": context,
        "response": response,
        "label": label,
        "fine_label": "x",
    }


def test_sets_are_read_grouped_by_document_and_split_whole(tmp_path: Path) -> None:
    from _labelled_data import FAITH_TRAIN, faith_train, split

    rows = [_row(i, f"Document {i // 3}.", f"Summary {i}.", i % 2) for i in range(60)]
    _write(tmp_path, FAITH_TRAIN["summedits"], rows)
    examples = faith_train(tmp_path, ["summedits"])
    assert len(examples) == 60
    assert {e.dataset for e in examples} == {"summedits"}
    assert examples[0].query is None and examples[0].passages == ("Document 0.",)
    assert len({e.group for e in examples}) == 20  # one group per context
    tuning, locked = split(examples)
    assert {e.group for e in tuning}.isdisjoint({e.group for e in locked})
    assert len({e.group for e in locked}) == 6  # 30% of the documents


def test_a_sentence_a_faithful_summary_also_says_is_supported() -> None:
    from _labelled_data import GroundingExample
    from train_support import claims_with_labels, faithful_sentences

    def example(response: str, label: int) -> GroundingExample:
        return GroundingExample("x", "summedits", "Summary", "g", None, ("Doc.",), response, label)

    faithful = example("The firm sold 20 cars. Its profit rose.", 0)
    edited = example("The firm sold 30 cars. Its profit rose.", 1)
    supported = faithful_sentences([faithful, edited])["g"]
    claims, labels = claims_with_labels(edited, "raw", supported)
    assert claims == ["The firm sold 30 cars.", "Its profit rose."]
    assert labels == [1, 0]
    assert claims_with_labels(faithful, "raw", supported)[1] == [0, 0]


def test_extra_claims_join_only_their_tasks_claim_model_at_their_weight() -> None:
    from _faith_data import Data
    from _faith_fit import with_extra

    X = np.arange(12, dtype=float).reshape(6, 2)
    y = np.array([0, 1, 0, 1, 1, 0])
    owner = np.array([0, 1, 2, 3, 4, 5])
    tasks = ["qa", "summary", "qa", "summary", "summary", "qa"]
    extra = (np.array([3, 4, 5]), np.array([0.5, 0.0, 2.0]), np.array(["qa", "summary", "*"]))
    data = Data(X, y, owner, y, owner.astype(str), np.zeros((6, 1)), tasks, extra=extra)
    qa_claims = np.array([0, 2])
    got_X, got_y, weight = with_extra(data, qa_claims, X[qa_claims], y[qa_claims])
    assert got_X.tolist() == [X[0].tolist(), X[2].tolist(), X[3].tolist(), X[5].tolist()]
    assert got_y.tolist() == [0, 0, 1, 0]
    assert weight.tolist() == [1.0, 1.0, 0.5, 2.0]
    summary_claims = np.array([1])
    _, got_y, weight = with_extra(data, summary_claims, X[summary_claims], y[summary_claims])
    assert weight.tolist() == [1.0, 2.0]  # claim 4 weighs 0: left out
