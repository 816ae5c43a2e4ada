"""Fitting and scoring the support detector's two models, for any set of training answers.

``Data`` holds every claim's feature row and label, every answer's label, coverage and task.
``fit_detector(data, claims)`` fits the claim model on those claims and the response model on
their answers (from out-of-fold claim probabilities, ``INNER_FOLDS`` folds grouped by document,
so it learns from probabilities like those the claim model gives on unseen answers);
``apply`` scores other answers with a fitted pair; ``cross_validate`` does both fold by fold.
With ``by_task``, each calibration (``faithfulness.response.CALIBRATIONS``: the task inferred from
the answer's shape, short answers to questions apart) gets its own pair, fitted on its answers
only, as the shipped detector has.

The response model is class-balanced. Its value is calibrated: the intercept moves by
``value_prior_weight`` (``VALUE_PRIOR_WEIGHT``, 1) times the log-odds of its training answers'
base rate, so the value is a probability on one scale for every task (the pooled ranking; an
hourly mean that estimates the share of hallucinated answers). The verdict is a threshold on
that value, one per pair (``Fitted.threshold``): the balanced verdict's cut (0.5, or where the
cut that gives its training answers the best balanced accuracy beats 0.5 by ``cut_gain`` or
more, that cut: ``CUT_MIN_GAIN``, ``balanced_cut``; the short-answer pair's scores are skewed,
its best cut about 0.25), moved by ``prior_weight`` times the base rate's log-odds (0:
balanced, 1: the calibrated value at 0.5; ``PRIOR_WEIGHT`` and ``SHIPPED_PRIOR_WEIGHTS`` are
shipped), which on the value is the cut moved by ``value_prior_weight - prior_weight`` times
those log-odds. Until 2026-11-26 the cut moved the value's intercept instead (so the
short-answer pair's values read about 0.1 high on average: ``_faith_value_calibration.py``);
the verdicts are the same either way.
Everything here is plain numpy and scikit-learn on cached features: seconds, not minutes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from _faith_data import IDENTITY, Data, Fitted, ResponseRecipe, Scored
from _faith_learners import (
    fit_claim,
    fit_rows,
    log_odds,
    predict,
)
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

from ragtrace.evaluators._faithfulness.detector import with_confident_claim
from ragtrace.evaluators._faithfulness.response import (
    CALIBRATIONS,
    RESPONSE_FEATURES,
    pick_pair,
    response_features,
    select,
)

FOLDS = 5
INNER_FOLDS = 4
PRIOR_WEIGHT = 0.5  # the verdict's; chosen by _faith_select.py on the tuning part
# Calibrations whose verdict counts its base rate at another weight (the shipped detector's):
# Summary's, chosen over shuffled folds of the tuning part by _faith_verdict_weights.py.
SHIPPED_PRIOR_WEIGHTS: dict[str, float] = {"summary": 0.25}
VALUE_PRIOR_WEIGHT = 1.0  # the value's: calibrated (_faith_select.py, fourth table)
CUT_MIN_GAIN = 0.02  # likewise; None: the verdict cut stays at 0.5
SCALING_C = 100.0  # the value scaling's two parameters: barely regularised


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


Learner = str | Mapping[str, str]
FOREIGN = "+foreign"


def fit_claim_model(data: Data, claims: np.ndarray, learner: Learner = "linear") -> Any:
    """The claim model of ``claims`` (``_faith_learners.fit_claim``). ``learner`` is a learner's
    name, or a mapping from task (``qa``, ``summary``, ``data2txt``) to one, read when all of
    ``claims`` belong to one task (else its ``""`` entry; "linear" where it has none). A name
    ending in ``FOREIGN`` also trains on ``data.foreign``'s rows hosted by the claims' answers,
    labelled unsupported."""
    if not isinstance(learner, str):
        tasks = {CALIBRATIONS.get(data.tasks[i], data.tasks[i]) for i in data.owner[claims]}
        learner = learner.get(tasks.pop() if len(tasks) == 1 else "", "linear")
    X, y = data.X[claims], data.y[claims]
    weight = None
    if data.extra is not None:
        X, y, weight = with_extra(data, claims, X, y)
    if learner.endswith(FOREIGN):
        learner = learner.removesuffix(FOREIGN)
        if data.foreign is None:
            raise ValueError("a +foreign learner needs Data.foreign")
        rows, hosts = data.foreign
        taken = rows[np.isin(hosts, data.owner[claims])]
        X, y = np.vstack([X, taken]), np.concatenate([y, np.ones(len(taken), dtype=y.dtype)])
        if weight is not None:
            weight = np.concatenate([weight, np.ones(len(taken))])
    return fit_claim(X, y, learner, weight)


def with_extra(
    data: Data, claims: np.ndarray, X: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``X`` and ``y`` (the rows of ``claims``) with ``data.extra``'s claims for the task of
    ``claims`` (every extra claim when ``claims`` span several tasks) appended, and every
    row's weight (1 for ``claims``')."""
    assert data.extra is not None
    indices, weights, targets = data.extra
    tasks = {CALIBRATIONS.get(data.tasks[i], data.tasks[i]) for i in data.owner[claims]}
    if len(tasks) == 1:
        task = tasks.pop()
        keep = (weights > 0) & ((targets == task) | (targets == "*"))
    else:
        keep = weights > 0
    taken = indices[keep]
    return (
        np.vstack([X, data.X[taken]]),
        np.concatenate([y, data.y[taken]]),
        np.concatenate([np.ones(len(y)), weights[keep]]),
    )


def out_of_fold(
    data: Data, claims: np.ndarray, folds: int, learner: Learner = "linear"
) -> np.ndarray:
    """Claim probabilities for ``claims``, each from a claim model that never saw its document;
    returned indexed like ``data.X`` (zero elsewhere)."""
    p = np.zeros(len(data.y))
    for train, test in GroupKFold(n_splits=folds).split(
        claims, data.y[claims], data.groups[data.owner[claims]]
    ):
        p[claims[test]] = predict(
            fit_claim_model(data, claims[train], learner), data.X[claims[test]]
        )
    return p


def fit_response(
    data: Data,
    p: np.ndarray,
    claims: np.ndarray,
    names: tuple[str, ...],
    prior_weight: float,
    cut_gain: float | None = CUT_MIN_GAIN,
    value_prior_weight: float = VALUE_PRIOR_WEIGHT,
    signed: bool = False,
) -> tuple[tuple[np.ndarray, np.ndarray, LogisticRegression], float, float]:
    """(the response model of the answers owning ``claims``, from claim probabilities ``p``
    (with ``signed``, its weights' signs bounded by ``_faith_learners.RESPONSE_SIGNS``),
    its intercept moved by ``value_prior_weight`` times the log-odds of their base rate; that
    rate; the balanced model's verdict cut, ``best_cut``). ``Fitted.threshold`` is the verdict's
    threshold on that value: the cut moves the verdict, not the value, which stays calibrated."""
    answers, rows, _ = response_rows(data, p, claims, names)
    signed_names = names if signed else None
    return fit_rows(rows, data.labels[answers], cut_gain, value_prior_weight, signed_names)


def fit_scaling(
    data: Data,
    p: np.ndarray,
    claims: np.ndarray,
    names: tuple[str, ...],
    cut_gain: float | None,
    value_prior_weight: float,
) -> tuple[float, float]:
    """(slope, intercept) of a logistic fit of the labels of the answers owning ``claims`` on
    the log-odds of their values out of fold: each from a response model fitted on the other
    documents' answers (``INNER_FOLDS`` folds), from the out-of-fold claim probabilities ``p``.
    ``IDENTITY`` where the fit is not increasing."""
    answers, rows, largest = response_rows(data, p, claims, names)
    labels = data.labels[answers]
    values = np.zeros(len(answers))
    folds = GroupKFold(n_splits=INNER_FOLDS).split(rows, labels, data.groups[answers])
    for train, test in folds:
        response, _, _ = fit_rows(rows[train], labels[train], cut_gain, value_prior_weight)
        q = predict(response, rows[test])
        values[test] = [with_confident_claim(a, b) for a, b in zip(q, largest[test], strict=True)]
    model = LogisticRegression(C=SCALING_C, max_iter=1000)
    model.fit(log_odds(values)[:, None], labels)
    slope, intercept = float(model.coef_[0][0]), float(model.intercept_[0])
    return (slope, intercept) if slope > 0 else IDENTITY


def fit_pairs(
    data: Data,
    claims: np.ndarray,
    names: tuple[str, ...] = RESPONSE_FEATURES,
    prior_weight: float = PRIOR_WEIGHT,
    *,
    by_calibration: bool = False,
    cut_gain: float | None = CUT_MIN_GAIN,
    value_prior_weight: float = VALUE_PRIOR_WEIGHT,
    prior_weights: Mapping[str, float] | None = None,
    scale_values: bool = False,
    learner: Learner = "linear",
    response_recipes: Mapping[str, ResponseRecipe] | None = None,
) -> dict[str, Fitted]:
    """One claim model fitted on ``claims`` and, from its out-of-fold probabilities, one
    response model for their answers (key ``""``) or, with ``by_calibration``, one for each
    calibration among them (``short_qa`` answers share the ``qa`` claim model). Each pair's
    verdict counts the base rate at ``prior_weight``, or at its calibration's weight in
    ``prior_weights`` (``SHIPPED_PRIOR_WEIGHTS`` for the shipped detector). Each response model
    reads ``names``, or its calibration's ``response_recipes`` entry (features and signs;
    ``SHIPPED_RESPONSE_RECIPES`` in train_support.py). With ``scale_values`` each pair's value
    also gets a ``fit_scaling``; ``learner`` is the claim model's (``fit_claim_model``)."""
    claim_model = fit_claim_model(data, claims, learner)
    p = out_of_fold(data, claims, INNER_FOLDS, learner)
    keys = np.asarray(data.tasks)[data.owner[claims]]
    subsets = (
        {key: claims[keys == key] for key in sorted(set(keys.tolist()))}
        if by_calibration
        else {"": claims}
    )
    out = {}
    for key, subset in subsets.items():
        weight = (prior_weights or {}).get(key, prior_weight)
        recipe = (response_recipes or {}).get(key, ResponseRecipe(names))
        response, base_rate, cut = fit_response(
            data, p, subset, recipe.names, weight, cut_gain, value_prior_weight, recipe.signed
        )
        scaling = (
            fit_scaling(data, p, subset, recipe.names, cut_gain, value_prior_weight)
            if scale_values
            else IDENTITY
        )
        out[key] = Fitted(
            claim_model, response, recipe.names, base_rate, weight, cut, value_prior_weight, scaling
        )
    return out


def fit_detector(
    data: Data,
    claims: np.ndarray,
    names: tuple[str, ...] = RESPONSE_FEATURES,
    prior_weight: float = PRIOR_WEIGHT,
    learner: Learner = "linear",
    response_recipes: Mapping[str, ResponseRecipe] | None = None,
) -> Fitted:
    """Both models fitted on ``claims`` (and their answers), the response model on ``names``
    (or as ``response_recipes[""]`` says)."""
    return fit_pairs(
        data, claims, names, prior_weight, learner=learner, response_recipes=response_recipes
    )[""]


def apply(data: Data, fitted: Fitted, claims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(answers owning ``claims``, their hallucination probabilities) under ``fitted``, raised to
    a confident claim's probability as the detector does; ``fitted.threshold`` is their verdict's
    threshold."""
    p = np.zeros(len(data.y))
    p[claims] = predict(fitted.claim, data.X[claims])
    answers, rows, largest = response_rows(data, p, claims, fitted.names)
    q = predict(fitted.response, rows)
    raised = np.asarray([with_confident_claim(a, b) for a, b in zip(q, largest, strict=True)])
    return answers, fitted.scaled(raised)


def answers_by_task(
    data: Data, answers: np.ndarray, *, base: bool = False
) -> dict[str, np.ndarray]:
    """``answers`` by calibration, or with ``base`` by the task each calibration belongs to."""
    tasks = np.asarray([CALIBRATIONS.get(t, t) if base else t for t in data.tasks])[answers]
    return {t: answers[tasks == t] for t in sorted(set(tasks.tolist()))}


def _score(data: Data, fitted: dict[str, Fitted], claims: np.ndarray, out: Scored) -> None:
    """Write into ``out`` the probabilities and thresholds of the answers owning ``claims``,
    each under its calibration's pair (the ``""`` pair where it has none)."""
    answers = np.unique(data.owner[claims])
    for key, subset in answers_by_task(data, answers).items():
        pair = pick_pair(fitted, key, fitted.get(""))
        assert pair is not None, f"no pair fitted for {key!r} and no shared one"
        scored, probabilities = apply(data, pair, data.claims_of(subset))
        out.values[scored] = probabilities
        out.thresholds[scored] = pair.threshold


def group_folds(groups: np.ndarray, seed: int | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """``FOLDS`` (train, test) index pairs over rows of ``groups``, every document's rows in one
    fold: ``GroupKFold``'s assignment (seed None), or the documents dealt into folds by a
    shuffle with ``seed`` (another equally valid split: how far a figure moves between such
    splits is the noise of the fold assignment)."""
    groups = np.asarray(groups)
    if seed is None:
        rows = np.arange(len(groups))
        return list(GroupKFold(n_splits=FOLDS).split(rows, rows, groups))
    names = np.unique(groups)
    order = np.random.default_rng(seed).permutation(len(names))
    fold_of = dict(zip(names.tolist(), (order % FOLDS).tolist(), strict=True))
    folds = np.asarray([fold_of[g] for g in groups.tolist()])
    return [(np.flatnonzero(folds != k), np.flatnonzero(folds == k)) for k in range(FOLDS)]


def cross_validate(
    data: Data,
    answers: np.ndarray,
    names: tuple[str, ...] = RESPONSE_FEATURES,
    *,
    by_task: bool = False,
    prior_weight: float = PRIOR_WEIGHT,
    cut_gain: float | None = CUT_MIN_GAIN,
    value_prior_weight: float = VALUE_PRIOR_WEIGHT,
    seed: int | None = None,
    prior_weights: Mapping[str, float] | None = None,
    scale_values: bool = False,
    learner: Learner = "linear",
    response_recipes: Mapping[str, ResponseRecipe] | None = None,
) -> Scored:
    """Out-of-fold hallucination probabilities and verdict thresholds of ``answers``
    (``FOLDS`` folds grouped by document, ``group_folds(seed)``, both models refitted in each;
    with ``by_task`` a claim model per task and a response model per calibration); NaN
    elsewhere."""
    out = Scored.empty(len(data.labels))
    subsets = answers_by_task(data, answers, base=True).values() if by_task else [answers]
    for subset in subsets:
        claims = data.claims_of(subset)
        for train, test in group_folds(data.groups[data.owner[claims]], seed):
            fitted = fit_pairs(
                data,
                claims[train],
                names,
                prior_weight,
                by_calibration=by_task,
                cut_gain=cut_gain,
                value_prior_weight=value_prior_weight,
                prior_weights=prior_weights,
                scale_values=scale_values,
                learner=learner,
                response_recipes=response_recipes,
            )
            _score(data, fitted, claims[test], out)
    return out


def fit_by_task(
    data: Data,
    train: np.ndarray,
    names: tuple[str, ...] = RESPONSE_FEATURES,
    prior_weights: Mapping[str, float] | None = None,
    scale_values: bool = False,
    learner: Learner = "linear",
    response_recipes: Mapping[str, ResponseRecipe] | None = None,
) -> dict[str, Fitted]:
    """One fitted pair per calibration: the claim model of its task, the response model of
    its own ``train`` answers (verdict weights, value scaling and recipes as ``fit_pairs``)."""
    out: dict[str, Fitted] = {}
    for subset in answers_by_task(data, train, base=True).values():
        claims = data.claims_of(subset)
        out.update(
            fit_pairs(
                data,
                claims,
                names,
                by_calibration=True,
                prior_weights=prior_weights,
                scale_values=scale_values,
                learner=learner,
                response_recipes=response_recipes,
            )
        )
    return out


def fit_recipe(
    data: Data,
    train: np.ndarray,
    names: tuple[str, ...] = RESPONSE_FEATURES,
    *,
    by_task: bool = False,
    prior_weights: Mapping[str, float] | None = None,
    scale_values: bool = False,
    learner: Learner = "linear",
    response_recipes: Mapping[str, ResponseRecipe] | None = None,
) -> dict[str, Fitted]:
    """The pairs a detector fitted on the ``train`` answers holds: the one fitted on all of them
    (key ``""``) and, with ``by_task``, one per calibration (``score_answers`` reads them)."""
    claims = data.claims_of(train)
    fitted = {
        "": fit_detector(data, claims, names, learner=learner, response_recipes=response_recipes)
    }
    if by_task:
        fitted.update(
            fit_by_task(data, train, names, prior_weights, scale_values, learner, response_recipes)
        )
    return fitted


def score_answers(data: Data, fitted: dict[str, Fitted], answers: np.ndarray) -> Scored:
    """Hallucination probabilities and verdict thresholds of ``answers`` under ``fitted``
    (``fit_recipe``; an answer of a calibration without a pair gets its task's, else the
    ``""`` pair); NaN elsewhere."""
    out = Scored.empty(len(data.labels))
    _score(data, fitted, data.claims_of(answers), out)
    return out


def fitted_probabilities(
    data: Data,
    train: np.ndarray,
    test: np.ndarray,
    names: tuple[str, ...] = RESPONSE_FEATURES,
    **recipe: Any,
) -> Scored:
    """Hallucination probabilities and verdict thresholds of the ``test`` answers from models
    fitted on the ``train`` answers (``fit_recipe`` with ``recipe``); NaN elsewhere."""
    return score_answers(data, fit_recipe(data, train, names, **recipe), test)
