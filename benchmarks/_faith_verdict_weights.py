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
from _faith_fit import PRIOR_WEIGHT, cross_validate, fitted_probabilities
from train_support import BY_TASK, RESULTS, SHIPPED_RESPONSE, load, parts, report

from ragtrace.backends.embeddings import STATIC_MODEL

SLICES = ("ragtruth/QA", "ragtruth/Summary", "ragtruth/Data2txt", "ragtruth/all", "halueval/QA")
CALIBRATION = "summary"
CANDIDATES = (0.0, 0.25)
SEEDS = (0, 1000, 2000, 3000)
MIN_SUMMARY_GAIN = 0.03
MAX_POOLED_LOSS = 0.01


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
    weights = (PRIOR_WEIGHT, *CANDIDATES)
    runs: dict[float, list[list[float]]] = {w: [] for w in weights}
    for seed in SEEDS:
        for w in weights:
            scored = cross_validate(
                data,
                tuning,
                SHIPPED_RESPONSE,
                by_task=BY_TASK,
                seed=seed,
                prior_weights={CALIBRATION: w},
            )
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
        lines = {
            f"summary at {w}": report(
                examples,
                fitted_probabilities(
                    data,
                    tuning,
                    locked,
                    SHIPPED_RESPONSE,
                    by_task=BY_TASK,
                    prior_weights={CALIBRATION: w},
                ),
            )
            for w in dict.fromkeys((PRIOR_WEIGHT, chosen))
        }
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
