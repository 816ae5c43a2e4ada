"""Which of RAGTruth's kinds of hallucination the shipped detector catches (tuning part only).

    cd benchmarks && ../.venv/bin/python _faith_miss_types.py [--data-dir DIR] [--seed 52000]

RAGTruth's annotators gave every hallucinated span a type: a *conflict* with the source (a
changed fact) or *baseless info* (something the source does not say), each *evident* or
*subtle*. This scores the tuning part out of fold with the shipped recipe (the verdict users
see, fitted without each answer's document; fold seed ``--seed``, which no choice read) and
gives, per task, the share of faithful answers flagged and the share of hallucinated answers
caught by the types of their spans. It chooses nothing, and the locked part is not read.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import numpy as np
from _datasets import RAGTRUTH, data_dir
from _faith_compare import load_split
from _faith_fit import SHIPPED_PRIOR_WEIGHTS, cross_validate
from train_support import BY_TASK, SHIPPED_RESPONSE, SHIPPED_RESPONSE_RECIPES

TASKS = ("QA", "Summary", "Data2txt")


def span_types(folder: str | None) -> dict[str, set[str]]:
    """Each RAGTruth answer's span types, shortened ("Evident Baseless Info" -> "evident info")."""
    out = {}
    with (data_dir(folder) / RAGTRUTH).open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                out[str(row["id"])] = {
                    f"{s['label_type'].split()[0]} {s['label_type'].split()[-1]}".lower()
                    for s in row["hallucination_spans"]
                }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--seed", type=int, default=52000)
    args = parser.parse_args()
    data, examples, tuning, _ = load_split(args.data_dir)
    scored = cross_validate(
        data,
        tuning,
        SHIPPED_RESPONSE,
        by_task=BY_TASK,
        prior_weights=SHIPPED_PRIOR_WEIGHTS,
        response_recipes=SHIPPED_RESPONSE_RECIPES,
        seed=args.seed,
    )
    flagged = scored.values > scored.thresholds
    types = span_types(args.data_dir)
    for task in TASKS:
        rows = [i for i in tuning.tolist() if examples[i].dataset == "ragtruth"]
        rows = [i for i in rows if examples[i].task == task]
        faithful = [flagged[i] for i in rows if not examples[i].label]
        caught: dict[str, list[bool]] = defaultdict(list)
        for i in rows:
            if examples[i].label:
                kinds = types[examples[i].id]
                for kind in kinds:
                    caught[f"any {kind}"].append(flagged[i])
                caught[" + ".join(sorted(kinds)) + " only"].append(flagged[i])
        print(f"-- {task}: faithful answers flagged {np.mean(faithful):.2f} (n={len(faithful)})")
        for kind, hits in sorted(caught.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            print(f"  {kind:<52} n={len(hits):>3}  caught {np.mean(hits):.2f}")


if __name__ == "__main__":
    main()
