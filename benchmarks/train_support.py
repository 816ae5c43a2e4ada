"""Fit the local support detector (ragtrace/evaluators/data/support_model.json and
support_response_model.json) on CPU.

    .venv/bin/python benchmarks/train_support.py [--data-dir ../shared/data] [--write]

Every response of RAGTruth (dev) and HaluEval QA (dev) is split into claims (sentences). A
RAGTruth claim is labelled unsupported when it overlaps an annotated hallucination span; a
HaluEval answer's claims take the answer's label. Features come from
``ragtrace.evaluators.support_features`` with the packaged MiniLM. A class-balanced logistic
regression is fitted on standardised features (the claim model). A second class-balanced
logistic regression, the response model, reads each answer's ``RESPONSE_FEATURES``: its claims'
unsupported probabilities and evidence. It learns from out-of-fold claim probabilities (4 inner
folds), so it sees probabilities like those the claim model gives on answers it was not fitted on.

Validation is 5-fold cross-validation grouped by source document (RAGTruth ``source_id``,
HaluEval question pair), so no document is in both a training and a test fold; both models are
refitted inside each fold. It reports the response-level protocol of DATA.md (a response is
flagged when the response model's probability is at least 0.5, or when one claim's unsupported
probability is at least ``CONFIDENT_UNSUPPORTED``), and, for reference, the older
rule "flagged when any claim's support falls below 0.5". ``--write`` fits on everything and
writes both weights files with their figures. Runs in a few minutes on 2 cores; features are
cached under benchmarks/results/.
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

from ragtrace.evaluators.support import (
    RESPONSE_WEIGHTS,
    WEIGHTS,
    featurise,
    with_confident_claim,
)
from ragtrace.evaluators.support_features import FEATURES, RESPONSE_FEATURES, response_features
from ragtrace.evaluators.text import split_sentences

RESULTS = Path(__file__).resolve().parent / "results"
FEATURE_CACHE = RESULTS / "support_features.pkl"
FOLDS = 5
INNER_FOLDS = 4
C = 1.0
RESPONSE_C = 0.1  # five correlated features: stronger regularisation, same CV figures, steadier


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


def fit(
    X: np.ndarray, y: np.ndarray, c: float = C
) -> tuple[np.ndarray, np.ndarray, LogisticRegression]:
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, class_weight="balanced", max_iter=2000)
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


def claim_probabilities(
    X: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray
) -> np.ndarray:
    """The claim model fitted on the ``train`` claims, applied to the ``test`` claims."""
    mean, scale, model = fit(X[train], y[train])
    return model.predict_proba((X[test] - mean) / scale)[:, 1]  # type: ignore[no-any-return]


def out_of_fold(
    X: np.ndarray, y: np.ndarray, groups: np.ndarray, claims: np.ndarray, folds: int
) -> np.ndarray:
    """Claim probabilities for ``claims``, each from a claim model that never saw its document."""
    p = np.zeros(len(claims))
    for train, test in GroupKFold(n_splits=folds).split(claims, y[claims], groups[claims]):
        p[test] = claim_probabilities(X, y, claims[train], claims[test])
    return p


def response_matrix(
    p: np.ndarray, X: np.ndarray, owner: np.ndarray, claims: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(answer indices, their ``RESPONSE_FEATURES`` rows) for the answers owning ``claims``;
    ``p`` holds the claim probabilities, indexed like ``X``."""
    by_answer: dict[int, list[int]] = {}
    for k in claims:
        by_answer.setdefault(int(owner[k]), []).append(int(k))
    answers = np.asarray(sorted(by_answer))
    rows = [response_features(p[by_answer[i]].tolist(), X[by_answer[i]].tolist()) for i in answers]
    return answers, np.asarray(rows).reshape(len(answers), len(RESPONSE_FEATURES))


def fit_response(
    examples: list[GroundingExample], data: dict[str, object], claims: np.ndarray
) -> tuple[np.ndarray, np.ndarray, LogisticRegression]:
    """The response model for the answers owning ``claims``, from out-of-fold claim
    probabilities (``INNER_FOLDS`` folds grouped by document)."""
    X, y, owner = data["X"], data["y"], data["owner"]
    groups = claim_groups(examples, owner)  # type: ignore[arg-type]
    p = np.zeros(len(y))  # type: ignore[arg-type]
    p[claims] = out_of_fold(X, y, groups, claims, INNER_FOLDS)  # type: ignore[arg-type]
    return fit_response_on(examples, p, X, owner, claims)  # type: ignore[arg-type]


def fit_response_on(
    examples: list[GroundingExample],
    p: np.ndarray,
    X: np.ndarray,
    owner: np.ndarray,
    claims: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, LogisticRegression]:
    """The response model for the answers owning ``claims``, over the claim probabilities ``p``
    (indexed like ``X``)."""
    answers, rows = response_matrix(p, X, owner, claims)
    labels = np.asarray([examples[i].label for i in answers])
    return fit(rows, labels, RESPONSE_C)


def response_probabilities(
    fitted: tuple[np.ndarray, np.ndarray, LogisticRegression],
    p: np.ndarray,
    X: np.ndarray,
    owner: np.ndarray,
    claims: np.ndarray,
) -> tuple[np.ndarray, list[float]]:
    """(answers, hallucination probabilities) of the answers owning ``claims`` under a fitted
    response model, raised to a confident claim's probability as the detector does."""
    mean, scale, model = fitted
    answers, rows = response_matrix(p, X, owner, claims)
    probabilities = model.predict_proba((rows - mean) / scale)[:, 1]
    return answers, [
        with_confident_claim(q, r[0]) for q, r in zip(probabilities, rows, strict=True)
    ]


def claim_groups(examples: list[GroundingExample], owner: np.ndarray) -> np.ndarray:
    return np.asarray([examples[i].group for i in owner])


def cross_validate(
    examples: list[GroundingExample], data: dict[str, object], *, any_claim: bool = False
) -> np.ndarray:
    """Out-of-fold response-level probabilities (grouped by source document): the response
    model's (with a confident claim's probability where it is higher, as the detector does), or
    with ``any_claim`` the largest claim probability of each answer."""
    X, y, owner = data["X"], data["y"], data["owner"]
    groups = claim_groups(examples, owner)  # type: ignore[arg-type]
    out = np.zeros(len(examples))
    p = np.zeros(len(y))  # type: ignore[arg-type]
    for train, test in GroupKFold(n_splits=FOLDS).split(X, y, groups):
        p[test] = claim_probabilities(X, y, train, test)  # type: ignore[arg-type]
        if not any_claim:
            fitted = fit_response(examples, data, train)
            answers, probabilities = response_probabilities(fitted, p, X, owner, test)  # type: ignore[arg-type]
            out[answers] = probabilities
    return response_scores(p, owner, len(examples)) if any_claim else out  # type: ignore[arg-type]


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
    any_claim = report(examples, cross_validate(examples, data, any_claim=True), 0.5)
    print("for reference, flagged when any claim is below 0.5:")
    print(json.dumps(any_claim, indent=1))
    if args.write:
        X, y = data["X"], data["y"]
        info = {
            "trained_on": "RAGTruth test (dev half) + HaluEval QA (dev half), ../shared/data",
            "claims": len(y),  # type: ignore[arg-type]
            "cross_validation": f"{FOLDS}-fold, grouped by source document",
        }
        mean, scale, model = fit(X, y)  # type: ignore[arg-type]
        write_weights(
            WEIGHTS,
            features=list(FEATURES),
            mean=mean,
            scale=scale,
            model=model,
            info={**info, "cv_response_level_any_claim": any_claim},
        )
        every_claim = np.arange(len(y))  # type: ignore[arg-type]
        mean, scale, model = fit_response(examples, data, every_claim)
        write_weights(
            RESPONSE_WEIGHTS,
            features=list(RESPONSE_FEATURES),
            mean=mean,
            scale=scale,
            model=model,
            info={**info, "inner_folds": INNER_FOLDS, "cv_response_level": cv},
        )
        print(f"wrote {WEIGHTS} and {RESPONSE_WEIGHTS}")


if __name__ == "__main__":
    main()
