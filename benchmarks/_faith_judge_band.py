"""Does the local judge help the faithfulness verdict where the detector is unsure?

    cd benchmarks && ../.venv/bin/python _faith_judge_band.py [--low 0.35] [--high 0.65]
        [--rows 40] [--model qwen2.5-coder-0.5b]

On the tuning part of the locked split only (``_split``; the locked part is never read here).
Every RAGTruth and HaluEval answer of that part gets its out-of-fold hallucination probability
(5-fold CV grouped by document, per task: the figure ``accuracy.py`` reports for the tuning
part, so the detector is not scored on rows it was fitted on). The answers whose probability
lies in ``[low, high]`` are the uncertain band; a seeded sample of up to ``--rows`` of them is
scored by ``judge_faithfulness`` with the local llama.cpp judge (claims extracted by the judge,
verdicts from P(yes), as shipped). On those rows the script compares, by balanced accuracy and
AUROC: the detector alone (flag at p above its pair's verdict threshold), the judge alone (flag
when it fails), and the two averaged (flag when (p + 1 - judge value) / 2 > 0.5). It prints
the table and writes benchmarks/results/judge_band.json. A sample of 40 takes about 15 minutes
on one core.
"""

from __future__ import annotations

import argparse
import json
import random
import time

import numpy as np
import train_support
from _accuracy_grounding import _record
from _binary_metrics import summary
from _datasets import GroundingExample, data_dir, halueval, ragtruth
from _faith_fit import cross_validate
from _split import fingerprint, split
from train_support import RESULTS

from ragtrace.evaluators.judge.claims import JudgeFaithfulness
from ragtrace.judges import JudgeClient, LocalJudgeServer

SEED = 11


def band_rows(
    low: float, high: float, rows: int
) -> tuple[list[GroundingExample], list[tuple[float, float]], dict]:
    """A seeded sample of tuning-part answers whose out-of-fold probability is in the band,
    with (that probability, its verdict threshold)."""
    everything = ragtruth(data_dir()) + halueval(data_dir())
    tuning, _ = split(everything)
    data = train_support.load(everything)
    position = {id(e): i for i, e in enumerate(everything)}
    at = np.asarray([position[id(e)] for e in tuning])
    scored = cross_validate(data, at, train_support.SHIPPED_RESPONSE, by_task=train_support.BY_TASK)
    oof, cuts = scored.values, scored.thresholds
    band = [
        (e, float(oof[position[id(e)]]), float(cuts[position[id(e)]]))
        for e in tuning
        if not np.isnan(oof[position[id(e)]]) and low <= oof[position[id(e)]] <= high
    ]
    info = {"tuning_answers": len(tuning), "in_band": len(band)}
    chosen = random.Random(SEED).sample(band, min(rows, len(band)))
    return (
        [e for e, _, _ in chosen],
        [(p, cut) for _, p, cut in chosen],
        info | {"split": fingerprint(everything)},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--low", type=float, default=0.35)
    parser.add_argument("--high", type=float, default=0.65)
    parser.add_argument("--rows", type=int, default=40)
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    args = parser.parse_args()
    examples, scored, info = band_rows(args.low, args.high, args.rows)
    detector = [p for p, _ in scored]
    flagged = [p > cut for p, cut in scored]
    print(f"{info['in_band']} of {info['tuning_answers']} tuning answers in the band", flush=True)
    server = LocalJudgeServer(args.model).start()
    judged: list[float] = []
    failed: list[bool] = []
    started = time.perf_counter()
    try:
        client = JudgeClient(server.model_name, api_base=server.api_base, cache=None, timeout_s=300)
        judge = JudgeFaithfulness(judge=client)
        for i, example in enumerate(examples, 1):
            score = judge.evaluate(_record(example))[0]
            value = 0.5 if score.value is None else float(score.value)  # an error: undecided
            judged.append(value)
            failed.append(score.passed is False)
            print(f"  {i}/{len(examples)} judge {value:.2f} detector {detector[i - 1]:.2f}")
    finally:
        server.stop()
    y = [e.label for e in examples]
    mixed = [(p + 1 - j) / 2 for p, j in zip(detector, judged, strict=True)]
    result = {
        **info,
        "band": [args.low, args.high],
        "rows": len(examples),
        "hallucinated": sum(y),
        "seconds": round(time.perf_counter() - started, 1),
        "detector (p > its threshold)": summary(y, detector, flagged),
        "judge (fails)": summary(y, [1 - j for j in judged], failed),
        "mean of both (> 0.5)": summary(y, mixed, [m > 0.5 for m in mixed]),
    }
    print(json.dumps(result, indent=1))
    (RESULTS / "judge_band.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
