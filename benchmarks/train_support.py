"""Fit the local support detector (ragtrace/evaluators/data/support_model.json) on CPU.

    .venv/bin/python benchmarks/train_support.py [--data-dir ../shared/data] [--write]

Every response of RAGTruth (dev) and HaluEval QA (dev) is split into claims (sentences). A
RAGTruth claim is labelled unsupported when it overlaps an annotated hallucination span; a
HaluEval answer's claims take the answer's label. Features come from
``ragtrace.evaluators.support_features`` with the packaged MiniLM. A class-balanced logistic
regression is fitted on standardised features.

Validation is 5-fold cross-validation grouped by source document (RAGTruth ``source_id``,
HaluEval question pair), so no document is in both a training and a test fold; it reports the
response-level protocol of DATA.md (a response is flagged when any claim's support falls below
0.5). ``--write`` fits on everything and writes the weights and the model card's figures.
Runs in a few minutes on 2 cores; features are cached under benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np
from _datasets import GroundingExample, data_dir, halueval, ragtruth
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score, f1_score, roc_auc_score
from sklearn.model_selection import GroupKFold

from ragtrace.evaluators.support import WEIGHTS, featurise
from ragtrace.evaluators.support_features import FEATURES
from ragtrace.text import split_sentences

RESULTS = Path(__file__).resolve().parent / "results"
FEATURE_CACHE = RESULTS / "support_features.pkl"
FOLDS = 5
C = 1.0


def claims_with_labels(example: GroundingExample) -> tuple[list[str], list[int]]:
    """Sentences of the response, each labelled 1 when it overlaps a hallucinated span."""
    claims = split_sentences(example.response)
    labels = []
    cursor = 0
    for claim in claims:
        start = example.response.find(claim, cursor)
        start = cursor if start < 0 else start
        end = start + len(claim)
        cursor = end
        if example.dataset == "halueval":
            labels.append(example.label)
        else:
            labels.append(int(any(s < end and e > start for s, e in example.spans)))
    return claims, labels


def build(examples: list[GroundingExample], cache: Path) -> dict[str, object]:
    """Feature rows of every claim, with claim labels and the owning example's index."""
    if cache.exists():
        with cache.open("rb") as handle:
            return pickle.load(handle)  # type: ignore[no-any-return]
    items, labels = [], []
    for example in examples:
        claims, claim_labels = claims_with_labels(example)
        items.append((claims, list(example.passages)))
        labels.append(claim_labels)
    started = time.perf_counter()
    rows, y, owner = [], [], []
    for start in range(0, len(items), 64):
        chunk = featurise(items[start : start + 64])
        for offset, feats in enumerate(chunk):
            i = start + offset
            kept = [lab for c, lab in zip(items[i][0], labels[i], strict=True) if c.strip()]
            for (_, _, row), lab in zip(feats, kept, strict=True):
                rows.append(row)
                y.append(lab)
                owner.append(i)
        print(f"  features {min(start + 64, len(items))}/{len(items)}", file=sys.stderr)
    built = {"X": np.asarray(rows), "y": np.asarray(y), "owner": np.asarray(owner)}
    print(f"  {len(rows)} claims in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    cache.parent.mkdir(parents=True, exist_ok=True)
    with cache.open("wb") as handle:
        pickle.dump(built, handle)
    return built


def fit(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, LogisticRegression]:
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=C, class_weight="balanced", max_iter=2000)
    model.fit((X - mean) / scale, y)
    return mean, scale, model


def write_weights(
    path: Path,
    *,
    features: list[str],
    mean: np.ndarray,
    scale: np.ndarray,
    model: LogisticRegression,
    info: dict[str, object],
) -> None:
    """Write a logistic model in the format ``ragtrace.evaluators.support.SupportModel`` reads."""
    weights = {
        "features": features,
        "mean": mean.round(6).tolist(),
        "scale": scale.round(6).tolist(),
        "coef": model.coef_[0].round(6).tolist(),
        "intercept": round(float(model.intercept_[0]), 6),
        "info": info,
    }
    path.write_text(json.dumps(weights, indent=1) + "\n", encoding="utf-8")


def response_scores(p_claim: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """A response's hallucination probability: its least supported claim's."""
    out = np.zeros(n)
    np.maximum.at(out, owner, p_claim)
    return out


def cross_validate(examples: list[GroundingExample], data: dict[str, object]) -> np.ndarray:
    """Out-of-fold response-level probabilities (grouped by source document)."""
    X, y, owner = data["X"], data["y"], data["owner"]
    groups = np.asarray([examples[i].group for i in owner])  # type: ignore[union-attr]
    p = np.zeros(len(y))  # type: ignore[arg-type]
    for train, test in GroupKFold(n_splits=FOLDS).split(X, y, groups):
        mean, scale, model = fit(X[train], y[train])  # type: ignore[index]
        p[test] = model.predict_proba((X[test] - mean) / scale)[:, 1]  # type: ignore[index]
    return response_scores(p, owner, len(examples))  # type: ignore[arg-type]


def report(examples: list[GroundingExample], scores: np.ndarray, threshold: float) -> dict:
    """Balanced accuracy, hallucinated-class F1 and AUROC, per (dataset, task) and overall."""
    out = {}
    keys = [*sorted({(e.dataset, e.task) for e in examples}), ("ragtruth", "all")]
    for dataset, task in keys:
        idx = [
            i
            for i, e in enumerate(examples)
            if e.dataset == dataset and (task == "all" or e.task == task)
        ]
        y = np.asarray([examples[i].label for i in idx])
        s = scores[idx]
        pred = (s >= threshold).astype(int)
        out[f"{dataset}/{task}"] = {
            "n": len(idx),
            "balanced_accuracy": round(float(balanced_accuracy_score(y, pred)), 3),
            "f1_hallucinated": round(float(f1_score(y, pred)), 3),
            "auroc": round(float(roc_auc_score(y, s)), 3),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--write", action="store_true", help="fit on all data, write weights")
    args = parser.parse_args()
    folder = data_dir(args.data_dir)
    examples = ragtruth(folder) + halueval(folder)
    data = build(examples, FEATURE_CACHE)
    scores = cross_validate(examples, data)
    cv = report(examples, scores, 0.5)
    print(json.dumps(cv, indent=1))
    if args.write:
        mean, scale, model = fit(data["X"], data["y"])  # type: ignore[arg-type]
        info = {
            "trained_on": "RAGTruth test (dev half) + HaluEval QA (dev half), ../shared/data",
            "claims": len(data["y"]),  # type: ignore[arg-type]
            "cross_validation": f"{FOLDS}-fold, grouped by source document",
            "cv_response_level": cv,
        }
        write_weights(
            WEIGHTS, features=list(FEATURES), mean=mean, scale=scale, model=model, info=info
        )
        print(f"wrote {WEIGHTS}")


if __name__ == "__main__":
    main()
