"""Which response features and which calibration to ship: grouped CV inside the tuning part of
the locked split only.

    cd benchmarks && ../.venv/bin/python _faith_select.py [--shuffles N]

Each candidate is cross-validated (5 folds grouped by source document, both models refitted per
fold) on the tuning answers; the locked part is never read. Prints balanced accuracy at 0.5 per
slice and AUROC, one line per candidate, and writes benchmarks/results/faith_select.json.

1. Feature sets of ``support_response.RESPONSE_FEATURES``, each with one pair of models shared
   by every task and with one pair per task (three tasks, balanced verdicts: the design issue 22
   first shipped). ``train_support.SHIPPED_RESPONSE`` is the choice made from this table.
2. Calibrations, with the shipped features: three task pairs or four (``short_qa`` apart,
   ``support_response.calibration``), and how much of each task's base rate the response model
   counts (``prior_weight``: 0 balanced, 1 calibrated). ``_faith_fit.PRIOR_WEIGHT`` and the four
   pairs are the choice made from this table (Summary's weight was chosen again over
   shuffled folds: ``_faith_verdict_weights.py``, ``_faith_fit.SHIPPED_PRIOR_WEIGHTS``).
3. With those: whether a pair's verdict cut moves to its best balanced accuracy on its training
   answers, when that beats 0.5 by at least a gain (``_faith_fit.CUT_MIN_GAIN`` is the choice).
4. With the verdict chosen above, how much of the base rate the value counts
   (``value_prior_weight``; the verdict becomes a per-pair threshold on the value, so the
   balanced accuracies stay put and only the rankings, the AUROCs, move).
   ``_faith_fit.VALUE_PRIOR_WEIGHT`` is the choice.

With ``--shuffles N`` every line is the mean over N other splits of the same tuning answers
into 5 folds, documents dealt by a seeded shuffle (``_faith_fit.group_folds``): the grouped
folds' figures move by a few hundredths between such splits (Summary's most), more than several
differences these tables were read from.

Tables 1-3 keep the value on the verdict's scale (``value_prior_weight == prior_weight``), the
design they chose for.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

import numpy as np
from _datasets import data_dir, halueval, ragtruth
from _faith_fit import PRIOR_WEIGHT, VALUE_PRIOR_WEIGHT, Data, cross_validate
from train_support import RESULTS, SHIPPED_RESPONSE, load, parts, report

from ragtrace.evaluators.support_response import (
    CALIBRATIONS,
    CLAIM_EVIDENCE,
    COVERAGE,
    RESPONSE_FEATURES,
)

CANDIDATES: dict[str, tuple[str, ...]] = {
    "claims only (before)": CLAIM_EVIDENCE,
    "claims + word coverage": (*CLAIM_EVIDENCE, "word_coverage"),
    "claims + word, number, name coverage": RESPONSE_FEATURES,
    "coverage only": COVERAGE,
}
PRIOR_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
CUT_GAINS = (0.005, 0.01, 0.02)
VALUE_PRIOR_WEIGHTS = (0.5, 0.75, 1.0, 1.25)
SLICES = ("ragtruth/QA", "ragtruth/Summary", "ragtruth/Data2txt", "ragtruth/all", "halueval/QA")


def three_tasks(data: Data) -> Data:
    """``data`` with each answer's calibration folded back into its task (no ``short_qa``)."""
    return dataclasses.replace(data, tasks=[CALIBRATIONS[t] for t in data.tasks])


def mean_report(reports: list[dict[str, dict]]) -> dict[str, dict]:
    """``report``'s figures averaged over several runs (the slices of the first)."""
    keys = ("balanced_accuracy", "f1_hallucinated", "auroc")
    return {
        s: {"n": reports[0][s]["n"]}
        | {k: round(float(np.mean([r[s][k] for r in reports])), 3) for k in keys}
        for s in reports[0]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--shuffles", type=int, default=0, help="average over N shuffled fold assignments"
    )
    args = parser.parse_args()
    seeds: list[int | None] = [1000 * k for k in range(args.shuffles)] or [None]
    examples = ragtruth(data_dir()) + halueval(data_dir())
    data = load(examples)
    tuning, _ = parts(examples)
    results: dict[str, dict] = {}
    heads = "".join(f"{s.split('/')[1][:8] + ' BA':>12}" for s in SLICES)
    print(f"{'candidate':<58}{heads}  AUROC per slice")

    def show(
        label: str,
        source: Data = data,
        names: tuple[str, ...] = SHIPPED_RESPONSE,
        **options: Any,
    ) -> None:
        """Cross-validate one candidate (``cross_validate`` options, per task unless given)
        and print its line."""
        options = {"by_task": True} | options
        r = mean_report(
            [
                report(examples, cross_validate(source, tuning, names, seed=seed, **options))
                for seed in seeds
            ]
        )
        results[label] = r
        bas = "".join(f"{r[s]['balanced_accuracy']:>12.3f}" for s in SLICES)
        aurocs = "/".join(f"{r[s]['auroc']:.3f}" for s in SLICES)
        print(f"{label:<58}{bas}  {aurocs}", flush=True)

    tasks3 = three_tasks(data)
    balanced = {"prior_weight": 0.0, "cut_gain": None, "value_prior_weight": 0.0}
    for by_task in (False, True):
        for name, names in CANDIDATES.items():
            label = f"{'per task' if by_task else 'shared'}: {name}"
            show(label, tasks3, names, by_task=by_task, **balanced)
    for four, source in ((False, tasks3), (True, data)):
        for weight in PRIOR_WEIGHTS:
            label = f"{'4 pairs (short_qa apart)' if four else '3 task pairs'}, prior x {weight}"
            show(label, source, prior_weight=weight, cut_gain=None, value_prior_weight=weight)
    for gain in CUT_GAINS:
        label = f"4 pairs, prior x {PRIOR_WEIGHT}, cut moved if it gains >= {gain}"
        show(label, cut_gain=gain, value_prior_weight=PRIOR_WEIGHT)
    for value_weight in VALUE_PRIOR_WEIGHTS:
        label = f"shipped verdict, value counts base rate x {value_weight}"
        if value_weight == VALUE_PRIOR_WEIGHT:
            label += " (now)"
        show(label, value_prior_weight=value_weight)
    suffix = f"_shuffled{args.shuffles}" if args.shuffles else ""
    (RESULTS / f"faith_select{suffix}.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
