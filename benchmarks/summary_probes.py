"""The shipped faithfulness evaluator on summaries written by hand, per kind of summary.

    cd benchmarks && ../.venv/bin/python summary_probes.py [--variants features,crossencoder]

RAGTruth's summaries miss the Summary target, and most of what the detector misses there are
changed facts (BENCHMARKS.md, "What the default misses"). Every choice about the detector was
made on RAGTruth's tuning part, and the locked part has been read once per candidate since;
these two sets are labelled summaries nobody had read when they were written. Two helpers, who
saw neither the detector nor any data, wrote ``data/summary_probes_1.json`` and ``_2.json``
(2026-11-27): 30 invented news articles in 30 domains, each summarised seven ways, three
faithful (``extractive``, ``abstractive`` in the writer's own words, ``brief``: one or two
sentences) and four with one error each (``changed_number``, ``changed_relation``: a relation
or outcome reversed in the article's own words, ``added_claim``: a fact the article lacks,
``opinion_added``: an unsupported judgement stated as fact). Each answer that is wrong says in
``edit`` what its error is.

For each variant of the evaluator (``short_answers.VARIANTS``) this prints, per set, the share
of each kind flagged, the balanced accuracy and the AUROC of the value over the set, and the
AUROC of each wrong kind against the set's faithful summaries (how well the value ranks that
error, whatever the threshold). Every record is scored as live traffic is: the task is inferred
from the question ("Summarize ..."), so these are ``summary`` answers, which the script checks.
It chooses nothing; results go to ``results/summary_probes.json``.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
from _faith_probes import as_records, written_probes
from short_answers import print_rows, score_variants
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from train_support import RESULTS

from ragtrace.evaluators.faithfulness import Faithfulness

DATA = Path(__file__).resolve().parent / "data"
SETS = (DATA / "summary_probes_1.json", DATA / "summary_probes_2.json")
FAITHFUL = ("extractive", "abstractive", "brief")
WRONG = ("changed_number", "changed_relation", "added_claim", "opinion_added")


def scored_by_kind(evaluator: Faithfulness, path: Path) -> dict[str, float]:
    """Share of each kind of the set at ``path`` the evaluator fails, the set's BA and AUROC,
    and each wrong kind's AUROC against the faithful summaries."""
    probes = written_probes(path)
    scores = [s[0] for s in evaluator.evaluate_batch(as_records(probes))]
    calibrations = {s.details.get("calibration") for s in scores}
    if calibrations != {"summary"}:
        raise SystemExit(f"{path.name}: scored as {sorted(map(str, calibrations))}, not summary")
    kinds = np.asarray([p.id.split(":")[1] for p in probes])
    flagged = np.asarray([not s.passed for s in scores])
    risk = np.asarray([1.0 - s.value for s in scores])
    labels = np.asarray([p.label for p in probes])
    out: dict[str, float] = {}
    by_kind: dict[str, list[int]] = defaultdict(list)
    for index, kind in enumerate(kinds):
        by_kind[str(kind)].append(index)
    for kind, rows in by_kind.items():
        out[kind] = float(flagged[rows].mean())
    out["BA"] = float(balanced_accuracy_score(labels, flagged))
    out["AUROC"] = float(roc_auc_score(labels, risk))
    faithful = labels == 0
    for kind in WRONG:
        rows = kinds == kind
        if rows.any():
            mask = rows | faithful
            out[f"AUROC {kind}"] = float(roc_auc_score(labels[mask], risk[mask]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default="features,wordllama,crossencoder")
    args = parser.parse_args()
    results = score_variants(args.variants, SETS, scored_by_kind)
    print("-- share flagged")
    print_rows(results, [*FAITHFUL, *WRONG, "BA", "AUROC"], width=17)
    print("-- AUROC of each error against the faithful summaries")
    print_rows(results, [f"AUROC {k}" for k in WRONG], WRONG, width=17)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "summary_probes.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
