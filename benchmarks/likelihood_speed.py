"""Seconds per record of the likelihood evaluators on the CPU, 1 thread, default models.

    .venv/bin/python benchmarks/likelihood_speed.py [--records 6]

Records: RAGTruth QA rows from ../shared/data (question, answer; the first passage as the
reference, so the reference-based evaluators read a realistic pair), answers cut to 600
characters. Each evaluator is built with its defaults, warmed on one record (model load timed
apart), then timed over ``--records`` records one at a time. Prints a table and writes
benchmarks/results/likelihood_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_var, "1")
os.environ["RAGTRACE_MODEL_THREADS"] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _labelled_data import data_dir, ragtruth

from ragtrace.evaluators import create
from ragtrace.model import RagRecord

NAMES = (
    "perplexity",
    "gptscore_qa",
    "gptscore_translation",
    "gptscore_summarization_ref",
    "gptscore_summarization",
)
RESULTS = Path(__file__).resolve().parent / "results" / "likelihood_speed.json"


def records(count: int) -> list[RagRecord]:
    rows = [e for e in ragtruth(data_dir()) if e.task == "QA" and e.query][: count + 1]
    return [
        RagRecord(
            trace_id=f"{i:032x}",
            span_id="0" * 16,
            query=e.query,
            response=e.response[:600],
            reference=e.passages[0][:600],
        )
        for i, e in enumerate(rows)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=6)
    args = parser.parse_args()
    data = records(args.records)
    rows = []
    for name in NAMES:
        evaluator = create(name)
        started = time.perf_counter()
        evaluator.evaluate(data[0])  # loads the model
        first = time.perf_counter() - started
        times, errors = [], 0
        for record in data[1:]:
            started = time.perf_counter()
            scores = evaluator.evaluate(record)
            times.append(time.perf_counter() - started)
            errors += sum(s.error is not None for s in scores)
        rows.append(
            {
                "evaluator": name,
                "model": str(getattr(evaluator, "model", "")),
                "scores": len(scores),
                "first_call_s": round(first, 2),
                "mean_s": round(statistics.mean(times), 3),
                "median_s": round(statistics.median(times), 3),
                "max_s": round(max(times), 3),
                "errors": errors,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    print(f"\n{'evaluator':<28} {'model':<20} {'scores':>6} {'load+1st s':>10} {'s/record':>9}")
    for row in rows:
        print(
            f"{row['evaluator']:<28} {row['model']:<20} {row['scores']:>6} "
            f"{row['first_call_s']:>10.1f} {row['mean_s']:>9.2f}"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps({"records": len(data) - 1, "threads": 1, "rows": rows}, indent=1),
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
