"""Which response features to ship: grouped CV inside the tuning part of the locked split only.

    cd benchmarks && ../.venv/bin/python _faith_select.py

Each candidate set of ``support_response.RESPONSE_FEATURES`` is cross-validated (5 folds
grouped by source document, both models refitted per fold) on the tuning answers; the locked
part is never read. Prints balanced accuracy at 0.5 per slice and AUROC, one line per set, and
writes benchmarks/results/faith_select.json. Each set is tried with one pair of models shared
by every task and with one pair per task (``by_task``). ``train_support.SHIPPED_RESPONSE`` and
``BY_TASK`` are the choice made from this table.
"""

from __future__ import annotations

import json

from _datasets import data_dir, halueval, ragtruth
from _faith_fit import cross_validate
from train_support import RESULTS, load, parts, report

from ragtrace.evaluators.support_response import CLAIM_EVIDENCE, COVERAGE, RESPONSE_FEATURES

CANDIDATES: dict[str, tuple[str, ...]] = {
    "claims only (before)": CLAIM_EVIDENCE,
    "claims + word coverage": (*CLAIM_EVIDENCE, "word_coverage"),
    "claims + word, number, name coverage": RESPONSE_FEATURES,
    "coverage only": COVERAGE,
}
SLICES = ("ragtruth/QA", "ragtruth/Summary", "ragtruth/Data2txt", "ragtruth/all", "halueval/QA")


def main() -> None:
    examples = ragtruth(data_dir()) + halueval(data_dir())
    data = load(examples)
    tuning, _ = parts(examples)
    results = {}
    heads = "".join(f"{s.split('/')[1][:8] + ' BA':>12}" for s in SLICES)
    print(f"{'set':<50}{heads}  AUROC per slice")
    for by_task in (False, True):
        for name, names in CANDIDATES.items():
            label = f"{'per task' if by_task else 'shared'}: {name}"
            r = report(examples, cross_validate(data, tuning, names, by_task=by_task))
            results[label] = r
            bas = "".join(f"{r[s]['balanced_accuracy']:>12.3f}" for s in SLICES)
            aurocs = "/".join(f"{r[s]['auroc']:.3f}" for s in SLICES)
            print(f"{label:<50}{bas}  {aurocs}", flush=True)
    (RESULTS / "faith_select.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
