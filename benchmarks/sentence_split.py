"""Sentence splitting on cold records: pysbd as shipped against ragtrace's span search.

ragtrace's ``split_sentences`` runs pysbd with its sentence spans found by ``str.find``
(``ragtrace.evaluators.text``) instead of a regular expression compiled for each sentence. This
times both on the chunks and answers of ``throughput.py``'s cold workload, in alternating
rounds, after checking that they give the same sentences for every text.

Run::

    .venv/bin/python benchmarks/sentence_split.py               # 200 records, 3 rounds
    .venv/bin/python benchmarks/sentence_split.py --records 500 --rounds 5

It prints a table and writes ``benchmarks/results/sentence_split.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _throughput_records import records

HERE = Path(__file__).resolve().parent


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--records", type=int, default=200, help="cold records (default 200)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "sentence_split.json")
    args = parser.parse_args(argv)
    if args.records < 1 or args.rounds < 1:
        parser.error("--records and --rounds must be >= 1")
    return args


def measure(n_records: int, rounds: int) -> dict[str, Any]:
    import pysbd  # type: ignore[import-untyped]

    from ragtrace.evaluators.text import _segmenter

    cold = records("cold", n_records, seed=3)
    texts = [c["text"] for r in cold for c in r["contexts"]] + [r["response"] for r in cold]
    splitters = {
        "pysbd as shipped": pysbd.Segmenter(language="en", clean=False),
        "ragtrace (spans by str.find)": _segmenter(),
    }
    results = [[s.segment(t) for t in texts] for s in splitters.values()]
    same = results[0] == results[1]
    ms: dict[str, list[float]] = {name: [] for name in splitters}
    for _ in range(rounds):
        for name, splitter in splitters.items():
            start = time.process_time()
            for text in texts:
                splitter.segment(text)
            ms[name].append((time.process_time() - start) * 1000 / n_records)
    return {
        "records": n_records,
        "texts": len(texts),
        "sentences": sum(len(r) for r in results[0]),
        "same_sentences": same,
        "ms_cpu_per_record": {name: statistics.median(v) for name, v in ms.items()},
        "rounds": ms,
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    result = measure(args.records, args.rounds)
    print(
        f"{result['records']} cold records, {result['texts']} texts, {result['sentences']} "
        f"sentences; same sentences from both: {result['same_sentences']}\n"
    )
    print(f"{'splitter':<30} {'ms CPU a record (median)':>26}")
    for name, value in result["ms_cpu_per_record"].items():
        print(f"{name:<30} {value:>26.2f}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(f"\nwrote {args.json}")
    return 0 if result["same_sentences"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
