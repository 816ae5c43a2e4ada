"""Calibrate the local judge's claim verdicts: the ``p_yes`` cut of ``judge/verdicts.py``.

    cd benchmarks && ../.venv/bin/python _faith_judge_cut.py [--model qwen2.5-coder-0.5b]
        [--per-class 20]

On the tuning part of the locked split only (``_split``), a label-balanced, seeded sample of
claims (answer sentences; RAGTruth claims labelled by overlap with the annotated spans, HaluEval
claims by their answer's label) from RAGTruth QA, RAGTruth Summary and HaluEval QA is checked
by the local judge against the answer's passages, with the shipped ``claims_verdict`` prompt,
and the judge's ``p_yes`` is kept. The cut is the one with the best balanced accuracy over the
whole sample (``_binary_metrics.best_threshold``); the script prints it beside the balanced
accuracy at 0.5 and the AUROC of ``p_yes``, and writes benchmarks/results/judge_cut.json.
``CALIBRATED_YES_CUTS`` in ``ragtrace/evaluators/judge/verdicts.py`` is set by hand from it.
"""

from __future__ import annotations

import argparse
import json
import random
import time

import numpy as np
from _binary_metrics import best_threshold, summary
from _datasets import data_dir, halueval, ragtruth
from _split import fingerprint, split
from train_support import RESULTS, claims_with_labels

from ragtrace.evaluators.judge.claims import JudgeFaithfulness, numbered
from ragtrace.judges import JudgeClient, LocalJudgeServer

SEED = 7
SLICES = (("ragtruth", "QA"), ("ragtruth", "Summary"), ("halueval", "QA"))


def sample(per_class: int) -> list[tuple[str, str, str, int]]:
    """(slice, claim, numbered passages, 1 if supported) for ``per_class`` claims of each
    label in each slice, from the tuning part."""
    examples = ragtruth(data_dir()) + halueval(data_dir())
    tuning, _ = split(examples)
    rng = random.Random(SEED)
    out = []
    for dataset, task in SLICES:
        pool: dict[int, list[tuple[str, str, str, int]]] = {0: [], 1: []}
        for e in tuning:
            if e.dataset != dataset or e.task != task:
                continue
            claims, labels = claims_with_labels(e)
            for claim, label in zip(claims, labels, strict=True):
                if claim.strip():
                    supported = 1 - label
                    pool[supported].append(
                        (f"{dataset}/{task}", claim, numbered(e.passages), supported)
                    )
        for label in (0, 1):
            out.extend(rng.sample(pool[label], min(per_class, len(pool[label]))))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--per-class", type=int, default=20)
    args = parser.parse_args()
    rows = sample(args.per_class)
    server = LocalJudgeServer(args.model).start()
    try:
        client = JudgeClient(server.model_name, api_base=server.api_base, cache=None, timeout_s=300)
        judge = JudgeFaithfulness(judge=client, claims="sentences", yes_threshold=0.5)
        started = time.perf_counter()
        p_yes = []
        for i, (_, claim, source, _) in enumerate(rows, 1):
            verdict, _ = judge.verdict(claim, source)
            p_yes.append(np.nan if verdict.p_yes is None else verdict.p_yes)
            print(f"  {i}/{len(rows)} p_yes {p_yes[-1]:.3f}", flush=True)
        took = time.perf_counter() - started
    finally:
        server.stop()
    y = np.asarray([r[3] for r in rows])
    missing = int(np.isnan(np.asarray(p_yes)).sum())
    p = np.nan_to_num(np.asarray(p_yes), nan=0.5)  # no log-probabilities: counted at 0.5
    cut = best_threshold(y, p)
    result = {
        "model": args.model,
        "split": fingerprint(ragtruth(data_dir()) + halueval(data_dir())),
        "claims": len(rows),
        "missing_logprobs": missing,
        "seconds": round(took, 1),
        "cut": round(cut, 3),
        "at_0.5": summary(y, p, p >= 0.5),
        "at_cut": summary(y, p, p >= cut),
        "per_slice_at_cut": {
            s: summary(y[m], p[m], p[m] >= cut)
            for s in sorted({r[0] for r in rows})
            for m in [np.asarray([r[0] == s for r in rows])]
        },
    }
    print(json.dumps(result, indent=1))
    (RESULTS / "judge_cut.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
