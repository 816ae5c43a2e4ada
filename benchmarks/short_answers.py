"""The shipped faithfulness evaluator on short answers written by hand, per kind of answer.

    cd benchmarks && ../.venv/bin/python short_answers.py [--variants features,crossencoder]

The labelled sets teach the detector HaluEval's answers (a few words) and RAGTruth's
(paragraphs). An assistant's typical reply is neither: one or two sentences. The four
helper-written sets of ``_faith_probes`` (``data/short_answer_probes.json`` to ``_4.json``,
1,035 answers of at most 30 words in 60 domains; their writers saw neither the detector nor its
data; sets 3 and 4 were written after the detector was fitted) give each answer a kind: copied
from a passage, paraphrased, one to six words, a faithful yes/no (sets 2-4), one fact changed,
one claim added. For each variant of the evaluator
(``features``: the default; ``wordllama``: the static profile; ``crossencoder``: the opt-in
detector) this prints the share of each kind flagged, the balanced accuracy over
each set and the AUROC of its value, and writes ``results/short_answers.json``. Every record is
scored as live traffic is (task inferred, so these are ``short_qa`` answers).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from _faith_probes import (
    WRITTEN_KINDS,
    WRITTEN_SETS,
    as_records,
    written_probes,
)
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from train_support import RESULTS

from ragtrace.evaluators.faithfulness import Faithfulness

SETS = WRITTEN_SETS
VARIANTS = {
    "features": {},
    "wordllama": {"embedding_model": "wordllama"},
    "crossencoder": {"detector": "crossencoder"},
}


def flagged_by_kind(evaluator: Faithfulness, path: Path) -> dict[str, float]:
    """Share of each kind of the set at ``path`` the evaluator fails, its BA, and the AUROC of
    its value (how well it ranks the set's answers, whatever the threshold)."""
    probes = written_probes(path)
    records = as_records(probes)
    scored = [scores[0] for scores in evaluator.evaluate_batch(records)]
    flagged = [not score.passed for score in scored]
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for probe, flag in zip(probes, flagged, strict=True):
        by_kind[probe.id.split(":")[1]].append(flag)
    out = {kind: sum(v) / len(v) for kind, v in by_kind.items()}
    labels = [p.label for p in probes]
    out["BA"] = balanced_accuracy_score(labels, flagged)
    out["AUROC"] = roc_auc_score(labels, [1.0 - score.value for score in scored])
    return out


def score_variants(
    names: str, sets: Sequence[Path], score: Callable[[Faithfulness, Path], dict[str, float]]
) -> dict[str, dict[str, dict[str, float]]]:
    """``score(evaluator, set)`` for each variant named in ``names`` (comma-separated keys of
    ``VARIANTS``) and each set, by variant and set name; each variant's time is printed."""
    results: dict[str, dict[str, dict[str, float]]] = {}
    for name in names.split(","):
        if name not in VARIANTS:
            raise SystemExit(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
        evaluator = Faithfulness(**VARIANTS[name], threads=1)
        started = time.perf_counter()
        results[name] = {p.name: score(evaluator, p) for p in sets}
        print(f"{name}: {time.perf_counter() - started:.0f} s")
    return results


def print_rows(
    results: dict[str, dict[str, dict[str, float]]],
    columns: Sequence[str],
    heads: Sequence[str] | None = None,
    width: int = 13,
) -> None:
    """One line per variant and set, one column per figure (``heads`` names them)."""
    print(
        f"{'variant':<14}{'set':<28}"
        + "".join(f"{h[: width - 1]:>{width}}" for h in heads or columns)
    )
    for name, sets in results.items():
        for set_name, row in sets.items():
            cells = "".join(
                f"{row[c]:>{width}.2f}" if c in row else f"{'-':>{width}}" for c in columns
            )
            print(f"{name:<14}{set_name:<28}{cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default="features,wordllama,crossencoder")
    args = parser.parse_args()
    results = score_variants(args.variants, SETS, flagged_by_kind)
    print_rows(results, [*WRITTEN_KINDS, "BA", "AUROC"])
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "short_answers.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
