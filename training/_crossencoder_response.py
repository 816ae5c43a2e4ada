"""The cross-encoder path's response model (``train_crossencoder.py``, ``crossencoder_locked.py``):
claim evidence only, one model for every task, from the cross-encoder path's claim
probabilities; and the rule it replaced (the least supported claim decides).
"""

from __future__ import annotations

import numpy as np
from _answer_readings import CROSSENCODER_READING
from _faith_fit import Data, response_rows
from _faith_learners import RESPONSE_C, fit, predict
from _labelled_data import GroundingExample
from train_support import response_inputs

from ragtrace.evaluators._faithfulness.detector import with_confident_claim
from ragtrace.evaluators._faithfulness.response import CLAIM_EVIDENCE

_INPUTS: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]] = {}


def _data_for(examples: list[GroundingExample], X: np.ndarray, owner: np.ndarray) -> Data:
    if id(examples) not in _INPUTS:
        _INPUTS[id(examples)] = response_inputs(examples, CROSSENCODER_READING)
    labels, groups, coverage, tasks = _INPUTS[id(examples)]
    return Data(X, np.zeros(len(X)), owner, labels, groups, coverage, tasks)


def fit_response_on(
    examples: list[GroundingExample],
    p: np.ndarray,
    X: np.ndarray,
    owner: np.ndarray,
    claims: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, object]:
    """A response model over ``CLAIM_EVIDENCE`` for the answers owning ``claims``, from the
    claim probabilities ``p`` (indexed like ``X``)."""
    data = _data_for(examples, X, owner)
    answers, rows, _ = response_rows(data, p, claims, CLAIM_EVIDENCE)
    return fit(rows, data.labels[answers], RESPONSE_C)


def response_probabilities(
    fitted: tuple[np.ndarray, np.ndarray, object],
    p: np.ndarray,
    X: np.ndarray,
    owner: np.ndarray,
    claims: np.ndarray,
    examples: list[GroundingExample],
) -> tuple[np.ndarray, list[float]]:
    """(answers, hallucination probabilities) of the answers owning ``claims`` under a response
    model of ``fit_response_on``, raised to a confident claim's probability."""
    data = _data_for(examples, X, owner)
    answers, rows, largest = response_rows(data, p, claims, CLAIM_EVIDENCE)
    q = predict(fitted, rows)  # type: ignore[arg-type]
    return answers, [with_confident_claim(a, b) for a, b in zip(q, largest, strict=True)]


def response_scores(p_claim: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """A response's hallucination probability: its least supported claim's."""
    out = np.zeros(n)
    np.maximum.at(out, owner, p_claim)
    return out
