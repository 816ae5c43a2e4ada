"""Binary-detector metrics for the accuracy harness, as DATA.md asks for them.

``at_threshold`` gives balanced accuracy, precision/recall/F1 of the positive (hallucinated)
class, accuracy and AUROC for scores where higher means "flag". ``tuned_flags`` picks the
threshold by cross-validation grouped by source document: each fold's threshold maximises
balanced accuracy on the other folds and is applied to the held-out fold only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.metrics import balanced_accuracy_score, precision_recall_fscore_support, roc_auc_score
from sklearn.model_selection import GroupKFold

FOLDS = 5


def summary(labels: Sequence[int], scores: Sequence[float], flags: Sequence[bool]) -> dict:
    """Metrics of one detector on one slice."""
    y = np.asarray(labels, dtype=int)
    s = np.asarray(scores, dtype=float)
    f = np.asarray(flags, dtype=int)
    precision, recall, f1, _ = precision_recall_fscore_support(
        y, f, average="binary", zero_division=0
    )
    return {
        "n": len(y),
        "balanced_accuracy": round(float(balanced_accuracy_score(y, f)), 3),
        "accuracy": round(float((y == f).mean()), 3),
        "precision": round(float(precision), 3),
        "recall": round(float(recall), 3),
        "f1": round(float(f1), 3),
        "auroc": round(float(roc_auc_score(y, s)), 3) if len(set(y.tolist())) == 2 else None,
    }


def at_threshold(labels: Sequence[int], scores: Sequence[float], threshold: float) -> dict:
    """Flag where score >= threshold."""
    return summary(labels, scores, [s >= threshold for s in scores])


def best_threshold(labels: np.ndarray, scores: np.ndarray) -> float:
    """The cut (midpoint between distinct scores) with the highest balanced accuracy."""
    values = np.unique(scores)
    if len(values) == 1:
        return float(values[0])
    cuts = (values[:-1] + values[1:]) / 2
    best, best_ba = float(cuts[0]), -1.0
    for cut in cuts[:: max(1, len(cuts) // 400)]:
        ba = balanced_accuracy_score(labels, scores >= cut)
        if ba > best_ba:
            best, best_ba = float(cut), ba
    return best


def tuned_flags(
    labels: Sequence[int], scores: Sequence[float], groups: Sequence[str]
) -> list[bool]:
    """Flags from thresholds chosen on the other folds (grouped by ``groups``)."""
    y = np.asarray(labels, dtype=int)
    s = np.asarray(scores, dtype=float)
    flags = np.zeros(len(y), dtype=bool)
    folds = min(FOLDS, len(set(groups)))
    for train, test in GroupKFold(n_splits=folds).split(s, y, np.asarray(groups)):
        flags[test] = s[test] >= best_threshold(y[train], s[train])
    return flags.tolist()
