"""Fit the calibrated models of answer_relevance and groundedness (data/signal_models.json).

    .venv/bin/python training/train_signals.py [--data-dir ../shared/data] [--write]

Reads the tuning part only (``_alarm_cases.build``: RAGTruth, HaluEval and ARES split by
``_labelled_data``). Normal answers against the bad answers each evaluator names:

- ``answer_relevance`` (records with passages) and ``answer_relevance_no_context`` (the same
  records without them): normal questions and answers against another question's answer and
  ARES's irrelevant answers;
- ``groundedness``: normal answers against the same answers with another record's passages and
  ARES's unfaithful answers (labelled hallucinations are left out: they are faithfulness's).

The signals are what the evaluators themselves compute (``details["signals"]``, read with
all-zero weights), so the fit sees exactly what runs in production. Each model is a
class-balanced logistic regression (C = 1) on its signals; 5-fold cross-validation grouped by
source document (RAGTruth ``source_id``, HaluEval question pair, ARES component) gives each case
an out-of-fold probability, and the thresholds are chosen on those with the rule of
docs/decisions/alarm-budget.md:

- ``default``: the largest threshold (two decimals, rounded down) that fails at most 3% of the
  normal answers of every data set; then the lowest threshold that still catches as many named
  bad answers (fewest alarms for the same detection);
- ``lenient``: the same at 1%; ``strict``: at 10%.

``groundedness`` chooses per task (``qa``: ARES, HaluEval, RAGTruth QA; ``summary``;
``data2txt``), as its Score's threshold is the record's task's. ``answer_relevance`` chooses one
threshold over every data set. ``--write`` fits each model on every tuning case and writes the
weights with the cross-validated figures; the thresholds are printed, to be copied into each
evaluator's ``OPERATING_POINTS``. Needs the alarm benchmark's vector cache to be quick (a cold
run embeds what ``alarms.py`` embeds).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # data readers, split

import numpy as np
from _alarm_cases import NORMAL, TUNING, Case, build
from _labelled_data import data_dir
from alarms import CACHE, install_cache
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

from ragtrace.evaluators._answer_relevance import AnswerRelevance
from ragtrace.evaluators._answer_signals import MODELS_FILE
from ragtrace.evaluators._groundedness import Groundedness

FOLDS = 5
C = 1.0
BUDGETS = {"lenient": 0.01, "default": 0.03, "strict": 0.10}
TASK_OF = {
    "ares": "qa",
    "halueval": "qa",
    "ragtruth/QA": "qa",
    "ragtruth/Summary": "summary",
    "ragtruth/Data2txt": "data2txt",
}
FEATURES = {
    "answer_relevance": ("query_similarity", "covered", "covered_near_query", "answers_form"),
    "answer_relevance_no_context": ("query_similarity", "answers_form"),
    "groundedness": ("mean_similarity", "covered", "names_missing"),
}
NAMED = {
    "answer_relevance": ("other_answer", "ares_negative"),
    "answer_relevance_no_context": ("other_answer", "ares_negative"),
    "groundedness": ("other_context", "ares_negative"),
}


def zero_weights(folder: Path) -> Path:
    """A weights file whose models give 0.5 everywhere: for reading signals only."""
    path = folder / "zero_signal_models.json"
    spec = {
        name: {"features": list(f), "coef": [0.0] * len(f), "intercept": 0.0}
        for name, f in FEATURES.items()
    }
    path.write_text(json.dumps(spec))
    return path


def signals_of(model: str, cases: list[Case], weights: Path) -> list[dict[str, float]]:
    """Each case's signals as the evaluator computes them."""
    if model == "groundedness":
        evaluator: Any = Groundedness(weights=str(weights))
    else:
        evaluator = AnswerRelevance(weights=str(weights))
    records = [c.record for c in cases]
    if model == "answer_relevance_no_context":
        records = [dataclasses.replace(r, chunks=()) for r in records]
    out = []
    for start in range(0, len(records), 64):
        for scores in evaluator.evaluate_batch(records[start : start + 64]):
            details = scores[0].details
            if scores[0].error is not None:
                raise RuntimeError(f"{model}: {scores[0].error}")
            out.append(dict(details["signals"]))
    return out


def fit(X: np.ndarray, y: np.ndarray) -> LogisticRegression:
    return LogisticRegression(C=C, class_weight="balanced", max_iter=5000).fit(X, y)


def out_of_fold(X: np.ndarray, y: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Out-of-fold P(fine) of each case."""
    p = np.zeros(len(y))
    for train, test in GroupKFold(FOLDS).split(X, y, groups):
        p[test] = fit(X[train], y[train]).predict_proba(X[test])[:, 0]
    return p


def choose(
    values: np.ndarray, cases: list[Case], named: tuple[str, ...], budget: float
) -> dict[str, Any]:
    """The rule's threshold on ``values`` (P(fine)) and what it gives on these cases."""
    normal: dict[str, list[float]] = defaultdict(list)
    for v, c in zip(values, cases, strict=True):
        if c.kind == NORMAL:
            normal[c.dataset].append(float(v))
    cuts = []
    for vals in normal.values():
        ordered = sorted(vals)
        cuts.append(ordered[min(len(ordered) - 1, math.floor(budget * len(ordered)))])
    cut = math.floor(min(cuts) * 100) / 100
    bad = [float(v) for v, c in zip(values, cases, strict=True) if c.kind in named]
    caught = [v for v in bad if v < cut]
    if caught:  # the lowest threshold that catches as many: just above the highest caught
        cut = min(cut, math.floor(max(caught) * 100) / 100 + 0.01)
    return {"threshold": round(cut, 2), **rates(values, cases, cut)}


def rates(values: np.ndarray, cases: list[Case], cut: float) -> dict[str, Any]:
    cells: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for v, c in zip(values, cases, strict=True):
        cell = cells[f"{c.kind}|{c.dataset}"]
        cell[0] += int(v < cut)
        cell[1] += 1
    return {"failed": {k: round(f / n, 4) for k, (f, n) in sorted(cells.items())}}


def run(folder: Path) -> dict[str, Any]:
    cases = build(folder, (TUNING,))
    tmp = Path(tempfile.mkdtemp())
    weights = zero_weights(tmp)
    out: dict[str, Any] = {}
    for model, features in FEATURES.items():
        source = "groundedness" if model == "groundedness" else "answer_relevance"
        chosen = [
            c for c in cases.by_evaluator[source] if c.kind == NORMAL or c.kind in NAMED[model]
        ]
        signals = signals_of(model, chosen, weights)
        X = np.array([[s[f] for f in features] for s in signals])
        y = np.array([0 if c.kind == NORMAL else 1 for c in chosen])
        groups = np.array([c.group for c in chosen])
        oof = out_of_fold(X, y, groups)
        shipped = fit(X, y)
        points: dict[str, Any] = {}
        for point, budget in BUDGETS.items():
            if model == "groundedness":
                points[point] = {
                    task: choose(
                        oof[[TASK_OF[c.dataset] == task for c in chosen]],
                        [c for c in chosen if TASK_OF[c.dataset] == task],
                        NAMED[model],
                        budget,
                    )
                    for task in ("qa", "summary", "data2txt")
                }
            else:
                points[point] = choose(oof, chosen, NAMED[model], budget)
        out[model] = {
            "features": list(features),
            # the classes are (fine, bad): the file holds the weights of P(fine)
            "coef": [round(-float(w), 5) for w in shipped.coef_[0]],
            "intercept": round(-float(shipped.intercept_[0]), 5),
            "info": {
                "fitted_by": "training/train_signals.py --write",
                "data": "tuning part of RAGTruth, HaluEval (benchmarks/_labelled_data.py) and ARES "
                "(benchmarks/_labelled_data.py); bad answers: " + ", ".join(NAMED[model]),
                "cases": {"normal": int((y == 0).sum()), "bad": int((y == 1).sum())},
                "C": C,
                "class_weight": "balanced",
                "cross_validation": f"{FOLDS}-fold, grouped by source document",
                "out_of_fold_points": points,
            },
        }
    return out


def table(result: dict[str, Any]) -> str:
    lines = []
    for model, spec in result.items():
        weights = ", ".join(
            f"{f}={w:+.3f}" for f, w in zip(spec["features"], spec["coef"], strict=True)
        )
        lines.append(f"== {model}: P(fine) = sigmoid({spec['intercept']:+.3f} + {weights})")
        for point, chosen in spec["info"]["out_of_fold_points"].items():
            per = chosen.items() if model == "groundedness" else [("all", chosen)]
            for task, c in per:
                cells = "  ".join(f"{k}={v:.1%}" for k, v in c["failed"].items())
                lines.append(f"  {point:8} {task:9} threshold {c['threshold']:.2f}: {cells}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--write", action="store_true", help=f"write {MODELS_FILE}")
    args = parser.parse_args(argv)
    store = install_cache(CACHE)
    result = run(data_dir(args.data_dir))
    store.flush()
    print(table(result))
    if args.write:
        MODELS_FILE.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {MODELS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
