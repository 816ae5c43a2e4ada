"""Compare two generator settings of the demo app offline: write one input file, score, report.

The demo's LangChain app (``ragtrace.demo.systems``) answers every demo question twice, once
per generator setting (``aurora-careful`` and ``aurora-sloppy``), through ragtrace's LangChain
capture, so each record carries the retrieved articles as contexts. The records go to one JSON
Lines file with ``model`` set to the setting, which ``ragtrace eval`` reads as two systems::

    .venv/bin/python examples/compare_generators.py --output compare.jsonl
    ragtrace eval --input compare.jsonl -e looping,groundedness,tokens_presence \\
        --option 'tokens_presence.expression="NOT \\"REGEXP:[\\\\w.+-]+@[\\\\w-]+\\\\.\\\\w+\\""' \\
        --option 'tokens_presence.targets=["answer"]' \\
        --output scores.jsonl --summary-json summary.json
    ragtrace report scores.jsonl --html report.html

No server, no API key, no network: the model is the demo's seeded fake. An answer the model
fails to give (the demo's simulated upstream timeout) is written with ``response`` null and
``error`` set, so evaluators skip it and the report counts it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragtrace.demo.systems import QUESTIONS, SETTINGS, chain_for
from ragtrace.testing import ask


def records_for(setting: str, seed: int = 0) -> list[dict[str, Any]]:
    """One input record per demo question, answered with generator ``setting``."""
    chain = chain_for(setting, seed=seed)
    rows = []
    for number, question in enumerate(QUESTIONS):
        row: dict[str, Any] = {"id": f"q{number:02d}", "query": question, "model": setting}
        try:
            record = ask(chain, question, name=setting)
        except Exception as exc:  # the demo model's simulated upstream failure
            row.update(response=None, error=f"{type(exc).__name__}: {exc}")
        else:
            row["response"] = record.response
            row["contexts"] = [
                {"text": c.text, "id": c.id, "score": c.score} for c in record.chunks
            ]
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", "-o", default="compare.jsonl", type=Path)
    parser.add_argument("--seed", type=int, default=0, help="seeds the demo model (default 0)")
    parser.add_argument(
        "--setting",
        action="append",
        choices=sorted(SETTINGS),
        help="generator settings to compare (default: all)",
    )
    args = parser.parse_args(argv)
    settings = args.setting or list(SETTINGS)
    with args.output.open("w", encoding="utf-8") as out:
        for setting in settings:
            rows = records_for(setting, args.seed)
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
            failed = sum(1 for r in rows if r.get("error"))
            print(f"{setting}: {len(rows)} answers ({failed} failed)", file=sys.stderr)
    print(f"wrote {args.output}; next: ragtrace eval --input {args.output} ...", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
