"""Comparing detector recipes on the tuning part over several fold assignments, and once on the
locked part: the figures every ``_faith_*`` choice script reads.

``figures`` gives, for scored answers, each slice's BA and AUROC and the calibration error;
``over_folds`` averages them over fold assignments (``_faith_fit.group_folds`` seeds) for each
variant (keyword arguments of ``_faith_fit.cross_validate``); ``on_locked`` fits each variant on
the whole tuning part and scores the locked part; ``show`` prints a table of variants;
``setup`` reads a script's options and data; ``finish`` adds the locked part's figures when
asked and writes the script's JSON.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from _answer_readings import READING
from _datasets import data_dir, halueval, ragtruth
from _faith_fit import Data, Scored, cross_validate, fitted_probabilities
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from train_support import RESULTS, load, parts

from ragtrace.backends.embeddings import STATIC_MODEL

# The balanced accuracies the choice rules guard, and how far each may fall (and the pooled
# RAGTruth AUROC) before a candidate is refused.
TARGET_BAS = (
    "ragtruth/QA BA",
    "ragtruth/Summary BA",
    "ragtruth/Data2txt BA",
    "ragtruth/all BA",
    "halueval/QA BA",
)
MAX_BA_LOSS = 0.01
MAX_AUROC_LOSS = 0.005


def tuning_holds(before: Mapping[str, float], after: Mapping[str, float]) -> bool:
    """No ``TARGET_BAS`` down by more than ``MAX_BA_LOSS`` and the pooled RAGTruth AUROC by no
    more than ``MAX_AUROC_LOSS`` from ``before`` to ``after`` (printed)."""
    bas = all(before[k] - after[k] <= MAX_BA_LOSS for k in TARGET_BAS)
    auroc = before["ragtruth/all AUROC"] - after["ragtruth/all AUROC"] <= MAX_AUROC_LOSS
    print(f"  tuning: BAs within {MAX_BA_LOSS}: {bas}; AUROC within {MAX_AUROC_LOSS}: {auroc}")
    return bas and auroc


@dataclass
class Setup:
    """A choice script's options and data: the cached features of every answer and the split."""

    args: argparse.Namespace
    data: Data
    examples: list[Any]
    tuning: np.ndarray
    locked: np.ndarray
    reading: str = READING


def setup(description: str, reading: str = READING) -> Setup:
    """Parse a choice script's options (``--data-dir``, ``--locked``, ``--embedding-model``) and
    load the features (answers read as ``reading``: ``train_support.READINGS``) and the
    split."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data-dir")
    parser.add_argument("--locked", action="store_true", help="score the locked part")
    parser.add_argument("--embedding-model", choices=[STATIC_MODEL])
    args = parser.parse_args()
    data, examples, tuning, locked = load_split(args.data_dir, args.embedding_model, reading)
    return Setup(args, data, examples, tuning, locked, reading)


def load_split(
    folder: str | None = None, embedding_model: str | None = None, reading: str = READING
) -> tuple[Data, list[Any], np.ndarray, np.ndarray]:
    """(the cached features of every answer, the answers, the tuning part, the locked part)."""
    examples = ragtruth(data_dir(folder)) + halueval(data_dir(folder))
    tuning, locked = parts(examples)
    return load(examples, embedding_model, reading), examples, tuning, locked


def slice_of(example: Any) -> str:
    return f"{example.dataset}/{example.task}"


def figures(data: Data, examples: Sequence[Any], answers: np.ndarray, scored: Scored) -> dict:
    """Each slice's BA and AUROC (and pooled RAGTruth's), and the calibration error: the mean
    over calibrations of |mean value - share of hallucinated answers|."""
    out: dict[str, float] = {}
    names = sorted({slice_of(examples[i]) for i in answers.tolist()} | {"ragtruth/all"})
    for name in names:
        rows = np.asarray(
            [
                i
                for i in answers.tolist()
                if slice_of(examples[i]) == name
                or (name == "ragtruth/all" and examples[i].dataset == "ragtruth")
            ]
        )
        labels = data.labels[rows]
        out[f"{name} BA"] = balanced_accuracy_score(
            labels, scored.values[rows] > scored.thresholds[rows]
        )
        out[f"{name} AUROC"] = roc_auc_score(labels, scored.values[rows])
    tasks = np.asarray(data.tasks)
    errors = []
    for calibration in sorted(set(tasks[answers].tolist())):
        rows = answers[tasks[answers] == calibration]
        gap = abs(float(scored.values[rows].mean()) - float(data.labels[rows].mean()))
        out[f"{calibration} |mean - share|"] = gap
        errors.append(gap)
    out["calibration error"] = float(np.mean(errors))
    return out


def over_folds(
    data: Data,
    examples: Sequence[Any],
    tuning: np.ndarray,
    variants: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    names: tuple[str, ...],
) -> tuple[dict[str, dict[str, float]], dict[str, list[dict[str, float]]]]:
    """(mean figures per variant, figures per variant and seed) of ``cross_validate`` on the
    tuning part with each variant's keyword arguments, over the fold assignments ``seeds``."""
    per_seed: dict[str, list[dict[str, float]]] = {label: [] for label in variants}
    for seed in seeds:
        for label, options in variants.items():
            scored = cross_validate(data, tuning, names, seed=seed, **options)
            per_seed[label].append(figures(data, examples, tuning, scored))
    mean = {
        label: {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
        for label, runs in per_seed.items()
    }
    return mean, per_seed


def on_locked(
    data: Data,
    examples: Sequence[Any],
    tuning: np.ndarray,
    locked: np.ndarray,
    variants: Mapping[str, Mapping[str, Any]],
    names: tuple[str, ...],
) -> dict[str, dict[str, float]]:
    """Figures of the locked part for each variant, fitted on the whole tuning part."""
    return {
        label: figures(
            data, examples, locked, fitted_probabilities(data, tuning, locked, names, **options)
        )
        for label, options in variants.items()
    }


def show(title: str, rows: Mapping[str, Mapping[str, float]], width: int = 12) -> None:
    """Print a table: one column of ``width`` characters per variant, one line per figure."""
    names = list(next(iter(rows.values())))
    print(f"-- {title}")
    print(f"  {'':<34}" + "".join(f"{label:>{width}}" for label in rows))
    for name in names:
        print(f"  {name:<34}" + "".join(f"{r[name]:>{width}.3f}" for r in rows.values()))


def finish(
    result: dict[str, Any],
    name: str,
    run: Setup,
    variants: Mapping[str, Mapping[str, Any]],
    names: tuple[str, ...],
) -> None:
    """With ``--locked``, score the locked part for every variant, print it and add it to
    ``result``; write ``result`` to ``results/<name>[_<embedder>].json``."""
    if run.args.locked:
        rows = on_locked(run.data, run.examples, run.tuning, run.locked, variants, names)
        show("locked part, fitted on the whole tuning part", rows)
        result["locked"] = rows
    suffix = f"_{run.args.embedding_model}" if run.args.embedding_model else ""
    (RESULTS / f"{name}{suffix}.json").write_text(json.dumps(result, indent=1) + "\n")
