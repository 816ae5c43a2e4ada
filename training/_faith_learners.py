"""The learners of the support detector's benchmarks: how one claim model or one response model
is fitted and applied, and how a verdict cut is chosen (``_faith_fit`` builds the detector from
them).

``fit`` is a class-balanced logistic regression on standardised features; ``fit_claim`` that
or class-balanced shallow boosted trees (``TREES``, set before any figure and not tuned),
free (``"trees"``) or under ``MONOTONE`` (``"monotone_trees"``, set after the free trees passed
invented sentences); both measured by ``_faith_claim_trees.py`` and not shipped: the shipped
weights are linear. ``fit_rows`` fits a response model, its value calibrated to the base rate:
a logistic regression, or one whose weights' signs are bounded by ``RESPONSE_SIGNS``
(``fit_signed``; chosen by ``_faith_response_signs.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import minimize
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score

from ragtrace.evaluators._faithfulness.features import FEATURES

C = 1.0
RESPONSE_C = 0.1  # correlated response features: stronger regularisation, steadier weights
# The claim model's learner: a logistic regression ("linear"), or shallow boosted trees
# ("trees"), with these settings, set before any figure and not tuned (_faith_claim_trees.py).
LEARNERS = ("linear", "trees", "monotone_trees")
TREES = {
    "max_depth": 3,
    "max_iter": 150,
    "learning_rate": 0.05,
    "min_samples_leaf": 40,
    "l2_regularization": 1.0,
}
# How the probability that a claim is unsupported may move with each feature (-1: not up as
# the feature grows, 1: not down, 0: free): more coverage and similarity never make a claim
# more doubtful, a missing number or name never less. Without them the trees learned that a
# claim sharing no word with the passages is mostly fine (RAGTruth's "Sure!" and "Here is the
# summary:" lines) and called an invented sentence with invented names and numbers 72%
# supported (BENCHMARKS.md).
MONOTONE = {
    "word_support": -1,
    "stem_support": -1,
    "local_support": -1,
    "bigram_support": -1,
    "missing_numbers": 1,
    "any_missing_number": 1,
    "missing_names": 1,
    "max_similarity": -1,
    "top3_similarity": -1,
    "meta_statement": 0,
}
# How an answer's hallucination probability may move with each response feature in a signed
# response model (``_faith_fit.ResponseRecipe``; 1: not down as the feature grows, -1: not up,
# 0: free): a more doubtful claim never makes the answer less doubtful, more support,
# similarity or coverage never more, a missing number or name never less.
RESPONSE_SIGNS = {
    "largest_unsupported": 1,
    "second_unsupported": 1,
    "log_claims": 0,
    "mean_bigram_support": -1,
    "mean_similarity": -1,
    "word_coverage": -1,
    "missing_numbers": 1,
    "missing_names": 1,
}
CUTS = np.round(np.arange(0.2, 0.81, 0.05), 2)


def log_odds(values: np.ndarray) -> np.ndarray:
    clipped = np.clip(values, 1e-6, 1 - 1e-6)
    return np.log(clipped / (1 - clipped))  # type: ignore[no-any-return]


def fit(
    X: np.ndarray, y: np.ndarray, c: float = C, sample_weight: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, LogisticRegression]:
    """A class-balanced logistic regression on standardised features: (mean, scale, model);
    ``sample_weight`` multiplies each row's weight in the loss (the class balance counts rows)."""
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, class_weight="balanced", max_iter=2000)
    model.fit((X - mean) / scale, y, sample_weight=sample_weight)
    return mean, scale, model


def fit_claim(
    X: np.ndarray,
    y: np.ndarray,
    learner: str = "linear",
    sample_weight: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, Any]:
    """A claim model in the (mean, scale, model) form ``predict`` reads: ``fit``'s logistic
    regression; with ``learner="trees"`` class-balanced boosted trees (``TREES``) on the raw
    features; with ``"monotone_trees"`` the same under ``MONOTONE``'s constraints. Rows count
    by ``sample_weight`` (None: each once)."""
    if learner == "linear":
        return fit(X, y, sample_weight=sample_weight)
    if learner not in LEARNERS:
        raise ValueError(f"learner must be one of {LEARNERS}, got {learner!r}")
    constraints = [MONOTONE[name] for name in FEATURES] if learner == "monotone_trees" else None
    model = HistGradientBoostingClassifier(
        **TREES, monotonic_cst=constraints, class_weight="balanced", random_state=0
    )
    model.fit(X, y, sample_weight=sample_weight)
    return np.zeros(X.shape[1]), np.ones(X.shape[1]), model


def predict(fitted: tuple[np.ndarray, np.ndarray, Any], X: np.ndarray) -> np.ndarray:
    mean, scale, model = fitted
    return model.predict_proba((X - mean) / scale)[:, 1]  # type: ignore[no-any-return]


def fit_signed(
    X: np.ndarray, y: np.ndarray, c: float, signs: list[int]
) -> tuple[np.ndarray, np.ndarray, LogisticRegression]:
    """``fit``'s class-balanced logistic regression (the same objective: half the squared
    weights plus ``c`` times the weighted log-loss) with each standardised weight's sign bounded
    by ``signs`` (1: at least 0, -1: at most 0, 0: free)."""
    mean, scale, model = fit(X, y, c)  # a fitted estimator whose weights are replaced below
    Z = (X - mean) / scale
    sign = np.where(y == 1, 1.0, -1.0)
    positives = max(float(y.sum()), 1.0)
    negatives = max(float(len(y) - y.sum()), 1.0)
    weight = np.where(y == 1, len(y) / (2.0 * positives), len(y) / (2.0 * negatives))

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        margin = sign * (Z @ w + b)
        value = 0.5 * w @ w + c * float(np.sum(weight * np.logaddexp(0.0, -margin)))
        pull = -c * weight * sign / (1.0 + np.exp(margin))
        return value, np.append(w + Z.T @ pull, pull.sum())

    bounds = [(0.0, None) if s > 0 else (None, 0.0) if s < 0 else (None, None) for s in signs]
    start = np.zeros(X.shape[1] + 1)
    found = minimize(loss, start, jac=True, method="L-BFGS-B", bounds=[*bounds, (None, None)])
    model.coef_ = found.x[:-1][None, :]
    model.intercept_ = found.x[-1:]
    return mean, scale, model


def fit_rows(
    rows: np.ndarray,
    labels: np.ndarray,
    cut_gain: float | None,
    value_prior_weight: float,
    signed_names: tuple[str, ...] | None = None,
) -> tuple[tuple[np.ndarray, np.ndarray, LogisticRegression], float, float]:
    """``fit_response`` on answers' feature ``rows`` and ``labels``; with ``signed_names`` (the
    names of the rows' features) the weights' signs bounded by ``RESPONSE_SIGNS``."""
    response = (
        fit_signed(rows, labels, RESPONSE_C, [RESPONSE_SIGNS[n] for n in signed_names])
        if signed_names
        else fit(rows, labels, RESPONSE_C)
    )
    cut = best_cut(labels, predict(response, rows), cut_gain)
    base_rate = float(np.clip(labels.mean(), 0.01, 0.99))
    prior = np.log(base_rate / (1.0 - base_rate))
    response[2].intercept_ = response[2].intercept_ + value_prior_weight * prior
    return response, base_rate, cut


def best_cut(labels: np.ndarray, scores: np.ndarray, min_gain: float | None) -> float:
    """The cut of ``CUTS`` with the best balanced accuracy (the nearest to 0.5 among equals),
    or 0.5 unless it beats 0.5 by ``min_gain`` or more."""
    if min_gain is None or len(set(labels.tolist())) < 2:
        return 0.5
    at_half = balanced_accuracy_score(labels, scores > 0.5)
    gain, _, cut = max(
        (balanced_accuracy_score(labels, scores > t) - at_half, -abs(t - 0.5), float(t))
        for t in CUTS
    )
    return cut if gain >= min_gain else 0.5
