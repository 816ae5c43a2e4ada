"""Fit the SummaC-Conv weights of ``summarization_faithfulness`` (ragtrace/evaluators/_summac.py).

    .venv/bin/python training/train_summac_conv.py [--data-dir ../shared/data] [--write]

Data: the RAGTruth Summary rows of ../shared/data, TUNING part of the locked split
(``_labelled_data.py``) only; the locked part is never read here. Each row's support matrix
(document sentences x summary sentences) comes from the evaluator itself
(``SummarizationFaithfulness.matrices``: the local support detector's summary model); the
target is "no annotated
hallucination" (``label == 0``).

Model: each summary sentence's column -> histogram over ``bins`` equal bins of [0, 1] (share of
the document sentences in each bin, or whether any falls in it) -> one linear filter + bias ->
sigmoid -> the mean (or min) over the sentences = P(faithful). Fitted by L-BFGS on the log-loss
plus ``l2 / 2 * |kernel|^2``, from a small random start (``SEED``).

Choice: every (histogram, bins, l2, reduction) of ``GRID`` is scored by 5-fold cross-validation
grouped by source document inside the tuning part (out-of-fold AUROC); the best is refitted on
the whole tuning part. The out-of-fold figures of the chosen setting, and SummaC-ZS's on the same
rows, go into the weights file's ``info`` with the data's sha256 and the split's fingerprint,
and into training/results/train_summac_conv.json. ``--write`` writes
ragtrace/evaluators/data/summac_conv.json.

The support detector's own weights were fitted on the tuning part too (train_support.py), so the
tuning figures here are optimistic; the locked part (benchmarks/summarization_accuracy.py
--locked) is the honest figure.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # data readers, split

import numpy as np
from _accuracy_grounding import _record
from _labelled_data import (
    RAGTRUTH,
    GroundingExample,
    data_dir,
    fingerprint,
    halueval,
    ragtruth,
    split,
    summary,
    tuned_flags,
)
from scipy.optimize import minimize
from sklearn.model_selection import GroupKFold

from ragtrace._model import Score
from ragtrace.evaluators._summac import (
    CONV_WEIGHTS,
    DETECTOR_MATRIX,
    ConvAggregator,
    histograms,
    sigmoid,
    zero_shot,
)
from ragtrace.evaluators._summarization import SummarizationFaithfulness

SEED = 20261125
FOLDS = 5
GRID = [
    (histogram, bins, l2, reduction)
    for histogram in ("share", "presence")
    for bins in (5, 10, 20)
    for l2 in (0.001, 0.01, 0.1)
    for reduction in ("mean", "min")
]
BATCH = 16
RESULTS = Path(__file__).resolve().parent / "results"


def summary_rows(folder: Path) -> tuple[list[GroundingExample], dict[str, Any]]:
    """The tuning part's RAGTruth Summary rows, and the split's fingerprint."""
    everything = ragtruth(folder) + halueval(folder)
    tuning, _ = split(everything)
    rows = [e for e in tuning if e.dataset == "ragtruth" and e.task == "Summary"]
    return rows, fingerprint(everything)


def matrices(examples: list[GroundingExample]) -> list[np.ndarray]:
    """Each example's support matrix, built by the evaluator (records in small batches)."""
    evaluator = SummarizationFaithfulness(aggregation="zs")
    out: list[np.ndarray] = []
    for start in range(0, len(examples), BATCH):
        batch = [_record(e) for e in examples[start : start + BATCH]]
        for found in evaluator.matrices(batch):
            if isinstance(found, Score):
                raise SystemExit(f"bad row: {found.error}")
            out.append(found[1])
        print(f"  matrices {len(out)}/{len(examples)}", flush=True)
    return out


def _reduce(scores: np.ndarray, reduction: str) -> tuple[float, np.ndarray]:
    """(value, d value / d scores)."""
    grad = np.zeros_like(scores)
    if reduction == "min":
        k = int(scores.argmin())
        grad[k] = 1.0
        return float(scores[k]), grad
    grad[:] = 1.0 / len(scores)
    return float(scores.mean()), grad


def fit(
    hists: list[np.ndarray], y: np.ndarray, l2: float, reduction: str
) -> tuple[np.ndarray, float]:
    """(kernel, bias) minimising the mean log-loss of P(faithful) plus the L2 penalty."""
    bins = hists[0].shape[1]
    start = np.random.default_rng(SEED).normal(0.0, 0.01, bins + 1)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        total, grad = 0.0, np.zeros_like(theta)
        for h, target in zip(hists, y, strict=True):
            s = sigmoid(h @ w + b)
            p, dp_ds = _reduce(s, reduction)
            p = min(max(p, 1e-7), 1 - 1e-7)
            total -= target * np.log(p) + (1 - target) * np.log(1 - p)
            dl_dp = (p - target) / (p * (1 - p))
            dz = dl_dp * dp_ds * s * (1 - s)
            grad[:-1] += h.T @ dz
            grad[-1] += dz.sum()
        n = len(hists)
        total = total / n + 0.5 * l2 * float(w @ w)
        grad /= n
        grad[:-1] += l2 * w
        return total, grad

    found = minimize(loss, start, jac=True, method="L-BFGS-B")
    return found.x[:-1], float(found.x[-1])


def predict(hists: list[np.ndarray], w: np.ndarray, b: float, reduction: str) -> np.ndarray:
    return np.asarray([_reduce(sigmoid(h @ w + b), reduction)[0] for h in hists])


def cross_validate(
    mats: list[np.ndarray], y: np.ndarray, groups: list[str], setting: tuple[str, int, float, str]
) -> np.ndarray:
    """Out-of-fold P(faithful) of one (histogram, bins, l2, reduction) setting, 5 folds grouped
    by source document."""
    histogram, bins, l2, reduction = setting
    hists = [histograms(m, bins, histogram) for m in mats]
    oof = np.zeros(len(mats))
    for train, test in GroupKFold(n_splits=FOLDS).split(oof, y, np.asarray(groups)):
        w, b = fit([hists[i] for i in train], y[train], l2, reduction)
        oof[test] = predict([hists[i] for i in test], w, b, reduction)
    return oof


def metrics(labels: list[int], faithful: np.ndarray, groups: list[str], cut: float) -> dict:
    """DATA.md's figures for P(faithful): flag hallucinated when below ``cut``; tuned cut by
    grouped CV."""
    risk = (1.0 - faithful).tolist()
    return {
        "fixed": summary(labels, risk, [f < cut for f in faithful]),
        "tuned": summary(labels, risk, tuned_flags(labels, risk, groups)),
    }


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--write", action="store_true", help="write summac_conv.json")
    args = parser.parse_args()
    folder = data_dir(args.data_dir)
    rows, split_info = summary_rows(folder)
    started = time.perf_counter()
    mats = matrices(rows)
    print(f"{len(rows)} tuning Summary rows, matrices in {time.perf_counter() - started:.0f} s")
    labels = [e.label for e in rows]
    groups = [e.group for e in rows]
    y = 1.0 - np.asarray(labels, dtype=float)
    zs = np.asarray([zero_shot(m)[0] for m in mats])
    grid = []
    for setting in GRID:
        oof = cross_validate(mats, y, groups, setting)
        auroc = summary(labels, (1 - oof).tolist(), [False] * len(oof))["auroc"]
        grid.append({"setting": list(setting), "cv_auroc": auroc})
        print(f"  {setting} out-of-fold AUROC {auroc}", flush=True)
    best = max(grid, key=lambda g: (g["cv_auroc"], -g["setting"][1], g["setting"][2]))
    histogram, bins, l2, reduction = best["setting"]
    oof = cross_validate(mats, y, groups, (histogram, bins, l2, reduction))
    result = {
        "split": split_info,
        "rows": len(rows),
        "hallucinated": int(sum(labels)),
        "grid": grid,
        "chosen": best,
        "conv_cv": metrics(labels, oof, groups, 0.75),
        "zs": metrics(labels, zs, groups, 0.75),
    }
    print(json.dumps({k: result[k] for k in ("chosen", "conv_cv", "zs")}, indent=1))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "train_summac_conv.json").write_text(json.dumps(result, indent=1) + "\n")
    if args.write:
        w, b = fit([histograms(m, bins, histogram) for m in mats], y, l2, reduction)
        info = {
            "script": "training/train_summac_conv.py --write",
            "seed": SEED,
            "data": f"../shared/data/{RAGTRUTH}, RAGTruth Summary rows of the tuning part of "
            "benchmarks/_labelled_data.py",
            "data_sha256": sha256(folder / RAGTRUTH),
            "split": split_info,
            "rows": len(rows),
            "hallucinated": int(sum(labels)),
            "target": "P(faithful): no annotated hallucination span",
            "chosen_by": f"{FOLDS}-fold CV grouped by source document, out-of-fold AUROC",
            "l2": l2,
            "cv_tuning": result["conv_cv"],
            "zs_tuning": result["zs"],
            "python": sys.version.split()[0],
            "numpy": np.__version__,
        }
        weights = ConvAggregator(tuple(w.tolist()), b, histogram, reduction, DETECTOR_MATRIX, info)
        CONV_WEIGHTS.write_text(json.dumps(weights.to_dict(), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {CONV_WEIGHTS}")


if __name__ == "__main__":
    main()
