"""Summary's verdict weight, chosen over shuffled folds of the tuning part by a rule set first.

    cd benchmarks && ../.venv/bin/python _faith_verdict_weights.py [--locked]
        [--embedding-model wordllama]

Every calibration's verdict counted its base rate at ``_faith_fit.PRIOR_WEIGHT`` (0.5), chosen
from ``_faith_select.py``'s grouped folds, where it cost Summary's BA 0.013 against the
balanced verdict (weight 0). Over four shuffled fold assignments
(``_faith_select.py --shuffles 4``) it costs 0.063, so the grouped folds hid most of the
price. This script measures Summary's weight alone, the other calibrations kept at 0.5. Only
the thresholds move (the values count the base rate in full whatever the verdict's weight), so
AUROCs do not change.

The rule, written before the figures were computed: over the mean of the four shuffled splits
(seeds 0, 1000, 2000, 3000, ``_faith_fit.group_folds``), Summary's weight becomes the candidate
(0 or 0.25) that gains at least ``MIN_SUMMARY_GAIN`` on Summary's BA and loses at most
``MAX_POOLED_LOSS`` on pooled RAGTruth BA against the shipped 0.5; where both qualify, the one
with the higher pooled BA; where none does, 0.5 stays. ``--locked`` then scores the locked part
once with the weight the rule picks, beside the verdict at 0.5. The rule picked 0.25, which
ships as ``_faith_fit.SHIPPED_PRIOR_WEIGHTS`` (BENCHMARKS.md, issue 22, fifth change).
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from _datasets import data_dir, halueval, ragtruth
from _faith_fit import PRIOR_WEIGHT, Scored, cross_validate, fitted_probabilities
from train_support import BY_TASK, RESULTS, SHIPPED_RESPONSE, load, parts, report

from ragtrace.backends.embeddings import STATIC_MODEL

SLICES = ("ragtruth/QA", "ragtruth/Summary", "ragtruth/Data2txt", "ragtruth/all", "halueval/QA")
CALIBRATION = "summary"
CANDIDATES = (0.0, 0.25)
SEEDS = (0, 1000, 2000, 3000)
MIN_SUMMARY_GAIN = 0.03
MAX_POOLED_LOSS = 0.01


def with_weight(scored: Scored, tasks: np.ndarray, base_rate: float, weight: float) -> Scored:
    """``scored`` with the ``CALIBRATION`` answers' verdict thresholds for ``weight`` (the value
    counts the base rate in full: the threshold is 0.5 moved by ``1 - weight`` of its
    log-odds, as ``_faith_fit.Fitted.threshold``)."""
    rate = float(np.clip(base_rate, 0.01, 0.99))
    threshold = 1.0 / (1.0 + np.exp(-(1.0 - weight) * np.log(rate / (1.0 - rate))))
    thresholds = scored.thresholds.copy()
    thresholds[(tasks == CALIBRATION) & ~np.isnan(scored.values)] = threshold
    return Scored(scored.values, thresholds)


def summary_from(shipped: Scored, other: Scored, tasks: np.ndarray) -> Scored:
    """``shipped`` with the ``CALIBRATION`` answers' thresholds taken from ``other`` (the same
    folds, another verdict weight)."""
    thresholds = shipped.thresholds.copy()
    mine = tasks == CALIBRATION
    thresholds[mine] = other.thresholds[mine]
    return Scored(shipped.values, thresholds)


def bas(figures: dict) -> list[float]:
    return [figures[s]["balanced_accuracy"] for s in SLICES]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--locked", action="store_true", help="score the chosen weight once")
    parser.add_argument(
        "--embedding-model",
        choices=[STATIC_MODEL],
        help="the similarity features of this embedder (the static profile's weights)",
    )
    args = parser.parse_args()
    examples = ragtruth(data_dir(args.data_dir)) + halueval(data_dir(args.data_dir))
    data = load(examples, args.embedding_model)
    tuning, locked = parts(examples)
    tasks = np.asarray(data.tasks)
    rate = float(data.labels[tuning][tasks[tuning] == CALIBRATION].mean())
    weights = (PRIOR_WEIGHT, *CANDIDATES)
    runs: dict[float, list[list[float]]] = {w: [] for w in weights}
    for seed in SEEDS:
        by_weight = {
            w: cross_validate(
                data, tuning, SHIPPED_RESPONSE, by_task=BY_TASK, seed=seed, prior_weight=w
            )
            for w in weights
        }
        for w in weights:
            scored = summary_from(by_weight[PRIOR_WEIGHT], by_weight[w], tasks)
            runs[w].append(bas(report(examples, scored)))
    mean = {w: np.asarray(r).mean(axis=0).round(3).tolist() for w, r in runs.items()}
    print(f"summary weight  {'  '.join(f'{s:>17}' for s in SLICES)}   (BA, tuning, shuffled CV)")
    for w, row in mean.items():
        print(f"{w:<15} " + "  ".join(f"{v:>17.3f}" for v in row))
    shipped = mean[PRIOR_WEIGHT]
    qualifying = [
        w
        for w in CANDIDATES
        if mean[w][1] - shipped[1] >= MIN_SUMMARY_GAIN
        and shipped[3] - mean[w][3] <= MAX_POOLED_LOSS
    ]
    chosen = max(qualifying, key=lambda w: mean[w][3]) if qualifying else PRIOR_WEIGHT
    print(f"the rule picks {chosen}")
    results: dict[str, object] = {"tuning_shuffled": mean, "chosen": chosen}
    if args.locked:
        scored = fitted_probabilities(data, tuning, locked, SHIPPED_RESPONSE, by_task=BY_TASK)
        lines = {"shipped": report(examples, scored)}
        if chosen != PRIOR_WEIGHT:
            lines[f"summary at {chosen}"] = report(
                examples, with_weight(scored, tasks, rate, chosen)
            )
        for name, figures in lines.items():
            print(
                f"locked, {name:<16}"
                + "  ".join(f"{figures[s]['balanced_accuracy']:.3f}" for s in SLICES)
            )
        results["locked"] = lines
    suffix = f"_{args.embedding_model}" if args.embedding_model else ""
    (RESULTS / f"faith_verdict_weights{suffix}.json").write_text(
        json.dumps(results, indent=1) + "\n"
    )


if __name__ == "__main__":
    main()
