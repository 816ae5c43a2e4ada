"""Do GPTScore and perplexity measure what their names say? Fluent vs shuffled vs off-topic vs
wrong answers, for every GPTScore aspect and for perplexity, under the packaged models.

    .venv/bin/python benchmarks/gptscore_probes.py [--questions 12] [--words 60] [--threads 1]

Answers to the same RAGTruth QA questions (tuning part of the locked split, ``_labelled_data.py``;
nothing is tuned here), four ways:

- ``fluent``: a response the annotators found faithful (label 0);
- ``shuffled``: the same words in a random order (seeded): word salad;
- ``off_topic``: the faithful response to another question of the set;
- ``wrong``: a response to the same question with an annotated hallucination (label 1);

each cut to its first ``--words`` words (at a word boundary). The reference-based evaluators
(``gptscore_summarization_ref``, ``gptscore_translation``) get another faithful response to the
same question as the reference. For each score (every aspect; ``gptscore_qa`` under each of its
``target`` readings, all from one forward pass) the table gives the mean value per variant and,
per bad variant, the share of questions where the fluent answer scores better (lower: every
score here is lower-is-better): 1.0 means the score always prefers the fluent answer, 0.5 a coin.
A score "orders them right" when the fluent answer wins against each bad variant on more than
half the questions.

Writes benchmarks/results/gptscore_probes.json (BENCHMARKS.md records the figures).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _labelled_data import GroundingExample, data_dir, ragtruth, split

VARIANTS = ("fluent", "shuffled", "off_topic", "wrong")
BAD = VARIANTS[1:]
EVALUATORS = (
    "perplexity",
    "gptscore_qa",
    "gptscore_summarization",
    "gptscore_summarization_ref",
    "gptscore_translation",
)
QA_TARGETS = ("answer_yes", "yes", "yes_vs_no")
RESULTS = Path(__file__).resolve().parent / "results" / "gptscore_probes.json"


def first_words(text: str, count: int) -> str:
    words = text.split()
    return " ".join(words[:count])


def questions(folder: Path, count: int, words: int) -> list[dict[str, str]]:
    """Questions with two faithful responses and a hallucinated one, in a fixed order."""
    tuning, _ = split(ragtruth(folder))
    by_group: dict[str, list[GroundingExample]] = defaultdict(list)
    for example in tuning:
        if example.task == "QA" and example.query:
            by_group[example.group].append(example)
    chosen = []
    for group in sorted(by_group, key=lambda g: hashlib.sha256(g.encode()).hexdigest()):
        rows = by_group[group]
        good = [r for r in rows if r.label == 0 and len(r.response.split()) >= 20]
        bad = [r for r in rows if r.label == 1 and len(r.response.split()) >= 20]
        if len(good) >= 2 and bad:
            chosen.append(
                {
                    "group": group,
                    "query": str(good[0].query),
                    "fluent": first_words(good[0].response, words),
                    "reference": first_words(good[1].response, words),
                    "wrong": first_words(bad[0].response, words),
                }
            )
        if len(chosen) == count:
            break
    for i, item in enumerate(chosen):
        shuffled = item["fluent"].split()
        random.Random(f"shuffle:{item['group']}").shuffle(shuffled)
        item["shuffled"] = " ".join(shuffled)
        item["off_topic"] = chosen[(i + 1) % len(chosen)]["fluent"]
    return chosen


def records(items: list[dict[str, str]], variant: str) -> list[Any]:
    from ragtrace._model import RagRecord

    return [
        RagRecord(
            trace_id=f"{i:032x}",
            span_id="0" * 16,
            query=item["query"],
            response=item[variant],
            reference=item["reference"],
        )
        for i, item in enumerate(items)
    ]


def score_all(
    items: list[dict[str, str]], names: tuple[str, ...], threads: int | None
) -> tuple[dict[str, dict[str, list[float]]], dict[str, float]]:
    """score name -> variant -> values (one per question), and seconds per evaluator."""
    from ragtrace.evaluators import create

    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    seconds = {}
    for name in names:
        evaluator = create(name, threads=threads)
        started = time.perf_counter()
        for variant in VARIANTS:
            for scores in evaluator.evaluate_batch(records(items, variant)):
                for score in scores:
                    if score.value is None:
                        raise SystemExit(f"{score.name}: {score.error}")
                    if name == "gptscore_qa":
                        forward = score.details["directions"]["forward"]
                        for target in QA_TARGETS:
                            values[f"{score.name} [{target}]"][variant].append(forward[target])
                    else:
                        values[score.name][variant].append(score.value)
            print(f"  {name} {variant}: {time.perf_counter() - started:.0f} s", flush=True)
        seconds[name] = round(time.perf_counter() - started, 1)
    return values, seconds


def summarise(values: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    found = {}
    for score, by_variant in values.items():
        fluent = by_variant["fluent"]
        wins = {
            bad: round(
                sum(f < b for f, b in zip(fluent, by_variant[bad], strict=True)) / len(fluent), 3
            )
            for bad in BAD
        }
        found[score] = {
            "mean": {v: round(math.fsum(xs) / len(xs), 3) for v, xs in by_variant.items()},
            "fluent_wins": wins,
            "orders_right": all(w > 0.5 for w in wins.values()),
        }
    return found


def table(summary: dict[str, Any]) -> str:
    head = (
        f"{'score':<48}"
        + "".join(f"{v:>10}" for v in VARIANTS)
        + "".join(f"{'beats ' + b[:8]:>16}" for b in BAD)
        + f"{'right':>7}"
    )
    lines = [head, "-" * len(head)]
    for score, row in summary.items():
        lines.append(
            f"{score:<48}"
            + "".join(f"{row['mean'][v]:>10.3f}" for v in VARIANTS)
            + "".join(f"{row['fluent_wins'][b]:>16.2f}" for b in BAD)
            + f"{'yes' if row['orders_right'] else 'NO':>7}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", help="default: ../shared/data beside the repository")
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--words", type=int, default=60, help="each answer's first N words")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default 1)")
    parser.add_argument("--evaluators", default=",".join(EVALUATORS))
    args = parser.parse_args()
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(var, "1")
    names = tuple(args.evaluators.split(","))
    if set(names) - set(EVALUATORS):
        parser.error(f"--evaluators: choose from {','.join(EVALUATORS)}")
    items = questions(data_dir(args.data_dir), args.questions, args.words)
    print(f"{len(items)} questions, answers cut to {args.words} words", flush=True)
    values, seconds = score_all(items, names, args.threads)
    summary = summarise(values)
    print(table(summary))
    print("seconds per evaluator (4 variants):", seconds)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "questions": len(items),
        "words": args.words,
        "groups": [i["group"] for i in items],
        "seconds": seconds,
        "scores": summary,
        "values": {k: dict(v) for k, v in values.items()},
    }
    RESULTS.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    sys.exit(main())
