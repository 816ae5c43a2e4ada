"""The classification report at the end of ``ragtrace eval``, per system.

When an evaluator writes a predicted and an expected label in its Scores' ``details`` (the
``classification`` evaluator does), ``ClassificationTally`` collects the pairs of the
unperturbed answers, per system, and gives what H2O Eval Studio's classification evaluator
reports per model (``classification_metrics.confusion_report``): accuracy, per-class
precision, recall, F1 and support, macro and weighted averages and the confusion matrix. A
question the system left unanswered (no response: it raised or returned nothing) whose case has
a reference counts as a wrong prediction, shown as ``no answer``: a miss of its expected class
and a false positive shared among the other classes (``confusion_report``).

``table()`` is the text ``ragtrace eval`` prints; ``to_json()`` goes under ``classification``
in ``--summary-json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragtrace._engine.outcomes import Outcome
from ragtrace._offline.summary import markdown_table
from ragtrace._offline.systems import EvalItem
from ragtrace.evaluators._classification import read_label
from ragtrace.evaluators._classification_metrics import NO_ANSWER, OTHER, confusion_report

SYSTEM_FIELDS = frozenset({"response", "chunks"})
MAX_CLASSES_PRINTED = 20


class ClassificationTally:
    """(expected, predicted) labels per (evaluator, system), from the run's outcomes."""

    def __init__(self) -> None:
        self._pairs: dict[tuple[str, str], list[tuple[str, str | None]]] = {}
        self._labels: dict[str, list[str]] = {}
        self._pending: dict[tuple[str, str], list[str]] = {}

    def add(self, item: EvalItem, outcome: Outcome) -> None:
        """Count one answer's labels (perturbed answers are not counted)."""
        if item.perturbation is not None:
            return
        for evaluator, score in outcome.scores:
            predicted, expected = score.details.get("predicted"), score.details.get("expected")
            if isinstance(predicted, str) and isinstance(expected, str):
                self._pairs.setdefault((evaluator, item.system), []).append((expected, predicted))
                labels = score.details.get("labels")
                if isinstance(labels, list) and evaluator not in self._labels:
                    self._labels[evaluator] = [str(x) for x in labels]
        reference = item.record.reference
        for skip in outcome.skipped:
            if reference and skip.missing and set(skip.missing) <= SYSTEM_FIELDS:
                self._pending.setdefault((skip.evaluator, item.system), []).append(reference)

    def reports(self) -> dict[str, dict[str, dict[str, Any]]]:
        """evaluator -> system -> the classification report (evaluators that gave labels)."""
        found: dict[str, dict[str, dict[str, Any]]] = {}
        keys = list(dict.fromkeys([*self._pairs, *self._pending]))
        evaluators = {evaluator for evaluator, _ in self._pairs}
        for evaluator, system in keys:
            if evaluator not in evaluators:
                continue  # an evaluator that never gave labels is no classifier
            labels = self._labels.get(evaluator)
            pairs = list(self._pairs.get((evaluator, system), []))
            pairs += [
                (read_label(reference, labels), None)
                for reference in self._pending.get((evaluator, system), [])
            ]
            expected = [e for e, _ in pairs]
            predicted = [p for _, p in pairs]
            found.setdefault(evaluator, {})[system] = confusion_report(expected, predicted, labels)
        return found

    def to_json(self) -> dict[str, dict[str, dict[str, Any]]]:
        """``reports()``, for ``--summary-json``."""
        return self.reports()

    def table(self) -> str:
        """Per evaluator and system: accuracy, the per-class table and the confusion matrix."""
        blocks = []
        for evaluator, by_system in self.reports().items():
            for system, report in by_system.items():
                blocks.append(_block(evaluator, system, report))
        return "\n\n".join(blocks)


def _block(evaluator: str, system: str, report: dict[str, Any]) -> str:
    labels: Sequence[str] = report["labels"][:MAX_CLASSES_PRINTED]
    unanswered = f", {report['unanswered']} unanswered" if report["unanswered"] else ""
    head = (
        f"classification report ({evaluator}), system {system}: {report['n']:,} answers"
        f"{unanswered}; accuracy {report['accuracy']:.3f}"
    )
    rows = [
        (label, *_prf(report["per_class"][label]), f"{report['per_class'][label]['support']:,}")
        for label in labels
    ]
    support = sum(report["per_class"][label]["support"] for label in report["labels"])
    rows += [
        (f"{average} avg", *_prf(report[average]), f"{support:,}")
        for average in ("macro", "weighted")
    ]
    per_class = markdown_table(("class", "precision", "recall", "f1", "support"), rows)
    extra = [
        (name, key)
        for name, key in ((OTHER, "other_predictions"), (NO_ANSWER, "no_answer"))
        if any(report[key])
    ]
    matrix_rows = [
        (
            label,
            *(f"{n:,}" for n in report["confusion_matrix"][i][: len(labels)]),
            *(f"{report[key][i]:,}" for _, key in extra),
        )
        for i, label in enumerate(labels)
    ]
    matrix = markdown_table(
        ("expected \\ predicted", *labels, *(name for name, _ in extra)), matrix_rows
    )
    more = len(report["labels"]) - len(labels)
    tail = f"\n({more} more classes in --summary-json)" if more > 0 else ""
    title = "confusion matrix (rows: expected, columns: predicted):"
    return f"{head}\n{per_class}\n{title}\n{matrix}{tail}"


def _prf(figures: dict[str, Any]) -> tuple[str, str, str]:
    return tuple(f"{figures[k]:.3f}" for k in ("precision", "recall", "f1"))  # type: ignore[return-value]
