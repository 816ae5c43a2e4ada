"""Claims below the sentence: does splitting at "and", "but", ";" and ", which" help the seeds'
claim ratio tell hallucinated answers from faithful ones?

    .venv/bin/python benchmarks/claim_split_accuracy.py [--locked] [--limit N] [--splitters ...]

The seeds define faithfulness as ``supported claims / claims`` (002, 003), with an LLM
extracting the claims; ``faithfulness(scoring="claims")`` computes it with the local support
detector. The claims are the answer's sentences (``splitter="sentences"``), its clauses
(``splitter="clauses"``: also at "and", "but", ";", ", which"), or its clauses further split at
an appositive and a last adjunct of place or time (``splitter="claims"``): the rules of
``ragtrace.evaluators._faithfulness.claims``, written before this was run.

For each splitter, on RAGTruth (by task) and HaluEval QA, DATA.md's protocol: the verdict
"claim ratio below 0.5" (the seeds' threshold) and, labelled tuned, a threshold chosen by
cross-validation grouped by source document; AUROC of ``1 - ratio``; the mean number of claims
per answer. The tuning part of the locked split (``_labelled_data.py``) by default, the locked part
with ``--locked`` (read once per shipped change, never to choose anything).

Writes benchmarks/results/claim_split_accuracy[_locked].json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from _accuracy_grounding import SLICES
from _labelled_data import (
    GroundingExample,
    data_dir,
    fingerprint,
    halueval,
    ragtruth,
    split,
    summary,
    tuned_flags,
)

SPLITTERS = ("sentences", "clauses", "claims")
BATCH = 24
RESULTS = Path(__file__).resolve().parent / "results"


def claim_ratios(examples: list[GroundingExample], splitter: str) -> tuple[list[float], list[int]]:
    """The seeds' claim ratio and the number of claims of each example's answer."""
    from ragtrace._model import Chunk, RagRecord
    from ragtrace.evaluators._registry import create

    evaluator = create("faithfulness", scoring="claims", splitter=splitter)
    ratios: list[float] = []
    counts: list[int] = []
    for start in range(0, len(examples), BATCH):
        records = [
            RagRecord(
                trace_id="0" * 32,
                span_id="0" * 16,
                query=e.query,
                chunks=tuple(Chunk(text=p, id=str(i)) for i, p in enumerate(e.passages)),
                response=e.response,
            )
            for e in examples[start : start + BATCH]
        ]
        for (score,) in evaluator.evaluate_batch(records):
            ratios.append(score.details["claim_ratio"])
            counts.append(len(score.details["claims"]))
    return ratios, counts


def run(
    folder: Path, locked: bool, limit: int | None, splitters: tuple[str, ...] = SPLITTERS
) -> dict[str, Any]:
    everything = ragtruth(folder) + halueval(folder)
    tuning, held_out = split(everything)
    examples = held_out if locked else tuning
    if limit:
        examples = examples[:limit]
    result: dict[str, Any] = {
        "part": "locked" if locked else "tuning",
        "split": fingerprint(everything),
        "slices": {},
    }
    scored = {}
    for splitter in splitters:
        started = time.perf_counter()
        scored[splitter] = claim_ratios(examples, splitter)
        print(f"  {splitter}: {time.perf_counter() - started:.0f} s", flush=True)
    for dataset, task in SLICES:
        idx = [
            i
            for i, e in enumerate(examples)
            if e.dataset == dataset and (task == "all" or e.task == task)
        ]
        if not idx:
            continue
        labels = [examples[i].label for i in idx]
        groups = [examples[i].group for i in idx]
        rows = {}
        for splitter, (ratios, counts) in scored.items():
            risk = [1.0 - ratios[i] for i in idx]
            rows[splitter] = {
                "fixed": summary(labels, risk, [ratios[i] < 0.5 for i in idx]),
                "tuned": summary(labels, risk, tuned_flags(labels, risk, groups)),
                "claims_per_answer": round(sum(counts[i] for i in idx) / len(idx), 2),
            }
        result["slices"][f"{dataset}/{task}"] = rows
    return result


def table(result: dict[str, Any]) -> str:
    head = (
        f"{'slice':<18}{'splitter':<11}{'claims':>7}{'BA':>7}{'F1':>7}{'AUROC':>7}{'BA tuned':>10}"
    )
    lines = [f"part: {result['part']} of the locked split {result['split']}", head]
    lines.append("-" * len(head))
    for key, rows in result["slices"].items():
        metric = "accuracy" if key.startswith("halueval") else "balanced_accuracy"
        for splitter, r in rows.items():
            fixed, tuned = r["fixed"], r["tuned"]
            lines.append(
                f"{key:<18}{splitter:<11}{r['claims_per_answer']:>7.2f}{fixed[metric]:>7.3f}"
                f"{fixed['f1']:>7.3f}{fixed['auroc'] or 0:>7.3f}{tuned[metric]:>10.3f}"
            )
    lines.append("(HaluEval: accuracy in the BA columns, as DATA.md reports it)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", help="default: ../shared/data beside the repository")
    parser.add_argument("--locked", action="store_true", help="score the locked part (once)")
    parser.add_argument("--limit", type=int, help="first N examples only (a smoke run)")
    parser.add_argument(
        "--splitters", default=",".join(SPLITTERS), help=f"subset of {','.join(SPLITTERS)}"
    )
    args = parser.parse_args()
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(var, "1")
    chosen = tuple(args.splitters.split(","))
    if set(chosen) - set(SPLITTERS):
        parser.error(f"unknown splitter; choose from {SPLITTERS}")
    result = run(data_dir(args.data_dir), args.locked, args.limit, chosen)
    print(table(result))
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = ("_locked" if args.locked else "") + (
        "" if chosen == SPLITTERS else f"_{args.splitters}"
    )
    path = RESULTS / f"claim_split_accuracy{suffix}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
