"""Classification: per-record label match and the data-set report, on hand-computed cases."""

from __future__ import annotations

import random

import pytest

from ragtrace._model import RagRecord, Score
from ragtrace.evaluators import create
from ragtrace.evaluators._classification import (
    Classification,
    classification_report,
    normalise_label,
    read_label,
)
from ragtrace.evaluators._classification_metrics import confusion_report
from tests.components import require_module


def record(response: object, reference: object) -> RagRecord:
    return RagRecord(
        trace_id="0" * 32,
        span_id="0" * 16,
        query="Classify the sentiment.",
        response=response,  # type: ignore[arg-type]
        reference=reference,  # type: ignore[arg-type]
    )


def only(scores: list[Score]) -> Score:
    assert len(scores) == 1, scores
    return scores[0]


def test_declares_what_it_is() -> None:
    ev = create("classification")
    assert isinstance(ev, Classification)
    assert ev.requires == frozenset({"response", "reference"})
    assert (ev.kind, ev.direction, ev.threshold) == ("lexical", "higher_is_better", 0.5)


def test_normalise_label() -> None:
    assert normalise_label("  Positive. ") == "positive"
    assert normalise_label('"NEGATIVE"') == "negative"
    assert normalise_label("Not   Spam!") == "not spam"
    assert normalise_label("«Oui»") == "oui"
    assert normalise_label(b"Yes\xff") == "yes\ufffd"
    assert normalise_label(None) == ""


def test_correct_and_incorrect() -> None:
    ev = Classification()
    right = only(ev.evaluate(record("Positive.", "positive")))
    assert (right.value, right.label, right.passed) == (1.0, "correct", True)
    assert right.details == {"predicted": "positive", "expected": "positive"}
    wrong = only(ev.evaluate(record("negative", "positive")))
    assert (wrong.value, wrong.label, wrong.passed) == (0.0, "incorrect", False)
    assert wrong.explanation == "predicted 'negative', expected 'positive'"
    # without known labels a sentence is not a label
    assert only(ev.evaluate(record("The sentiment is positive.", "positive"))).value == 0.0


def test_known_labels_read_the_one_label_an_answer_names() -> None:
    labels = ["Positive", "Negative", "Neutral"]
    ev = Classification(labels=labels)
    assert ev.labels == ("positive", "negative", "neutral")
    assert only(ev.evaluate(record("The sentiment is Positive.", "positive"))).value == 1.0
    # naming two labels, or none, is no answer
    assert only(ev.evaluate(record("positive or negative", "positive"))).value == 0.0
    assert only(ev.evaluate(record("I cannot tell", "neutral"))).value == 0.0
    # whole words only, hyphens binding: neither names a label
    assert read_label("positives", ev.labels) == "positives"
    assert read_label("Non-negative", ev.labels) == "non-negative"
    with pytest.raises(ValueError, match="labels"):
        Classification(labels="positive")
    with pytest.raises(ValueError, match="labels"):
        Classification(labels=["ok", "  "])


def test_bad_input() -> None:
    ev = Classification()
    assert only(ev.evaluate(record("positive", None))).error
    assert only(ev.evaluate(record(None, "positive"))).value == 0.0
    assert only(ev.evaluate(record(b"Positive", "positive"))).value == 1.0
    assert only(ev.evaluate(record("pos\ud800", "positive"))).value == 0.0
    huge = only(ev.evaluate(record("positive " * 1_000_000, "positive")))
    assert huge.value == 0.0 and len(huge.details["predicted"]) <= 300


def test_report_hand_computed() -> None:
    pairs = [
        ("positive", "positive"),
        ("negative", "positive"),
        ("neutral", "neutral"),
        ("positive", "negative"),
        ("negative", "negative"),
        ("Positive.", "positive"),
    ]
    report = classification_report(pairs)
    assert report["n"] == 6
    assert report["accuracy"] == pytest.approx(4 / 6)
    assert report["labels"] == ["negative", "neutral", "positive"]
    per = report["per_class"]
    assert per["positive"] == pytest.approx(
        {"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3, "support": 3}
    )
    assert per["negative"] == pytest.approx(
        {"precision": 1 / 2, "recall": 1 / 2, "f1": 1 / 2, "support": 2}
    )
    assert per["neutral"] == pytest.approx({"precision": 1, "recall": 1, "f1": 1, "support": 1})
    assert report["macro"] == pytest.approx(
        {"precision": 13 / 18, "recall": 13 / 18, "f1": 13 / 18}
    )
    # single-label: micro-averaged precision = recall = F1 = accuracy
    assert report["micro"] == pytest.approx({"precision": 4 / 6, "recall": 4 / 6, "f1": 4 / 6})
    # rows: expected, columns: predicted, in label order
    assert report["confusion_matrix"] == [[1, 0, 1], [0, 1, 0], [1, 0, 2]]


def test_report_binary_matches_the_catalogue_formulas() -> None:
    # TP 3, FN 1, FP 2, TN 4 for "yes": accuracy (TP + TN) / total = 7/10,
    # precision 3/5, recall 3/4, F1 2PR/(P+R) = 2/3.
    pairs = [("yes", "yes")] * 3 + [("no", "yes")] + [("yes", "no")] * 2 + [("no", "no")] * 4
    report = classification_report(pairs)
    assert report["accuracy"] == pytest.approx(0.7)
    assert report["per_class"]["yes"] == pytest.approx(
        {"precision": 3 / 5, "recall": 3 / 4, "f1": 2 / 3, "support": 4}
    )


def test_report_restricted_to_known_labels() -> None:
    # "maybe" is no label: it is a miss for "no" but a false positive of no known class, so
    # micro precision 2/2, recall 2/3, F1 0.8 while accuracy is 2/3.
    report = classification_report(
        [("yes", "yes"), ("maybe", "no"), ("no", "no")], labels=["yes", "no"]
    )
    assert report["accuracy"] == pytest.approx(2 / 3)
    assert report["micro"] == pytest.approx({"precision": 1.0, "recall": 2 / 3, "f1": 0.8})
    assert report["labels"] == ["yes", "no"]
    # known labels also read answers that name one
    named = classification_report([("The answer is yes.", "yes")], labels=["yes", "no"])
    assert named["accuracy"] == 1.0


def test_report_needs_pairs() -> None:
    with pytest.raises(ValueError, match="at least one"):
        classification_report([])


@pytest.mark.parametrize("seed", range(6))
def test_report_equals_scikit_learn_on_the_same_pairs(seed: int) -> None:
    """Accuracy, per-class, macro, weighted and micro figures and the confusion matrix are
    scikit-learn's, on random pairs with free-text mistakes, with and without known labels."""
    metrics = require_module("sklearn.metrics", "pip install scikit-learn")
    rng = random.Random(seed)
    classes = ["billing", "shipping", "returns", "other"][: 2 + seed % 3]
    expected = [rng.choice(classes) for _ in range(60)]
    predicted = [
        e if rng.random() < 0.6 else rng.choice([*classes, "no idea", "refund"]) for e in expected
    ]
    for labels in (None, classes):
        ours = classification_report(zip(predicted, expected, strict=True), labels=labels)
        order = ours["labels"]
        theirs = metrics.classification_report(
            expected, predicted, labels=order, output_dict=True, zero_division=0
        )
        assert ours["accuracy"] == pytest.approx(metrics.accuracy_score(expected, predicted))
        for label in order:
            assert ours["per_class"][label] == pytest.approx(
                {
                    "precision": theirs[label]["precision"],
                    "recall": theirs[label]["recall"],
                    "f1": theirs[label]["f1-score"],
                    "support": theirs[label]["support"],
                }
            )
        for ours_key, theirs_key in (("macro", "macro avg"), ("weighted", "weighted avg")):
            assert ours[ours_key] == pytest.approx(
                {
                    "precision": theirs[theirs_key]["precision"],
                    "recall": theirs[theirs_key]["recall"],
                    "f1": theirs[theirs_key]["f1-score"],
                }
            )
        p, r, f, _ = metrics.precision_recall_fscore_support(
            expected, predicted, labels=order, average="micro", zero_division=0
        )
        assert ours["micro"] == pytest.approx({"precision": p, "recall": r, "f1": f})
        matrix = metrics.confusion_matrix(expected, predicted, labels=order)
        assert ours["confusion_matrix"] == matrix.tolist()


def test_an_unanswered_case_is_a_wrong_prediction() -> None:
    """With two classes no answer counts as the other class's answer: what scikit-learn gives
    when each unanswered case is filled with the label it is not; the ``no answer`` column
    still says which cases went unanswered."""
    metrics = require_module("sklearn.metrics", "pip install scikit-learn")
    expected = ["yes", "yes", "no", "no", "yes"]
    predicted: list[str | None] = ["yes", None, "no", "yes", None]
    ours = confusion_report(expected, predicted)
    filled = [p if p is not None else ("no" if e == "yes" else "yes")
              for e, p in zip(expected, predicted, strict=True)]  # fmt: skip
    theirs = metrics.classification_report(
        expected, filled, labels=["no", "yes"], output_dict=True, zero_division=0
    )
    assert ours["labels"] == ["no", "yes"] and ours["unanswered"] == 2
    assert ours["accuracy"] == pytest.approx(2 / 5)
    for label in ("no", "yes"):
        for key in ("precision", "recall"):
            assert ours["per_class"][label][key] == pytest.approx(theirs[label][key])
    assert ours["per_class"]["yes"]["recall"] == pytest.approx(1 / 3)
    assert ours["per_class"]["no"]["precision"] == pytest.approx(1 / 3)  # 1 right of 1 + 2
    assert ours["macro"]["precision"] == pytest.approx(theirs["macro avg"]["precision"])
    assert ours["micro"]["precision"] == pytest.approx(ours["accuracy"])
    assert ours["no_answer"] == [0, 2] and ours["confusion_matrix"] == [[1, 1], [0, 1]]


def test_an_unanswered_case_shares_its_false_positive_among_the_other_classes() -> None:
    expected = ["a", "b", "c", "a"]
    predicted: list[str | None] = ["a", "b", "c", None]
    ours = confusion_report(expected, predicted)
    assert ours["per_class"]["a"]["precision"] == 1.0
    assert ours["per_class"]["b"]["precision"] == pytest.approx(1 / 1.5)
    assert ours["per_class"]["c"]["precision"] == pytest.approx(1 / 1.5)
    assert ours["per_class"]["a"]["recall"] == 0.5
    assert ours["micro"]["precision"] == pytest.approx(ours["accuracy"]) == 0.75
