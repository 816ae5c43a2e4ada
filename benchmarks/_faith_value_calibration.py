"""How well calibrated the faithfulness value is, per calibration, out of fold on the tuning part.

    cd benchmarks && ../.venv/bin/python _faith_value_calibration.py

The value (``hallucination_probability``) counts each calibration's base rate in full so that
one number ranks answers of every task and its hourly mean estimates the share of hallucinated
answers. For each fold assignment (``GroupKFold``'s and two seeded shuffles,
``_faith_fit.group_folds``) this prints, per calibration, the mean out-of-fold value against the
true share, and the slope and intercept of a logistic fit of the label on the value's log-odds
(slope 1, intercept 0: calibrated; a slope below 1: the values are too far from 0.5). It also
prints the pooled RAGTruth AUROC before and after refitting that slope and intercept on the same
out-of-fold values: an in-sample upper bound of what a per-calibration temperature would add
to the ranking. Tuning part only; the locked part is not read.
"""

from __future__ import annotations

import json

import numpy as np
from _datasets import data_dir, halueval, ragtruth
from _faith_fit import SHIPPED_PRIOR_WEIGHTS, cross_validate
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from train_support import BY_TASK, RESULTS, SHIPPED_RESPONSE, load, parts

SEEDS = (None, 0, 1000)


def log_odds(values: np.ndarray) -> np.ndarray:
    clipped = np.clip(values, 1e-6, 1 - 1e-6)
    return np.log(clipped / (1 - clipped))


def main() -> None:
    examples = ragtruth(data_dir()) + halueval(data_dir())
    data = load(examples)
    tuning, _ = parts(examples)
    tasks = np.asarray(data.tasks)
    ragtruth_rows = np.asarray([i for i in tuning if examples[i].dataset == "ragtruth"])
    results = []
    for seed in SEEDS:
        scored = cross_validate(
            data,
            tuning,
            SHIPPED_RESPONSE,
            by_task=BY_TASK,
            seed=seed,
            prior_weights=SHIPPED_PRIOR_WEIGHTS,
        )
        z = log_odds(scored.values)
        refitted = scored.values.copy()
        rows = {}
        for task in sorted(set(tasks[tuning].tolist())):
            mine = tuning[tasks[tuning] == task]
            labels = data.labels[mine]
            fit = LogisticRegression(C=1e6).fit(z[mine][:, None], labels)
            refitted[mine] = fit.predict_proba(z[mine][:, None])[:, 1]
            rows[task] = {
                "n": len(mine),
                "mean_value": round(float(scored.values[mine].mean()), 3),
                "share": round(float(labels.mean()), 3),
                "slope": round(float(fit.coef_[0][0]), 2),
                "intercept": round(float(fit.intercept_[0]), 2),
            }
        labels = data.labels[ragtruth_rows]
        before = roc_auc_score(labels, scored.values[ragtruth_rows])
        after = roc_auc_score(labels, refitted[ragtruth_rows])
        folds = "GroupKFold" if seed is None else f"shuffled, seed {seed}"
        print(f"-- {folds}: pooled RAGTruth AUROC {before:.3f}, refitted in-sample {after:.3f}")
        for task, row in rows.items():
            print(
                f"  {task:<9} n {row['n']:>4}  mean value {row['mean_value']:.3f}  share "
                f"{row['share']:.3f}  slope {row['slope']:.2f}  intercept {row['intercept']:+.2f}"
            )
        results.append(
            {"folds": folds, "auroc": round(before, 3), "refitted": round(after, 3), **rows}
        )
    (RESULTS / "faith_value_calibration.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
