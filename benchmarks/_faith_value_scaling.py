"""A per-calibration scaling of the faithfulness value, measured nested on the tuning part.

    cd benchmarks && ../.venv/bin/python _faith_value_scaling.py [--locked]
        [--embedding-model wordllama]

The value (``hallucination_probability``) ranks answers of every task on one scale, and the
alert rules read its hourly mean as the share of hallucinated answers. Out of fold its
calibrations are too far from 0.5: a logistic fit of the label on the value's log-odds gives
slopes of 0.4-0.75 (``_faith_value_calibration.py``). The candidate gives each calibration's
value a scaling, sigmoid(slope * log-odds + intercept), fitted on that calibration's training
answers' values out of fold (``_faith_fit.fit_scaling``: response models refitted on
``INNER_FOLDS`` folds of the training answers, from out-of-fold claim probabilities). The
scaling is monotone and the verdict threshold goes through it too, so no verdict changes; only
the pooled ranking and the values' calibration can.

Measured nested: in every outer fold the scaling is fitted on that fold's training answers
only, so the held-out answers' figures are out of sample for it too. Four fold assignments that
no earlier choice read (seeds 4000, 5000, 6000, 7000 of ``_faith_fit.group_folds``).

The rule, written before the figures were computed: ship the scaling if, over the mean of the
four fold assignments, (a) the pooled RAGTruth AUROC gains at least ``MIN_AUROC_GAIN`` and
(b) the calibration error, the mean over calibrations of |mean value - share of hallucinated
answers|, does not grow; every BA must stay the same (checked, by construction). ``--locked``
would then score the locked part once, both ways, with models fitted on the whole tuning part.

Outcome (2026-11-27, 4 min): pooled AUROC 0.770 -> 0.771 (+0.0016), calibration error
0.020 -> 0.003, every BA the same: the rule says do not ship, and the locked part was not
scored. BENCHMARKS.md, issue 22, "A scaling of the value".
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from _datasets import data_dir, halueval, ragtruth
from _faith_fit import SHIPPED_PRIOR_WEIGHTS, Scored, cross_validate, fitted_probabilities
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from train_support import BY_TASK, RESULTS, SHIPPED_RESPONSE, load, parts

from ragtrace.backends.embeddings import STATIC_MODEL

SEEDS = (4000, 5000, 6000, 7000)
MIN_AUROC_GAIN = 0.003


def figures(data, examples, answers: np.ndarray, scored: Scored) -> dict[str, float]:
    """Pooled RAGTruth AUROC, each slice's BA, and the calibration error over calibrations."""
    tasks = np.asarray(data.tasks)
    out: dict[str, float] = {}
    slices = {f"{examples[i].dataset}/{examples[i].task}" for i in answers.tolist()} | {
        "ragtruth/all"
    }
    for name in sorted(slices):
        rows = np.asarray(
            [
                i
                for i in answers.tolist()
                if f"{examples[i].dataset}/{examples[i].task}" == name
                or (name == "ragtruth/all" and examples[i].dataset == "ragtruth")
            ]
        )
        labels = data.labels[rows]
        flagged = scored.values[rows] > scored.thresholds[rows]
        out[f"{name} BA"] = balanced_accuracy_score(labels, flagged)
        out[f"{name} AUROC"] = roc_auc_score(labels, scored.values[rows])
    errors = []
    for calibration in sorted(set(tasks[answers].tolist())):
        rows = answers[tasks[answers] == calibration]
        gap = abs(float(scored.values[rows].mean()) - float(data.labels[rows].mean()))
        out[f"{calibration} |mean - share|"] = gap
        errors.append(gap)
    out["calibration error"] = float(np.mean(errors))
    return out


def show(title: str, rows: dict[str, dict[str, float]]) -> None:
    names = list(next(iter(rows.values())))
    print(f"-- {title}")
    print(f"  {'':<34}" + "".join(f"{label:>12}" for label in rows))
    for name in names:
        print(f"  {name:<34}" + "".join(f"{r[name]:>12.3f}" for r in rows.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--locked", action="store_true", help="score the locked part once")
    parser.add_argument("--embedding-model", choices=[STATIC_MODEL])
    args = parser.parse_args()
    examples = ragtruth(data_dir(args.data_dir)) + halueval(data_dir(args.data_dir))
    data = load(examples, args.embedding_model)
    tuning, locked = parts(examples)
    common = {"by_task": BY_TASK, "prior_weights": SHIPPED_PRIOR_WEIGHTS}
    per_seed: dict[str, list[dict[str, float]]] = {"shipped": [], "scaled": []}
    for seed in SEEDS:
        for label, scale in (("shipped", False), ("scaled", True)):
            scored = cross_validate(
                data, tuning, SHIPPED_RESPONSE, seed=seed, scale_values=scale, **common
            )
            per_seed[label].append(figures(data, examples, tuning, scored))
    mean = {
        label: {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
        for label, runs in per_seed.items()
    }
    show(f"tuning part, nested, mean of {len(SEEDS)} fold assignments {SEEDS}", mean)
    shipped, scaled = mean["shipped"], mean["scaled"]
    same_verdicts = all(
        abs(a[k] - b[k]) < 1e-9
        for a, b in zip(per_seed["shipped"], per_seed["scaled"], strict=True)
        for k in a
        if k.endswith(" BA")
    )
    gain = scaled["ragtruth/all AUROC"] - shipped["ragtruth/all AUROC"]
    ships = (
        gain >= MIN_AUROC_GAIN
        and scaled["calibration error"] <= shipped["calibration error"]
        and same_verdicts
    )
    print(
        f"rule: pooled AUROC gain {gain:+.4f} (>= {MIN_AUROC_GAIN}), calibration error "
        f"{shipped['calibration error']:.4f} -> {scaled['calibration error']:.4f}, verdicts "
        f"{'the same' if same_verdicts else 'CHANGED'}: {'ship' if ships else 'do not ship'}"
    )
    result: dict[str, object] = {"seeds": SEEDS, "tuning": mean, "ships": ships}
    if args.locked:
        locked_rows = {
            label: figures(
                data,
                examples,
                locked,
                fitted_probabilities(
                    data, tuning, locked, SHIPPED_RESPONSE, scale_values=scale, **common
                ),
            )
            for label, scale in (("shipped", False), ("scaled", True))
        }
        show("locked part, fitted on the whole tuning part (scored once)", locked_rows)
        result["locked"] = locked_rows
    suffix = f"_{args.embedding_model}" if args.embedding_model else ""
    path = RESULTS / f"faith_value_scaling{suffix}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
