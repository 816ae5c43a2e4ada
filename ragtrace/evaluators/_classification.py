"""Classification: is the answer the right class label?

After H2O Eval Studio's "Classification Evaluator", for assistants that classify (sentiment,
intent, routing, yes/no). The response is the predicted label, the reference the expected one.

Per record, ``classification`` is 1.0 when the normalised labels are equal and 0.0 when not
(threshold 0.5: pass = correct); ``details`` holds both normalised labels (and the known
``labels`` when given). Over a data set, ``classification_report(pairs)`` computes what the
catalogue reports from the confusion matrix (``classification_metrics.confusion_report``, pure
Python): accuracy, precision, recall and F1 per class and macro-, weighted- and
micro-averaged, and the matrix itself::

    report = classification_report([("positive", "positive"), ("negative", "positive")])
    report["accuracy"], report["macro"]["f1"], report["per_class"]["positive"]["recall"]

``ragtrace eval`` prints it per system when ``classification`` runs (and writes it to
``--summary-json``), and ``ragtrace report`` shows it as a classification leaderboard.

Labels are normalised before comparing: case-folded, whitespace collapsed, surrounding
punctuation and quotes removed ("Positive." = "positive"). With ``labels=`` (the known
classes), an answer that is not itself a label but names exactly one of them as whole words
("The sentiment is positive"; a hyphen joins words, so "non-negative" names no label) is read
as that label; an answer naming none or several stays as written and counts as wrong.
Micro-averaged precision, recall and F1 equal the accuracy when every label is counted
(single-label classification); they differ when ``labels=`` restricts the report to known
classes.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._base import Evaluator
from ragtrace.evaluators._classification_metrics import confusion_report
from ragtrace.evaluators._statement_support import as_text, clip

_STRIP = string.punctuation + "\u2018\u2019\u201c\u201d\u00ab\u00bb\u2013\u2014 \t\r\n"
MAX_LABEL_CHARS = 10_000


def normalise_label(value: object) -> str:
    """A label as compared: case-folded, whitespace collapsed, outer punctuation removed."""
    text = as_text(value)[:MAX_LABEL_CHARS]
    return " ".join(text.casefold().split()).strip(_STRIP)


def read_label(value: object, labels: Sequence[str] | None = None) -> str:
    """The label an answer gives: its normalised form, or the one known label it names."""
    text = normalise_label(value)
    if not labels or text in labels:
        return text
    named = [
        label for label in labels if re.search(rf"(?<![\w-]){re.escape(label)}(?![\w-])", text)
    ]
    return named[0] if len(named) == 1 else text


class Classification(Evaluator):
    """1.0 when the answer's label equals the reference label, else 0.0."""

    name: ClassVar[str] = "classification"
    requires: ClassVar[frozenset[str]] = frozenset({"response", "reference"})
    kind = "lexical"
    direction = "higher_is_better"
    threshold: float | None = 0.5

    def __init__(self, *, labels: Iterable[str] | None = None, **options: Any) -> None:
        """Build the evaluator.

        Args:
            labels: The known classes (optional); lets "The answer is: yes" read as "yes".
            **options: ``threshold`` (0.5), ``inline``, ``timeout_s``, ...
        """
        super().__init__(**options)
        if isinstance(labels, str):
            raise ValueError("classification: labels must be a list of labels, not a string")
        known = [normalise_label(label) for label in labels] if labels is not None else []
        if labels is not None and not all(known):
            raise ValueError(f"classification: labels must be non-empty strings, got {labels!r}")
        self.labels: tuple[str, ...] | None = tuple(dict.fromkeys(known)) or None

    def evaluate(self, record: RagRecord) -> list[Score]:
        predicted = read_label(record.response, self.labels)
        expected = read_label(record.reference, self.labels)
        if not expected:
            return [self.error_score("classification needs a non-empty reference label")]
        correct = predicted == expected
        return [
            self.score(
                1.0 if correct else 0.0,
                label="correct" if correct else "incorrect",
                explanation=f"predicted {clip(predicted, 80)!r}, expected {clip(expected, 80)!r}",
                details={
                    "predicted": clip(predicted),
                    "expected": clip(expected),
                    **({"labels": list(self.labels)} if self.labels else {}),
                },
            )
        ]


def classification_report(
    pairs: Iterable[tuple[object, object]], *, labels: Sequence[str] | None = None
) -> dict[str, Any]:
    """Accuracy and per-class, macro, weighted and micro precision, recall and F1 over
    ``(predicted, expected)`` pairs.

    Args:
        pairs: ``(response, reference)`` of each record (normalised as ``Classification`` does).
        labels: The classes to report on (default: every label seen, sorted).

    Returns:
        ``classification_metrics.confusion_report``'s mapping (``confusion_matrix`` rows are
        the expected labels, columns the predicted ones, in ``labels`` order; a prediction
        outside ``labels`` is counted in ``other_predictions``).

    Raises:
        ValueError: No pairs.
    """
    known = [normalise_label(label) for label in labels] if labels is not None else None
    predicted: list[str | None] = []
    expected: list[str] = []
    for prediction, reference in pairs:
        predicted.append(read_label(prediction, known))
        expected.append(read_label(reference, known))
    return confusion_report(expected, predicted, known)
