"""Fitting and scoring the support detector's two models, for any set of training answers.

``Data`` holds every claim's feature row and label, every answer's label, coverage and task.
``fit_detector(data, claims)`` fits the claim model on those claims and the response model on
their answers (from out-of-fold claim probabilities, ``INNER_FOLDS`` folds grouped by document,
so it learns from probabilities like those the claim model gives on unseen answers);
``apply`` scores other answers with a fitted pair; ``cross_validate`` does both fold by fold.
With ``by_task``, each task (``support_response.TASKS``, as inferred from the answer's shape)
gets its own pair, fitted on that task's answers only, as the shipped detector has.
Everything here is plain numpy and scikit-learn on cached features: seconds, not minutes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

from ragtrace.evaluators.support import with_confident_claim
from ragtrace.evaluators.support_response import RESPONSE_FEATURES, response_features, select

FOLDS = 5
INNER_FOLDS = 4
C = 1.0
RESPONSE_C = 0.1  # correlated response features: stronger regularisation, steadier weights


@dataclass
class Data:
    """Claim rows (``X``, ``y``, ``owner``: the answer's index) and, per answer, its label,
    group, dataset/task, ``coverage`` (``response_coverage``) and inferred ``task``."""

    X: np.ndarray
    y: np.ndarray
    owner: np.ndarray
    labels: np.ndarray
    groups: np.ndarray
    coverage: np.ndarray
    tasks: list[str]

    def claims_of(self, answers: np.ndarray) -> np.ndarray:
        """Indices of the claims of ``answers`` (answer indices)."""
        return np.flatnonzero(np.isin(self.owner, answers))


@dataclass
class Fitted:
    claim: tuple[np.ndarray, np.ndarray, LogisticRegression]
    response: tuple[np.ndarray, np.ndarray, LogisticRegression]
    names: tuple[str, ...]


def fit(
    X: np.ndarray, y: np.ndarray, c: float = C
) -> tuple[np.ndarray, np.ndarray, LogisticRegression]:
    """A class-balanced logistic regression on standardised features: (mean, scale, model)."""
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, class_weight="balanced", max_iter=2000)
    model.fit((X - mean) / scale, y)
    return mean, scale, model


def predict(fitted: tuple[np.ndarray, np.ndarray, LogisticRegression], X: np.ndarray) -> np.ndarray:
    mean, scale, model = fitted
    return model.predict_proba((X - mean) / scale)[:, 1]  # type: ignore[no-any-return]


def response_rows(
    data: Data, p: np.ndarray, claims: np.ndarray, names: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(answers owning ``claims``, their rows of ``names``, their largest claim probability);
    ``p`` holds claim probabilities indexed like ``data.X``."""
    by_answer: dict[int, list[int]] = {}
    for k in claims:
        by_answer.setdefault(int(data.owner[k]), []).append(int(k))
    answers = np.asarray(sorted(by_answer), dtype=int)
    full = [
        response_features(
            p[by_answer[i]].tolist(),
            data.X[by_answer[i]].tolist(),
            data.coverage[i].tolist(),
        )
        for i in answers
    ]
    rows = np.asarray([select(r, names) for r in full]).reshape(len(answers), len(names))
    return answers, rows, np.asarray([r[0] for r in full])


def out_of_fold(data: Data, claims: np.ndarray, folds: int) -> np.ndarray:
    """Claim probabilities for ``claims``, each from a claim model that never saw its document;
    returned indexed like ``data.X`` (zero elsewhere)."""
    p = np.zeros(len(data.y))
    for train, test in GroupKFold(n_splits=folds).split(
        claims, data.y[claims], data.groups[data.owner[claims]]
    ):
        p[claims[test]] = predict(
            fit(data.X[claims[train]], data.y[claims[train]]), data.X[claims[test]]
        )
    return p


def fit_detector(
    data: Data, claims: np.ndarray, names: tuple[str, ...] = RESPONSE_FEATURES
) -> Fitted:
    """Both models fitted on ``claims`` (and their answers), the response model on ``names``."""
    claim_model = fit(data.X[claims], data.y[claims])
    p = out_of_fold(data, claims, INNER_FOLDS)
    answers, rows, _ = response_rows(data, p, claims, names)
    return Fitted(claim_model, fit(rows, data.labels[answers], RESPONSE_C), names)


def apply(data: Data, fitted: Fitted, claims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(answers owning ``claims``, their hallucination probabilities) under ``fitted``, raised to
    a confident claim's probability as the detector does."""
    p = np.zeros(len(data.y))
    p[claims] = predict(fitted.claim, data.X[claims])
    answers, rows, largest = response_rows(data, p, claims, fitted.names)
    q = predict(fitted.response, rows)
    return answers, np.asarray(
        [with_confident_claim(a, b) for a, b in zip(q, largest, strict=True)]
    )


def _by_task(data: Data, answers: np.ndarray) -> dict[str, np.ndarray]:
    tasks = np.asarray(data.tasks)[answers]
    return {t: answers[tasks == t] for t in sorted(set(tasks.tolist()))}


def cross_validate(
    data: Data,
    answers: np.ndarray,
    names: tuple[str, ...] = RESPONSE_FEATURES,
    *,
    by_task: bool = False,
) -> np.ndarray:
    """Out-of-fold hallucination probabilities of ``answers`` (``FOLDS`` folds grouped by
    document, both models refitted in each, per task with ``by_task``); NaN elsewhere."""
    out = np.full(len(data.labels), np.nan)
    if by_task:
        for subset in _by_task(data, answers).values():
            found = cross_validate(data, subset, names)
            out[subset] = found[subset]
        return out
    claims = data.claims_of(answers)
    for train, test in GroupKFold(n_splits=FOLDS).split(
        claims, data.y[claims], data.groups[data.owner[claims]]
    ):
        fitted = fit_detector(data, claims[train], names)
        scored, probabilities = apply(data, fitted, claims[test])
        out[scored] = probabilities
    return out


def fit_by_task(
    data: Data, train: np.ndarray, names: tuple[str, ...] = RESPONSE_FEATURES
) -> dict[str, Fitted]:
    """One fitted pair per task, each on the ``train`` answers of that task."""
    return {
        task: fit_detector(data, data.claims_of(subset), names)
        for task, subset in _by_task(data, train).items()
    }


def fitted_probabilities(
    data: Data,
    train: np.ndarray,
    test: np.ndarray,
    names: tuple[str, ...] = RESPONSE_FEATURES,
    *,
    by_task: bool = False,
) -> np.ndarray:
    """Hallucination probabilities of the ``test`` answers from models fitted on the ``train``
    answers (per task with ``by_task``; a task without training answers gets the pair fitted
    on all of them); NaN for every other answer."""
    out = np.full(len(data.labels), np.nan)
    pooled = fit_detector(data, data.claims_of(train), names)
    fitted = fit_by_task(data, train, names) if by_task else {}
    for task, subset in _by_task(data, test).items():
        scored, probabilities = apply(data, fitted.get(task, pooled), data.claims_of(subset))
        out[scored] = probabilities
    return out
