"""Choose and check the default threshold of the ``perplexity`` evaluator.

The catalogue's threshold (0.5) cannot be met by a perplexity (always >= 1), so the default is
measured: real answers from ../shared/data (RAGTruth responses and HaluEval answers, one per
source document or question pair) against the same words shuffled (word salad). The threshold
is chosen on the tuning part of the locked split (``_split.split``): cross-validated balanced
accuracy grouped by document, then the best cut on the whole tuning part, rounded up to a round
number. The locked part is scored once with that threshold and reported as such. A bag-of-words
baseline scores 0.5 here by construction (shuffling keeps the words).

    .venv/bin/python benchmarks/perplexity_threshold.py [--per-part 120] [--words 150]

Prints a table and writes benchmarks/results/perplexity_threshold.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _binary_metrics import at_threshold, best_threshold, summary, tuned_flags  # noqa: E402
from _datasets import data_dir, halueval, ragtruth  # noqa: E402
from _split import fingerprint, split  # noqa: E402

from ragtrace.evaluators import create  # noqa: E402
from ragtrace.model import RagRecord  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "perplexity_threshold.json"
ROUND_STEPS = (10, 20, 25, 50, 100, 150, 200, 250, 300, 400, 500, 750, 1000)


def pick(examples: list, per_part: int) -> list:
    """One example per group, the ``per_part`` first by a hash of the group (deterministic)."""
    first: dict[str, object] = {}
    for example in examples:
        first.setdefault(example.group, example)
    ranked = sorted(first.values(), key=lambda e: hashlib.sha256(e.group.encode()).hexdigest())
    return ranked[:per_part]


def pairs(examples: list, words: int) -> tuple[list[str], list[int], list[str]]:
    """(texts, labels, groups): each answer (0) and its words shuffled (1)."""
    texts, labels, groups = [], [], []
    for example in examples:
        tokens = example.response.split()[:words]
        if len(tokens) < 3:
            continue
        shuffled = tokens[:]
        random.Random(example.id).shuffle(shuffled)
        for text, label in ((" ".join(tokens), 0), (" ".join(shuffled), 1)):
            texts.append(text)
            labels.append(label)
            groups.append(example.group)
    return texts, labels, groups


def perplexities(texts: list[str]) -> tuple[list[float], float]:
    evaluator = create("perplexity")
    records = [
        RagRecord(trace_id=f"{i:032x}", span_id="0" * 16, query=None, response=t)
        for i, t in enumerate(texts)
    ]
    started = time.perf_counter()
    values = []
    for start in range(0, len(records), evaluator.batch_size):
        for scores in evaluator.evaluate_batch(records[start : start + evaluator.batch_size]):
            values.append(scores[0].value if scores[0].value is not None else float("inf"))
    return values, (time.perf_counter() - started) / max(1, len(records))


def round_up(value: float) -> float:
    return float(next((step for step in ROUND_STEPS if step >= value), value))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-part", type=int, default=120, help="answers per part")
    parser.add_argument("--words", type=int, default=150, help="words kept of each answer")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    folder = data_dir(args.data_dir)
    examples = ragtruth(folder) + halueval(folder)
    tuning, locked = split(examples)
    report: dict[str, object] = {"split": fingerprint(examples), "words": args.words}

    texts, labels, groups = pairs(pick(tuning, args.per_part), args.words)
    values, seconds = perplexities(texts)
    y, s = np.asarray(labels), np.asarray(values)
    cv = summary(labels, values, tuned_flags(labels, values, groups))
    threshold = round_up(best_threshold(y, s))
    fluent = [v for v, label in zip(values, labels, strict=True) if label == 0]
    report["tuning"] = {
        "pairs": len(texts) // 2,
        "seconds_per_answer": round(seconds, 3),
        "cross_validated": cv,
        "best_cut": best_threshold(y, s),
        "threshold": threshold,
        "fluent_median": round(statistics.median(fluent), 2),
        "fluent_p95": round(float(np.percentile(fluent, 95)), 2),
        "fluent_max": round(max(fluent), 2),
        "shuffled_median": round(
            statistics.median(v for v, lab in zip(values, labels, strict=True) if lab), 2
        ),
        "at_threshold": at_threshold(labels, values, threshold),
    }

    texts, labels, _ = pairs(pick(locked, args.per_part // 2), args.words)
    values, _ = perplexities(texts)
    report["locked"] = {
        "pairs": len(texts) // 2,
        "at_threshold": at_threshold(labels, values, threshold),
    }

    print(f"{'part':<28} {'pairs':>5} {'bal.acc':>8} {'AUROC':>6} {'fluent pass':>11}")
    for part, found in (
        ("tuning, grouped CV", report["tuning"]["cross_validated"]),  # type: ignore[index]
        (f"tuning, threshold {threshold:g}", report["tuning"]["at_threshold"]),  # type: ignore[index]
        (f"LOCKED, threshold {threshold:g}", report["locked"]["at_threshold"]),  # type: ignore[index]
    ):
        specificity = 2 * found["balanced_accuracy"] - found["recall"]
        print(
            f"{part:<28} {found['n'] // 2:>5} {found['balanced_accuracy']:>8.3f} "
            f"{found['auroc']:>6.3f} {specificity:>11.3f}"
        )
    print(json.dumps(report["tuning"], indent=1))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
