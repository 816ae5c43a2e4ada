"""The classification report of H2O Eval Studio's "Classification Evaluator", in pure Python.

``confusion_report(expected, predicted)`` computes, from the confusion matrix of one system's
(expected, predicted) labels, what the catalogue lists per model and what scikit-learn's
``classification_report`` prints: accuracy; per class precision, recall, F1 and support; their
macro average (each class alike), weighted average (by support) and micro average (over all
decisions). It needs no numpy or scikit-learn, so ``ragtrace eval`` and ``ragtrace report`` give
it on the core install; the tests check it against scikit-learn on the same pairs.

Conventions (scikit-learn's, with ``zero_division=0``, but for an unanswered case):

- ``labels``: the classes reported on, in order; by default every label seen among the expected
  and predicted ones, sorted;
- a prediction that is not one of ``labels`` is a wrong answer for its expected class (a false
  negative) and no class's false positive; the matrix counts it in an extra column (``other``);
- no prediction at all (``None``: the system gave no answer) is a wrong prediction: a false
  negative of its expected class and one false positive shared equally among the other classes
  (with two classes, a false positive of the other one), as if the system had picked a wrong
  label at random. So a system that skips the cases it would get wrong loses precision as well
  as recall, and micro precision equals the accuracy. The matrix counts it in its own column
  (``no answer``);
- a class with no prediction has precision 0, one with no example recall 0, and F1 is 0 when
  precision and recall both are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

NO_ANSWER = "no answer"
OTHER = "other"


def confusion_report(
    expected: Sequence[str],
    predicted: Sequence[str | None],
    labels: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The classification report of ``(expected[i], predicted[i])`` pairs.

    Returns:
        ``{"n", "accuracy", "labels", "per_class": {label: {precision, recall, f1, support}},
        "macro", "weighted", "micro": {precision, recall, f1}, "unanswered",
        "confusion_matrix": rows expected, columns predicted in ``labels`` order,
        "other_predictions": per expected label, predictions outside ``labels``,
        "no_answer": per expected label, unanswered}``.

    Raises:
        ValueError: No pairs, or lists of different lengths.
    """
    if len(expected) != len(predicted):
        raise ValueError("expected and predicted labels must be as many")
    if not expected:
        raise ValueError("a classification report needs at least one (expected, predicted) pair")
    order = list(
        dict.fromkeys(labels)
        if labels is not None
        else sorted(set(expected) | {p for p in predicted if p is not None})
    )
    index = {label: i for i, label in enumerate(order)}
    matrix = [[0] * len(order) for _ in order]
    other = [0] * len(order)
    missing = [0] * len(order)
    shared = [0.0] * len(order)  # false positives of unanswered cases, shared among classes
    pairs = Counter(zip(expected, predicted, strict=True))
    for (truth, guess), count in pairs.items():
        row = index.get(truth)
        if row is None:
            continue  # a class outside ``labels``: not reported on (scikit-learn's rule)
        if guess is None:
            missing[row] += count
            if len(order) > 1:
                for j in range(len(order)):
                    if j != row:
                        shared[j] += count / (len(order) - 1)
        elif guess in index:
            matrix[row][index[guess]] += count
        else:
            other[row] += count
    per_class: dict[str, dict[str, Any]] = {}
    supports: list[int] = []
    for i, label in enumerate(order):
        tp = matrix[i][i]
        predicted_as = sum(matrix[r][i] for r in range(len(order))) + shared[i]
        support = sum(matrix[i]) + other[i] + missing[i]
        per_class[label] = _prf(tp, predicted_as, support) | {"support": support}
        supports.append(support)
    total_tp = sum(matrix[i][i] for i in range(len(order)))
    total_predicted = sum(sum(row) for row in matrix) + sum(shared)
    total_support = sum(supports)
    correct = sum(count for (truth, guess), count in pairs.items() if truth == guess)
    return {
        "n": len(expected),
        "accuracy": correct / len(expected),
        "labels": order,
        "per_class": per_class,
        "macro": _average(per_class, weighted=False),
        "weighted": _average(per_class, weighted=True),
        "micro": _prf(total_tp, total_predicted, total_support),
        "unanswered": sum(1 for p in predicted if p is None),
        "confusion_matrix": matrix,
        "other_predictions": other,
        "no_answer": missing,
    }


def _prf(tp: int, predicted: float, actual: int) -> dict[str, float]:
    precision = tp / predicted if predicted else 0.0
    recall = tp / actual if actual else 0.0
    both = precision + recall
    f1 = 2 * precision * recall / both if both else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def _average(per_class: dict[str, dict[str, Any]], *, weighted: bool) -> dict[str, float]:
    weights = {label: (c["support"] if weighted else 1) for label, c in per_class.items()}
    total = sum(weights.values())
    return {
        key: (
            sum(per_class[label][key] * w for label, w in weights.items()) / total if total else 0.0
        )
        for key in ("precision", "recall", "f1")
    }
