"""Evaluator accuracy on ../shared/data, with DATA.md's protocol and the published anchors.

    .venv/bin/python benchmarks/accuracy.py [--data-dir ../shared/data] [--only grounding,...]
        [--locked] [--detector crossencoder]

Sections (each a module beside this file with ``run(data_dir) -> dict`` and ``table(dict)``):

- ``grounding``: RAGTruth by task and HaluEval QA: the faithfulness verdict, groundedness and
  the bag-of-words baseline, fixed and tuned thresholds, on the tuning part of the locked split
  (``_split.py``), or with ``--locked`` on the locked part (once per shipped change);
  ``--detector`` picks the faithfulness evaluator's detector.
- ``toxicity``: AUROC and F1 per source, beside a word-list baseline.
- ``pii``: entity-level precision/recall/F1 per type, exact and overlap matches.
- ``ares``: AUROC of the relevance and faithfulness scores (plumbing and direction only).

Prints one table per section and writes everything to benchmarks/results/accuracy.json.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import time
from pathlib import Path

from _datasets import data_dir

SECTIONS = {
    "grounding": "_accuracy_grounding",
    "toxicity": "_accuracy_toxicity",
    "pii": "_accuracy_pii",
    "ares": "_accuracy_ares",
}
RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description="Evaluator accuracy on the labelled dev sets.")
    parser.add_argument("--data-dir", help="default: ../shared/data beside the repository")
    parser.add_argument("--only", help=f"comma-separated subset of {','.join(SECTIONS)}")
    parser.add_argument("--json", type=Path, default=RESULTS / "accuracy.json")
    parser.add_argument(
        "--locked", action="store_true", help="grounding: score the locked part of the split"
    )
    parser.add_argument(
        "--detector",
        choices=("features", "crossencoder"),
        default="features",
        help="grounding: the faithfulness evaluator's detector (default: features)",
    )
    args = parser.parse_args()
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(var, "1")
    folder = data_dir(args.data_dir)
    chosen = args.only.split(",") if args.only else list(SECTIONS)
    unknown = set(chosen) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s) {sorted(unknown)}; choose from {list(SECTIONS)}")
    results = {}
    for name in chosen:
        module = importlib.import_module(SECTIONS[name])
        started = time.perf_counter()
        extra: dict[str, object] = {}
        key = name
        if name == "grounding":
            extra = {"locked": args.locked, "detector": args.detector}
            key += "_locked" if args.locked else ""
            key += "" if args.detector == "features" else f"_{args.detector}"
        results[key] = module.run(folder, **extra)
        print(f"\n== {name} ({time.perf_counter() - started:.0f} s) ==")
        print(module.table(results[key]))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(args.json.read_text()) if args.json.exists() else {}
    args.json.write_text(json.dumps(previous | results, indent=1) + "\n")
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
