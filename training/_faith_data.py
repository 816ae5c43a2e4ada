"""What the support detector's benchmarks pass around: the answers' cached evidence (``Data``),
how a response model is fitted (``ResponseRecipe``), a fitted pair of models (``Fitted``) and
the values and verdict thresholds it gives (``Scored``). ``_faith_fit`` fits and scores them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from _faith_learners import log_odds
from sklearn.linear_model import LogisticRegression

IDENTITY = (1.0, 0.0)  # a value scaling that changes nothing: (slope, intercept)


@dataclass(frozen=True)
class ResponseRecipe:
    """How one calibration's response model is fitted: on the response features ``names``,
    with ``signed`` its weights' signs bounded by ``_faith_learners.RESPONSE_SIGNS``."""

    names: tuple[str, ...]
    signed: bool = False


@dataclass
class Data:
    """Claim rows (``X``, ``y``, ``owner``: the answer's index) and, per answer, its label,
    group, dataset/task, ``coverage`` (``response_coverage``) and inferred ``task``; optionally
    ``foreign`` training rows."""

    X: np.ndarray
    y: np.ndarray
    owner: np.ndarray
    labels: np.ndarray
    groups: np.ndarray
    coverage: np.ndarray
    tasks: list[str]
    # Rows that only train claim models: (feature rows, host answer), each a claim of another
    # document featurised against its host's passages, unsupported (``_faith_foreign_claims``).
    foreign: tuple[np.ndarray, np.ndarray] | None = None
    # Claims that only train claim models: (claim indices into ``X``, each claim's weight, the
    # task whose claim model takes it: ``qa``, ``summary``, ``data2txt`` or ``*`` for every
    # one). Their answers are never scored or fitted as answers (the training-only sets).
    extra: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def claims_of(self, answers: np.ndarray) -> np.ndarray:
        """Indices of the claims of ``answers`` (answer indices)."""
        return np.flatnonzero(np.isin(self.owner, answers))


@dataclass
class Fitted:
    claim: tuple[np.ndarray, np.ndarray, Any]
    response: tuple[np.ndarray, np.ndarray, LogisticRegression]
    names: tuple[str, ...]
    base_rate: float
    prior_weight: float
    balanced_cut: float
    value_prior_weight: float
    scaling: tuple[float, float] = IDENTITY

    @property
    def threshold(self) -> float:
        """The verdict: hallucinated when the value is above this (the balanced model's cut
        moved by ``value_prior_weight - prior_weight`` times the base rate's log-odds, then
        through ``scaling`` as the value is)."""
        log_odds = np.log(self.base_rate / (1.0 - self.base_rate))
        cut = np.log(self.balanced_cut / (1.0 - self.balanced_cut))
        z = cut + (self.value_prior_weight - self.prior_weight) * log_odds
        return float(self.scaled(np.asarray([1.0 / (1.0 + np.exp(-z))]))[0])

    def scaled(self, values: np.ndarray) -> np.ndarray:
        """``values`` (the response model's, raised to a confident claim's) through
        ``scaling``: sigmoid(slope * log-odds + intercept), monotone, so no verdict changes."""
        if self.scaling == IDENTITY:
            return values
        slope, intercept = self.scaling
        return 1.0 / (1.0 + np.exp(-(slope * log_odds(values) + intercept)))


@dataclass
class Scored:
    """Per answer: the response-level value (hallucination probability) and the verdict's
    threshold on it; NaN for answers not scored."""

    values: np.ndarray
    thresholds: np.ndarray

    @classmethod
    def empty(cls, n: int) -> Scored:
        return cls(np.full(n, np.nan), np.full(n, np.nan))
