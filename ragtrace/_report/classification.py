"""The classification leaderboard: per system, the catalogue's classification report.

For a score whose rows carry a predicted and an expected label in ``details`` (the
``classification`` evaluator writes them), ``classification_boards`` gives, per system, the
report of ``classification_metrics.confusion_report`` over the compared cases of the score
(``ragtrace._report.basis``): accuracy, per-class precision, recall, F1 and support, macro and
weighted averages and the confusion matrix. In ``fail`` mode an unanswered case is a wrong
prediction: a miss of its expected class and a false positive shared among the other classes
(``confusion_report``), so skipping costs precision as well as recall. Its expected class is
the case's, whoever answered: taken from another system's row of the same case, or read from
the case's reference when no system answered it. Systems are ranked by accuracy, then macro
F1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragtrace._report.basis import Basis
from ragtrace._report.findings import rounded
from ragtrace._report.groups import ScoreGroup
from ragtrace.evaluators._classification import read_label
from ragtrace.evaluators._classification_metrics import confusion_report

MAX_CLASSES = 30
_AVERAGES = ("macro", "weighted", "micro")


def classification_boards(
    groups: Sequence[ScoreGroup], bases: Sequence[Basis]
) -> list[dict[str, Any]]:
    """One board per score that carries labels, systems best first."""
    boards = []
    for group, basis in zip(groups, bases, strict=True):
        labels = _known_labels(group)
        expected = _expected_labels(group, labels)
        if not expected:
            continue
        entries = []
        for system in group.systems:
            cases = basis.cases if basis.shared else list(basis.systems[system].verdicts)
            pairs = _pairs(group, system, cases, expected, basis.mode)
            if not pairs:
                continue
            report = confusion_report([e for e, _ in pairs], [p for _, p in pairs], labels)
            entries.append({"system": system, **_rounded(report)})
        entries.sort(key=lambda e: (-e["accuracy"], -e["macro"]["f1"], e["system"]))
        for rank, entry in enumerate(entries, 1):
            entry["rank"] = rank
        if entries:
            boards.append({"score": group.name, "mode": basis.mode, "systems": entries})
    return boards


def _expected_labels(group: ScoreGroup, labels: Sequence[str] | None) -> dict[str, str]:
    """case -> the expected label, from any system's unperturbed row that names it; for a case
    no system answered, read from its reference as the evaluator reads it (``ragtrace eval``
    counts such a case the same way). Empty when no row carries labels: no classifier."""
    found: dict[str, str] = {}
    for rows in group.plain.values():
        for case, row in rows.items():
            label = row.details.get("expected")
            if isinstance(label, str) and isinstance(row.details.get("predicted"), str):
                found.setdefault(case, label)
    if not found:
        return found
    for system in group.systems:
        for case, line in group.lines.get(system, {}).items():
            if case not in found and line.reference and group.status(system, case) == "unanswered":
                found[case] = read_label(line.reference, labels)
    return found


def _known_labels(group: ScoreGroup) -> list[str] | None:
    for rows in group.plain.values():
        for row in rows.values():
            labels = row.details.get("labels")
            if isinstance(labels, list) and labels and all(isinstance(x, str) for x in labels):
                return list(labels)
    return None


def _pairs(
    group: ScoreGroup, system: str, cases: Sequence[str], expected: dict[str, str], mode: str
) -> list[tuple[str, str | None]]:
    pairs: list[tuple[str, str | None]] = []
    rows = group.plain.get(system, {})
    for case in cases:
        if case not in expected:
            continue
        row = rows.get(case)
        predicted = row.details.get("predicted") if row is not None else None
        if isinstance(predicted, str):
            pairs.append((expected[case], predicted))
        elif mode == "fail" and group.status(system, case) == "unanswered":
            pairs.append((expected[case], None))
    return pairs


def _rounded(report: dict[str, Any]) -> dict[str, Any]:
    labels = report["labels"][:MAX_CLASSES]
    return {
        "n": report["n"],
        "accuracy": rounded(report["accuracy"]),
        "unanswered": report["unanswered"],
        **{k: {m: rounded(v) for m, v in report[k].items()} for k in _AVERAGES},
        "labels": labels,
        "classes_left_out": len(report["labels"]) - len(labels),
        "per_class": {
            label: {
                k: (v if k == "support" else rounded(v))
                for k, v in report["per_class"][label].items()
            }
            for label in labels
        },
        "confusion_matrix": [
            row[: len(labels)] for row in report["confusion_matrix"][: len(labels)]
        ],
        "other_predictions": report["other_predictions"][: len(labels)],
        "no_answer": report["no_answer"][: len(labels)],
    }
