"""A candidate claim feature for the support detector, measured and not shipped: soft word support.

    cd benchmarks && ../.venv/bin/python _faith_soft_words.py [--locked]

``word_support`` counts a claim's content words found verbatim in the passages. The candidate
compares each distinct content word of a claim with every content word of the passages through
the packaged static embedder's word vectors (WordLlama's token table, averaged over a word's
tokens) and keeps each word's best cosine (1.0 when found verbatim): ``soft_mean`` is their
mean, ``soft_weakest`` the mean of the three lowest. Each is added to the shipped claim
features (``support_features.FEATURES``) and the shipped recipe is refitted
(``_faith_fit.cross_validate``, a pair of models per calibration).

Printed, one line per candidate (BA / AUROC per slice):
1. 5-fold CV grouped by document inside the tuning part (``GroupKFold``, as every other table);
2. the mean over four seeded shuffles of the documents into 5 folds (``_faith_fit.group_folds``;
   the same CV, other folds: how much of a difference survives a different fold assignment);
3. with ``--locked``: the pair chosen from 1-2 fitted on the tuning part and scored once on the
   locked part, beside the shipped features fitted the same way (``train_support.py --locked``).

Features are computed in about 10 s (one tokenizer call per new word); nothing is cached.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from _datasets import data_dir, halueval, ragtruth
from _faith_fit import cross_validate
from train_support import (
    RESULTS,
    SHIPPED_RESPONSE,
    claims_with_labels,
    fitted_probabilities,
    load,
    parts,
    report,
)

from ragtrace.backends.embeddings import STATIC_MODEL, get_embedder
from ragtrace.evaluators.support import _sentences
from ragtrace.evaluators.text import content_words

SLICES = ("ragtruth/QA", "ragtruth/Summary", "ragtruth/Data2txt", "ragtruth/all", "halueval/QA")
CANDIDATES = {"shipped": [], "soft_mean": [0], "soft_weakest": [1], "both": [0, 1]}
CHOSEN = "both"  # from tables 1 and 2 (best or level on every slice with a target)
SHUFFLES = 4
WEAKEST = 3


def soft_columns(examples: list) -> np.ndarray:
    """(soft_mean, soft_weakest) of every claim, in ``train_support.build``'s order."""
    embedder = get_embedder(STATIC_MODEL)
    rows: list[list[float]] = []
    for example in examples:
        passage_words = sorted({w for s in _sentences(example.passages) for w in content_words(s)})
        passage = embedder.encode(passage_words) if passage_words else None
        for claim in claims_with_labels(example)[0]:
            if not claim.strip():
                continue
            words = list(dict.fromkeys(content_words(claim)))
            if not words:
                rows.append([1.0, 1.0])
            elif passage is None:
                rows.append([0.0, 0.0])
            else:
                best = np.sort((embedder.encode(words) @ passage.T).max(axis=1))
                rows.append([float(best.mean()), float(best[:WEAKEST].mean())])
    return np.asarray(rows)


def row(figures: dict) -> list[list[float]]:
    return [[figures[s]["balanced_accuracy"], figures[s]["auroc"]] for s in SLICES]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--locked", action="store_true", help="score the chosen pair once")
    args = parser.parse_args()
    folder = data_dir(args.data_dir)
    examples = ragtruth(folder) + halueval(folder)
    data = load(examples)
    tuning, locked = parts(examples)
    soft = soft_columns(examples)
    assert soft.shape[0] == data.X.shape[0], "claims out of step with train_support's cache"
    shipped_X = data.X
    results: dict[str, dict] = {}
    print("candidate       " + "  ".join(f"{s:>17}" for s in SLICES))
    for table, seeds in (("grouped", [None]), ("shuffled", [1000 * k for k in range(SHUFFLES)])):
        print(f"-- {table} 5-fold CV, tuning part")
        for name, columns in CANDIDATES.items():
            data.X = np.hstack([shipped_X, soft[:, columns]]) if columns else shipped_X
            runs = []
            for seed in seeds:
                scores = cross_validate(data, tuning, SHIPPED_RESPONSE, by_task=True, seed=seed)
                runs.append(row(report(examples, scores)))
            mean = np.asarray(runs).mean(axis=0).round(3).tolist()
            results.setdefault(table, {})[name] = mean
            print(f"{name:<15} " + "  ".join(f"{ba:.3f} / {auc:.3f}" for ba, auc in mean))
    if args.locked:
        print("-- locked part, fitted on the tuning part (scored once for the chosen candidate)")
        for name in ("shipped", CHOSEN):
            columns = CANDIDATES[name]
            data.X = np.hstack([shipped_X, soft[:, columns]]) if columns else shipped_X
            scores = fitted_probabilities(data, tuning, locked, SHIPPED_RESPONSE, by_task=True)
            figures = row(report(examples, scores))
            results.setdefault("locked", {})[name] = figures
            print(f"{name:<15} " + "  ".join(f"{ba:.3f} / {auc:.3f}" for ba, auc in figures))
    (RESULTS / "faith_soft_words.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
