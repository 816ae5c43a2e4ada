"""Which of RAGTruth's kinds of hallucination the shipped detector catches (tuning part only).

    cd benchmarks && ../.venv/bin/python _faith_miss_types.py [--data-dir DIR] [--seed 52000]
        [--crossencoder-logits FILE] [--reading raw]

RAGTruth's annotators gave every hallucinated span a type: a *conflict* with the source (a
changed fact) or *baseless info* (something the source does not say), each *evident* or
*subtle*. This scores the tuning part out of fold with the shipped recipe (the verdict users
see, fitted without each answer's document; fold seed ``--seed``, which no choice read) and
gives, per task, the share of faithful answers flagged and the share of hallucinated answers
caught by the types of their spans, and how well the value ranks each type's answers against
the faithful ones (AUROC). It chooses nothing, and the locked part is not read. With
``--crossencoder-logits`` (the tuning claims' out-of-fold logits of ``crossencoder_locked.py
--train-bundle DIR --folds-only``, after ``--bundle DIR``) the same recipe is scored again with
the cross-encoder's logit as one more claim feature.

Then two cues a changed fact might leave, at the level of claims (sentences of at least three
content words), each against the claim's aligned passage sentence (the one sharing most content
words): *order inversion*, the share of pairs of shared content words whose order differs (a
role swapped: "A beat B" for "B beat A"), and *negation mismatch*, a negation in one of the two
only. Each is compared between the claims overlapping a conflict span, those overlapping only
baseless-info spans, and the claims overlapping none.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np
from _answer_readings import CROSSENCODER_READING, READING, READINGS
from _datasets import RAGTRUTH, data_dir
from _faith_compare import load_split
from _faith_data import Data
from _faith_fit import SHIPPED_PRIOR_WEIGHTS, cross_validate
from sklearn.metrics import roc_auc_score
from train_crossencoder import build_pairs
from train_support import BY_TASK, SHIPPED_RESPONSE, SHIPPED_RESPONSE_RECIPES, claims_with_labels

from ragtrace.evaluators.text import content_words, split_sentences

TASKS = ("QA", "Summary", "Data2txt")
NEGATION = re.compile(
    r"\b(?:not|no|never|none|nor|neither|without|cannot|nobody|nothing|den(?:y|ies|ied))\b|n't",
    re.IGNORECASE,
)


def spans_by_answer(folder: str | None) -> dict[str, list[tuple[int, int, str]]]:
    """Each RAGTruth answer's spans: (start, end, type shortened: "evident info")."""
    out = {}
    with (data_dir(folder) / RAGTRUTH).open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                out[str(row["id"])] = [
                    (
                        int(s["start"]),
                        int(s["end"]),
                        f"{s['label_type'].split()[0]} {s['label_type'].split()[-1]}".lower(),
                    )
                    for s in row["hallucination_spans"]
                ]
    return out


def inversions(first: list[int], second: list[int]) -> float:
    """Share of pairs ordered one way in ``first`` and the other in ``second``."""
    pairs = list(combinations(range(len(first)), 2))
    flipped = sum((first[i] - first[j]) * (second[i] - second[j]) < 0 for i, j in pairs)
    return flipped / len(pairs) if pairs else 0.0


def claims_by_kind(
    example: Any, spans: list[tuple[int, int, str]], reading: str
) -> list[tuple[str, str]]:
    """Each non-empty claim of ``example`` (answers read as ``reading``) and its kind:
    "conflict" where it overlaps a conflict span, "info" where it overlaps only baseless-info
    spans, else "none"."""
    out: list[tuple[str, str]] = []
    cursor = 0
    for claim in claims_with_labels(example, reading)[0]:
        start = max(example.response.find(claim, cursor), cursor)
        cursor = start + len(claim)
        if not claim.strip():
            continue
        hit = {kind for s, e, kind in spans if s < cursor and e > start}
        out.append(
            (claim, "conflict" if any("conflict" in k for k in hit) else "info" if hit else "none")
        )
    return out


def claim_cues(
    example: Any, spans: list[tuple[int, int, str]], reading: str
) -> list[tuple[str, float, float]]:
    """(kind: conflict / info / none, order inversion, negation mismatch) of each claim of at
    least three content words, against its aligned passage sentence."""
    sentences = [s for p in example.passages for s in split_sentences(p)]
    words = [content_words(s) for s in sentences]
    out: list[tuple[str, float, float]] = []
    for claim, kind in claims_by_kind(example, spans, reading):
        claim_words = content_words(claim)
        if len(claim_words) < 3 or not sentences:
            continue
        best = max(range(len(sentences)), key=lambda k: len(set(claim_words) & set(words[k])))
        shared = [w for w in dict.fromkeys(claim_words) if w in words[best]]
        order = [claim_words.index(w) for w in shared], [words[best].index(w) for w in shared]
        negated = bool(NEGATION.search(claim)) != bool(NEGATION.search(sentences[best]))
        out.append((kind, inversions(*order) if len(shared) >= 3 else 0.0, float(negated)))
    return out


def cue_table(examples: Sequence[Any], tuning: np.ndarray, spans: dict, reading: str) -> None:
    print("-- conflict cues per claim: AUROC against claims of no span; share with the cue")
    for task in TASKS:
        rows = [
            cue
            for i in tuning.tolist()
            if examples[i].dataset == "ragtruth" and examples[i].task == task
            for cue in claim_cues(examples[i], spans[examples[i].id], reading)
        ]
        kinds = np.asarray([r[0] for r in rows])
        cues = np.asarray([r[1:] for r in rows])
        none = kinds == "none"
        for kind in ("conflict", "info"):
            mask = (kinds == kind) | none
            y = (kinds[mask] == kind).astype(int)
            print(
                f"  {task:<9}{kind:<9} n={int((kinds == kind).sum()):>4} (none {int(none.sum())}):"
                f" inversion AUROC {roc_auc_score(y, cues[mask, 0]):.3f},"
                f" negation mismatch {cues[kinds == kind, 1].mean():.3f}"
                f" against {cues[none, 1].mean():.3f}"
            )


def caught_by_type(
    data: Data, examples: Sequence[Any], tuning: np.ndarray, spans: dict, seed: int, title: str
) -> None:
    """Print, per task, the faithful answers flagged and the hallucinated ones caught by span
    type, out of fold on the tuning part with the shipped recipe over ``data``'s claim rows."""
    scored = cross_validate(
        data,
        tuning,
        SHIPPED_RESPONSE,
        by_task=BY_TASK,
        prior_weights=SHIPPED_PRIOR_WEIGHTS,
        response_recipes=SHIPPED_RESPONSE_RECIPES,
        seed=seed,
    )
    flagged = scored.values > scored.thresholds
    values = scored.values
    print(f"== {title}")
    for task in TASKS:
        rows = [i for i in tuning.tolist() if examples[i].dataset == "ragtruth"]
        rows = [i for i in rows if examples[i].task == task]
        faithful = [i for i in rows if not examples[i].label]
        caught: dict[str, list[int]] = defaultdict(list)
        for i in rows:
            if examples[i].label:
                kinds = {kind for _, _, kind in spans[examples[i].id]}
                for kind in kinds:
                    caught[f"any {kind}"].append(i)
                caught[" + ".join(sorted(kinds)) + " only"].append(i)
        share = np.mean(flagged[faithful])
        print(f"-- {task}: faithful answers flagged {share:.2f} (n={len(faithful)})")
        for kind, hits in sorted(caught.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            ranked = np.concatenate([values[hits], values[faithful]])
            auroc = roc_auc_score([1] * len(hits) + [0] * len(faithful), ranked)
            print(
                f"  {kind:<52} n={len(hits):>3}  caught {np.mean(flagged[hits]):.2f}"
                f"  AUROC against faithful {auroc:.3f}"
            )


def claim_kinds(examples: Sequence[Any], spans: dict) -> np.ndarray:
    """The kind (``claims_by_kind``) of each claim of ``train_crossencoder``'s pair cache, in
    its order (answers read as written, as the cross-encoder was trained)."""
    return np.asarray(
        [
            kind
            for e in examples
            for _, kind in claims_by_kind(e, spans.get(e.id, []), CROSSENCODER_READING)
        ]
    )


def logit_table(examples: Sequence[Any], tuning: np.ndarray, spans: dict, logits: str) -> None:
    """AUROC of the cross-encoder's out-of-fold logit, per task, for the tuning claims that
    overlap a conflict (or only baseless info) against those that overlap no span."""
    pairs = build_pairs(list(examples))
    logit, kinds = np.load(logits), claim_kinds(examples, spans)
    if len(kinds) != len(logit):
        raise SystemExit(f"{logits} does not match the claims of the pair cache")
    in_tuning = np.isin(pairs["owner"], tuning)
    print("-- the cross-encoder's logit per claim: AUROC against tuning claims of no span")
    for task in TASKS:
        of_task = in_tuning & np.asarray(
            [examples[o].dataset == "ragtruth" and examples[o].task == task for o in pairs["owner"]]
        )
        for kind in ("conflict", "info"):
            mask = of_task & np.isin(kinds, [kind, "none"])
            auroc = roc_auc_score(kinds[mask] == kind, logit[mask])
            print(f"  {task:<9}{kind:<9} n={int((kinds[mask] == kind).sum()):>4}: {auroc:.3f}")


def with_crossencoder(data: Data, examples: list[Any], logits: str) -> Data:
    """``data`` with the claim rows of ``train_crossencoder``'s pair cache and the
    cross-encoder's logit (``crossencoder_locked.py --train-bundle``'s ``logits.npy``: out of
    fold for the tuning claims) as an eleventh claim feature."""
    pairs = build_pairs(examples)
    logit = np.load(logits)
    if len(logit) != len(pairs["y"]) or not np.array_equal(pairs["owner"], data.owner):
        raise SystemExit(f"{logits} does not match the claim-pair cache: rebuild both")
    stacked = np.column_stack([pairs["X"], logit])
    return Data(
        stacked, pairs["y"], pairs["owner"], data.labels, data.groups, data.coverage, data.tasks
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--seed", type=int, default=52000)
    parser.add_argument(
        "--crossencoder-logits",
        help="also score the recipe with the cross-encoder's out-of-fold logit as a claim "
        "feature (crossencoder_locked.py --train-bundle's logits.npy)",
    )
    parser.add_argument(
        "--reading",
        choices=sorted(READINGS),
        default=READING,
        help="how answers are read (the figures in BENCHMARKS.md before its ninth change: raw)",
    )
    args = parser.parse_args()
    if args.crossencoder_logits and args.reading != CROSSENCODER_READING:
        raise SystemExit("the cross-encoder was trained on answers as written: add --reading raw")
    data, examples, tuning, _ = load_split(args.data_dir, reading=args.reading)
    spans = spans_by_answer(args.data_dir)
    caught_by_type(data, examples, tuning, spans, args.seed, "the shipped recipe (features)")
    if args.crossencoder_logits:
        stacked = with_crossencoder(data, examples, args.crossencoder_logits)
        title = "the same recipe, the cross-encoder's out-of-fold logit a claim feature"
        caught_by_type(stacked, examples, tuning, spans, args.seed, title)
        logit_table(examples, tuning, spans, args.crossencoder_logits)
    cue_table(examples, tuning, spans, args.reading)


if __name__ == "__main__":
    main()
