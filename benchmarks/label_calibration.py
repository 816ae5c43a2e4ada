"""What a reviewer's labels do to the faithfulness verdict: ``ragtrace review calibrate`` simulated.

    cd benchmarks && ../.venv/bin/python label_calibration.py

``ragtrace.review.calibration.fit_thresholds`` turns labelled answers into verdict thresholds by
calibration. This script gives it labels the way a team would, from traffic of one kind, and
scores the thresholds it proposes on other answers of that kind, beside the shipped verdict.
Its settings are the shipped defaults (20 labels of each kind per calibration, 5 folds, a
held-out gain of 0.02), set when it was written, before any figure here; nothing is tuned.

1. **Traffic unlike the labelled sets**: the helper-written short answers (``_faith_probes``;
   hallucinated: ``changed_fact`` and ``added_claim``). The shipped evaluator scores every set
   as live traffic is. The labels of sets 1 and 2 (495 answers) calibrate; sets 3 and 4 (540
   answers in 30 other domains, written after the detector shipped by helpers who saw none of
   it, read first by this script) are scored with the shipped and the proposed thresholds; with
   the thresholds that hold false alarms to a budget (``FitOptions.max_false_alarms``); and
   with a smaller label budget: ``n`` labels drawn at random from sets 1 and 2 (``DRAWS`` draws
   each). Three times: the answers as written, and as an assistant that cites its sources
   writes them (``FORMS``: ``[1]`` markers, a "(Source: ...)" note; the shipped evaluator reads
   them as written, ``read_past_markup`` off), a shift of every score the cut can follow.
2. **Traffic like them**: the tuning part of RAGTruth and HaluEval, each answer's value and
   verdict from the shipped recipe fitted without its document (``_faith_fit.cross_validate``,
   fold seed ``SEED``, which no choice read). Per draw, the documents are split in half at
   random; ``n`` labels drawn from one half calibrate, the other half is scored. The shipped
   cuts were fitted on such answers, so this says what calibrating costs where they were
   already right. The locked part is not read.

Prints both tables and writes ``results/label_calibration.json``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from _faith_compare import load_split, show
from _faith_fit import cross_validate
from _faith_probes import (
    WRITTEN_KINDS,
    WRITTEN_SETS,
    as_records,
    formatted,
    written_probes,
)
from sklearn.metrics import balanced_accuracy_score
from train_support import RESULTS, SHIPPED, SHIPPED_RESPONSE

from ragtrace.evaluators.faithfulness import Faithfulness
from ragtrace.review.calibration import (
    FitOptions,
    LabelledScore,
    fit_thresholds,
    proposed_thresholds,
)

LABELLED_SETS, LATER_SETS = WRITTEN_SETS[:2], WRITTEN_SETS[2:]
BUDGETS = (50, 100, 200, 400)
FORMS = ("plain", "citations [n]", "source note")  # of _faith_probes.FORMS
FALSE_ALARM_BUDGETS = (0.2, 0.4)
DRAWS = 20
SEED = 36000
WIDTH = 32  # the tables' columns: their labels are long


def in_form(probes: Sequence[Any], form: str) -> list[Any]:
    """``probes`` with their answers written in ``form`` (``_faith_probes.FORMS``)."""
    if form == "plain":
        return list(probes)
    return [p for p in formatted(probes) if p.id.split(":")[1].endswith(f"/{form}")]


def scored(probes: Sequence[Any]) -> list[LabelledScore]:
    """Each probe's ``LabelledScore`` under the shipped evaluator (scored as live traffic is:
    the task inferred)."""
    records = as_records(probes)
    scores = [s[0] for s in Faithfulness(threads=1).evaluate_batch(records)]
    return [
        LabelledScore(
            k,
            s.details["calibration"],
            s.details["hallucination_probability"],
            1.0 - s.threshold,
            bool(p.label),
        )
        for k, (p, s) in enumerate(zip(probes, scores, strict=True))
    ]


def verdicts(rows: Sequence[LabelledScore], thresholds: dict[str, float]) -> np.ndarray:
    """Flagged or not: each row's calibration's proposed cut, else the cut it was given."""
    return np.asarray([r.probability > thresholds.get(r.calibration, r.cut) for r in rows])


def by_kind(probes: Sequence[Any], flagged: np.ndarray) -> dict[str, float]:
    kinds = np.asarray([p.id.split(":")[1].split("/")[0] for p in probes])
    out = {f"{k} flagged": float(flagged[kinds == k].mean()) for k in WRITTEN_KINDS}
    out["BA"] = float(balanced_accuracy_score([p.label for p in probes], flagged))
    return out


def unlike_traffic(form: str, rng: np.random.Generator) -> dict[str, Any]:
    """Part 1 (module docstring), the answers written in ``form``."""
    labelled = scored(in_form([p for path in LABELLED_SETS for p in written_probes(path)], form))
    later = in_form([p for path in LATER_SETS for p in written_probes(path)], form)
    rows = scored(later)
    full = proposed_thresholds(fit_thresholds(labelled))
    table = {
        "shipped": by_kind(later, verdicts(rows, {})),
        "calibrated on all 495 labels": by_kind(later, verdicts(rows, full)),
    }
    budgeted = {}
    for budget in FALSE_ALARM_BUDGETS:
        cuts = proposed_thresholds(fit_thresholds(labelled, FitOptions(max_false_alarms=budget)))
        budgeted[budget] = cuts
        table[f"false alarms <= {budget:.0%}, 495 labels"] = by_kind(later, verdicts(rows, cuts))
    for n in BUDGETS[:-1]:
        runs = []
        for _ in range(DRAWS):
            drawn = [labelled[i] for i in rng.choice(len(labelled), n, replace=False)]
            runs.append(by_kind(later, verdicts(rows, proposed_thresholds(fit_thresholds(drawn)))))
        table[f"{n} labels, mean of {DRAWS}"] = {
            k: float(np.mean([r[k] for r in runs])) for k in runs[0]
        }
    return {"thresholds": full, "false_alarm_thresholds": budgeted, "sets 3 and 4": table}


def like_traffic(rng: np.random.Generator) -> dict[str, dict[str, float]]:
    """Part 2 (module docstring)."""
    data, examples, tuning, _ = load_split()  # the locked part is not read
    scored = cross_validate(data, tuning, SHIPPED_RESPONSE, seed=SEED, **SHIPPED)
    rows = {
        int(i): LabelledScore(
            int(i),
            data.tasks[i],
            float(scored.values[i]),
            float(scored.thresholds[i]),
            bool(data.labels[i]),
        )
        for i in tuning
    }
    slices = {
        name: np.asarray([i for i in tuning if f"{examples[i].dataset}/{examples[i].task}" == name])
        for name in sorted({f"{examples[i].dataset}/{examples[i].task}" for i in tuning})
    }
    documents = np.unique(data.groups[tuning])
    out: dict[str, dict[str, float]] = {}
    for n in BUDGETS:
        gains: dict[str, list[float]] = {name: [] for name in slices}
        moved = []
        for _ in range(DRAWS):
            half = set(rng.choice(documents, len(documents) // 2, replace=False).tolist())
            pool = [i for i in tuning if data.groups[i] in half]
            drawn = [rows[int(i)] for i in rng.choice(pool, min(n, len(pool)), replace=False)]
            thresholds = proposed_thresholds(fit_thresholds(drawn))
            moved.append(len(thresholds))
            for name, members in slices.items():
                held = [rows[int(i)] for i in members if data.groups[i] not in half]
                truth = [r.hallucinated for r in held]
                before = balanced_accuracy_score(truth, verdicts(held, {}))
                after = balanced_accuracy_score(truth, verdicts(held, thresholds))
                gains[name].append(after - before)
        out[f"{n} labels"] = {
            **{f"{name} BA change": float(np.mean(v)) for name, v in gains.items()},
            **{f"{name} worst draw": float(np.min(v)) for name, v in gains.items()},
            "calibrations moved, mean": float(np.mean(moved)),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.parse_args()
    rng = np.random.default_rng(SEED)
    unlike = {}
    for form in FORMS:
        unlike[form] = unlike_traffic(form, rng)
        show(
            f"1. short answers ({form}), sets 3 and 4, labels from sets 1 and 2",
            unlike[form]["sets 3 and 4"],
            WIDTH,
        )
        print(f"  thresholds from all 495 labels: {unlike[form]['thresholds']}")
    like = like_traffic(rng)
    show("2. tuning part, labels from half the documents, the other half scored", like, WIDTH)
    RESULTS.mkdir(parents=True, exist_ok=True)
    body = {"unlike_traffic": unlike, "like_traffic": like}
    (RESULTS / "label_calibration.json").write_text(json.dumps(body, indent=1) + "\n")


if __name__ == "__main__":
    main()
