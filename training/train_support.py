"""Fit the local support detector (ragtrace/evaluators/data/support_model.json and
support_response_model.json) on CPU, on the tuning part of the locked split.

    .venv/bin/python training/train_support.py [--data-dir ../shared/data] [--write]
        [--locked] [--leave-one-task-out]

Every response of RAGTruth (dev) and HaluEval QA (dev) is split into claims (sentences). A
RAGTruth claim is labelled unsupported when it overlaps an annotated hallucination span; a
HaluEval answer's claims take the answer's label. Features come from
``ragtrace.evaluators._faithfulness.features`` with the packaged MiniLM (cached under
training/results/). The claim model is a class-balanced logistic regression on them; the
response model, another, reads each answer's ``SHIPPED_RESPONSE`` features (its claims'
verdicts, coverage of the whole answer and its task, ``faithfulness.response``), learning from
out-of-fold claim probabilities (``_faith_fit``); its intercept then counts the training
answers' base rate at ``_faith_fit.PRIOR_WEIGHT`` (Summary's at its own weight,
``_faith_fit.SHIPPED_PRIOR_WEIGHTS``). One pair is fitted per calibration
(``faithfulness.response.CALIBRATIONS``: the task, with short answers to questions apart); the
short-answer pair's response model as ``SHIPPED_RESPONSE_RECIPES`` says (``SHIPPED``).

Only the tuning part of ``_labelled_data`` is used to choose and fit anything. Without flags the
script prints the 5-fold cross-validation grouped by source document inside the tuning part (both
models refitted in each fold). ``--write`` fits on the whole tuning part and writes both weights
files. ``--locked`` scores the locked part once with models fitted on the tuning part (run it
once per shipped change, never to choose). ``--leave-one-task-out`` fits without one task (its
RAGTruth rows, and HaluEval with QA) and scores that task's locked rows.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # data readers, split

import numpy as np
from _answer_readings import CLAIM_READINGS, READING, READINGS
from _faith_fit import (
    FOLDS,
    INNER_FOLDS,
    SHIPPED_PRIOR_WEIGHTS,
    Data,
    Fitted,
    ResponseRecipe,
    Scored,
    cross_validate,
    fit_by_task,
    fit_detector,
    fitted_probabilities,
)
from _labelled_data import (
    FAITH_TRAIN,
    GroundingExample,
    data_dir,
    faith_train,
    fingerprint,
    halueval,
    locked_groups,
    ragtruth,
)
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score, f1_score, roc_auc_score

from ragtrace._backends.embeddings import STATIC_MODEL, get_embedder
from ragtrace.evaluators._faithfulness.detector import (
    ShippedWeights,
    SupportDetector,
    featurise,
)
from ragtrace.evaluators._faithfulness.features import FEATURES
from ragtrace.evaluators._faithfulness.response import CLAIM_EVIDENCE, calibration, infer_task
from ragtrace.evaluators._text import split_sentences

RESULTS = Path(__file__).resolve().parent / "results"
FEATURE_CACHE = RESULTS / "support_features.pkl"
# The response model's features, and one pair of models per task, chosen by grouped CV inside
# the tuning part (_faith_select.py).
SHIPPED_RESPONSE: tuple[str, ...] = (*CLAIM_EVIDENCE, "word_coverage")
BY_TASK = True
# The short-answer pair reads the answer's missing numbers and names too, and its weights' signs
# are bounded (_faith_response_signs.py): fitted on HaluEval, whose true answers are a few words
# and invented ones fluent sentences, it had learned that an answer close to its passages is
# likelier invented, and flagged one-sentence answers copied from them.
SHORT_QA_RESPONSE: tuple[str, ...] = (*SHIPPED_RESPONSE, "missing_numbers", "missing_names")
SHIPPED_RESPONSE_RECIPES = {"short_qa": ResponseRecipe(SHORT_QA_RESPONSE, signed=True)}
# The shipped detector's recipe: keyword arguments of _faith_fit's cross_validate, fit_recipe
# and fitted_probabilities, with SHIPPED_RESPONSE as the response features.
SHIPPED = {
    "by_task": BY_TASK,
    "prior_weights": SHIPPED_PRIOR_WEIGHTS,
    "response_recipes": SHIPPED_RESPONSE_RECIPES,
}


def claims_with_labels(
    example: GroundingExample,
    reading: str = READING,
    supported: frozenset[str] = frozenset(),
) -> tuple[list[str], list[int]]:
    """Sentences of the response as ``reading`` reads it (``READINGS``), each labelled 1 when
    it overlaps a hallucinated span. A training-only set's claims (no spans) take the answer's
    label, except a sentence of ``supported`` (one that a faithful answer about the same
    document says word for word), which is 0."""
    response = READINGS[reading](example.response)
    claims = split_sentences(response)
    labels = []
    cursor = 0
    for claim in claims:
        start = response.find(claim, cursor)
        start = cursor if start < 0 else start
        end = start + len(claim)
        cursor = end
        if example.dataset in FAITH_TRAIN:
            labels.append(0 if normalised(claim) in supported else example.label)
        elif example.dataset == "halueval":
            labels.append(example.label)
        else:
            labels.append(int(any(s < end and e > start for s, e in example.spans)))
    return claims, labels


def normalised(sentence: str) -> str:
    """A sentence compared across answers: lower-cased, whitespace collapsed."""
    return " ".join(sentence.lower().split())


def faithful_sentences(examples: list[GroundingExample]) -> dict[str, frozenset[str]]:
    """Per group: the sentences of its faithful (label 0) answers, ``normalised``. A SummEdits
    summary edits one fact of a seed summary, so its other sentences are said by a faithful
    summary of the same document too: they are not the unsupported ones."""
    found: dict[str, set[str]] = {}
    for example in examples:
        if example.label == 0:
            sentences = split_sentences(READINGS[READING](example.response))
            found.setdefault(example.group, set()).update(normalised(c) for c in sentences)
    return {group: frozenset(sentences) for group, sentences in found.items()}


def build(
    examples: list[GroundingExample],
    cache: Path,
    embedding_model: str | None = None,
    reading: str = READING,
) -> dict[str, object]:
    """Feature rows of every claim, with claim labels and the owning example's index (cached;
    a cache of other ``FEATURES`` or another reading is rebuilt)."""
    if cache.exists():
        with cache.open("rb") as handle:
            cached = pickle.load(handle)
        if cached.get("features") == list(FEATURES) and cached.get("reading", "raw") == reading:
            return cached  # type: ignore[no-any-return]
    items, labels, lexical = [], [], []
    per_claim = CLAIM_READINGS.get(reading)  # claims split as written, words read past marks
    supported = faithful_sentences([e for e in examples if e.dataset in FAITH_TRAIN])
    for example in examples:
        claims, claim_labels = claims_with_labels(
            example, "raw" if per_claim else reading, supported.get(example.group, frozenset())
        )
        items.append((claims, list(example.passages)))
        labels.append(claim_labels)
        lexical.append([per_claim(c) if per_claim else c for c in claims])
    started = time.perf_counter()
    rows, y, owner = [], [], []
    for start in range(0, len(items), 64):
        chunk = featurise(
            items[start : start + 64],
            embedding_model=embedding_model,
            lexical=lexical[start : start + 64],
        )
        for offset, feats in enumerate(chunk):
            i = start + offset
            kept = [
                lab
                for c, w, lab in zip(items[i][0], lexical[i], labels[i], strict=True)
                if c.strip() and w.strip()
            ]
            for (_, _, row), lab in zip(feats, kept, strict=True):
                rows.append(row)
                y.append(lab)
                owner.append(i)
        print(f"  features {min(start + 64, len(items))}/{len(items)}", file=sys.stderr)
    built = {
        "X": np.asarray(rows),
        "y": np.asarray(y),
        "owner": np.asarray(owner),
        "features": list(FEATURES),
        "reading": reading,
    }
    print(f"  {len(rows)} claims in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    cache.parent.mkdir(parents=True, exist_ok=True)
    with cache.open("wb") as handle:
        pickle.dump(built, handle)
    return built


# The training-only sets (the data folder's TRAIN-DATA.md) in the claim models: per set, the
# weight of each of its claims and the task whose claim model takes them (``*``: every task's).
# Their answers never fit a response model (their base rates are not RAGTruth's), and 30% of
# each set's documents are held out (``split``) to score. Chosen by ``--choose-extra``
# (``EXTRA_CHOICES``) on the tuning part's grouped CV of RAGTruth and HaluEval.
ExtraConfig = dict[str, tuple[float, str]]
SHIPPED_EXTRA: ExtraConfig = {}
EXTRA_CHOICES: dict[str, ExtraConfig] = {
    "none": {},
    "own task, 0.25": {
        "summedits": (0.25, "summary"),
        "wice": (0.25, "summary"),
        "begin": (0.25, "qa"),
    },
    "own task, 1": {"summedits": (1.0, "summary"), "wice": (1.0, "summary"), "begin": (1.0, "qa")},
    "every task, 0.25": {name: (0.25, "*") for name in FAITH_TRAIN},
    "every task, 1": {name: (1.0, "*") for name in FAITH_TRAIN},
    "summedits, every task, 0.5": {"summedits": (0.5, "*")},
    "begin, every task, 0.5": {"begin": (0.5, "*")},
    "wice, every task, 0.5": {"wice": (0.5, "*")},
}


def with_extra_sets(
    base: Data,
    examples: list[GroundingExample],
    extra: list[GroundingExample],
    config: ExtraConfig,
    embedding_model: str | None = None,
) -> Data:
    """``base`` (the answers of ``examples``) with the training-only answers ``extra``
    appended after them (their features cached apart), the claims of their tuning part taking
    ``config``'s weights and tasks (``Data.extra``)."""
    cache = feature_cache(embedding_model)
    built = build(extra, cache.with_stem(cache.stem + "_extra"), embedding_model)
    labels, groups, coverage, tasks = response_inputs(extra)
    offset = len(examples)
    owner = np.asarray(built["owner"]) + offset  # type: ignore[call-overload]
    locked = locked_groups(extra)
    claims = np.flatnonzero([extra[i - offset].group not in locked for i in owner])
    names = [extra[i - offset].dataset for i in owner[claims]]
    weights = np.asarray([config.get(n, (0.0, "*"))[0] for n in names], dtype=float)
    targets = np.asarray([config.get(n, (0.0, "*"))[1] for n in names])
    start = len(base.y)
    return Data(
        np.vstack([base.X, built["X"]]),  # type: ignore[list-item]
        np.concatenate([base.y, built["y"]]),  # type: ignore[list-item]
        np.concatenate([base.owner, owner]),
        np.concatenate([base.labels, labels]),
        np.concatenate([base.groups, groups]),
        np.vstack([base.coverage, coverage]),
        [*base.tasks, *tasks],
        extra=(claims + start, weights, targets),
    )


def choose_extra(
    examples: list[GroundingExample],
    base: Data,
    extra: list[GroundingExample],
    seed: int | None = None,
) -> dict[str, dict]:
    """Each of ``EXTRA_CHOICES``' grouped CV inside the tuning part of RAGTruth and HaluEval
    (``GroupKFold``'s folds, or with ``seed`` the documents dealt by that shuffle)."""
    tuning, _ = parts(examples)
    out = {}
    for name, config in EXTRA_CHOICES.items():
        data = with_extra_sets(base, examples, extra, config)
        scored = cross_validate(data, tuning, SHIPPED_RESPONSE, seed=seed, **SHIPPED)
        out[name] = report(examples, scored)
        print(
            name,
            json.dumps({k: v["balanced_accuracy"] for k, v in out[name].items()}),
            json.dumps({k: v["auroc"] for k, v in out[name].items()}),
            flush=True,
        )
    return out


def extra_held_out(
    examples: list[GroundingExample], data: Data, extra: list[GroundingExample]
) -> dict[str, dict]:
    """The training-only sets' held-out documents, scored by the detector fitted on the tuning
    part (each answer by the pair of its inferred task)."""
    tuning, _ = parts(examples)
    _, held = parts(extra)
    scores = fitted_probabilities(data, tuning, held + len(examples), SHIPPED_RESPONSE, **SHIPPED)
    everything = [*examples, *extra]
    return {k: v for k, v in report(everything, scores).items() if k.split("/")[0] in FAITH_TRAIN}


def write_weights(
    path: Path,
    *,
    features: list[str],
    mean: np.ndarray,
    scale: np.ndarray,
    model: LogisticRegression,
    info: dict[str, object],
) -> None:
    """Write a logistic model in the format ``faithfulness.models.SupportModel`` reads."""
    weights = {
        "features": features,
        "mean": mean.round(6).tolist(),
        "scale": scale.round(6).tolist(),
        "coef": model.coef_[0].round(6).tolist(),
        "intercept": round(float(model.intercept_[0]), 6),
        "info": info,
    }
    path.write_text(json.dumps(weights, indent=1) + "\n", encoding="utf-8")


def response_inputs(
    examples: list[GroundingExample], reading: str = READING
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Per answer, read as ``reading`` reads it: label, group, ``response_coverage`` and its
    calibration, from the task inferred from its shape (as the evaluator infers it: no question
    for Summary and Data2txt rows) and its length (``faithfulness.response.calibration``)."""
    answers = [READINGS[reading](e.response) for e in examples]
    pairs = list(zip(answers, examples, strict=True))
    coverage = [SupportDetector.coverage(a, e.passages) for a, e in pairs]
    return (
        np.asarray([e.label for e in examples]),
        np.asarray([e.group for e in examples]),
        np.asarray(coverage, dtype=float),
        [calibration(infer_task(e.query, e.passages), a) for a, e in pairs],
    )


def feature_cache(embedding_model: str | None, reading: str = READING) -> Path:
    """Where the claims' features with ``embedding_model`` (None: the packaged MiniLM, named by
    the configured backend's model id, so int8 and float32 features never mix) and answers read
    as ``reading`` are kept."""
    suffix = f"_{embedding_model}" if embedding_model else f"_{get_embedder().model_id}"
    suffix += "" if reading == READING else f"_{reading}"
    return FEATURE_CACHE.with_stem(FEATURE_CACHE.stem + suffix)


def load(
    examples: list[GroundingExample], embedding_model: str | None = None, reading: str = READING
) -> Data:
    """Every claim's features (cached) and every answer's response inputs, answers read as
    ``reading`` reads them."""
    built = build(examples, feature_cache(embedding_model, reading), embedding_model, reading)
    labels, groups, coverage, tasks = response_inputs(examples, reading)
    return Data(built["X"], built["y"], built["owner"], labels, groups, coverage, tasks)  # type: ignore[arg-type]


def report(
    examples: list[GroundingExample], scores: np.ndarray | Scored, threshold: float = 0.5
) -> dict:
    """Balanced accuracy, hallucinated-class F1 and AUROC per (dataset, task) and overall, over
    the answers with a score (NaN: not scored here; an answer without claims scores 0). The
    verdict is ``scores > threshold``, or for ``Scored`` each answer's own threshold."""
    if isinstance(scores, Scored):
        cuts = np.nan_to_num(scores.thresholds, nan=0.5)
        scores = scores.values
    else:
        cuts = np.full(len(scores), threshold)
    out = {}
    keys = [*sorted({(e.dataset, e.task) for e in examples}), ("ragtruth", "all")]
    scored = set(np.flatnonzero(~np.isnan(scores)).tolist())
    for dataset, task in keys:
        idx = [
            i
            for i, e in enumerate(examples)
            if e.dataset == dataset and (task == "all" or e.task == task) and i in scored
        ]
        if not idx:
            continue
        y = np.asarray([examples[i].label for i in idx])
        s = np.nan_to_num(scores[idx], nan=0.0)
        pred = (s > cuts[idx]).astype(int)
        out[f"{dataset}/{task}"] = {
            "n": len(idx),
            "balanced_accuracy": round(float(balanced_accuracy_score(y, pred)), 3),
            "f1_hallucinated": round(float(f1_score(y, pred)), 3),
            "auroc": round(float(roc_auc_score(y, s)), 3) if len(set(y.tolist())) == 2 else None,
        }
    return out


def parts(examples: list[GroundingExample]) -> tuple[np.ndarray, np.ndarray]:
    """(tuning answers, locked answers) as index arrays."""
    locked = locked_groups(examples)
    is_locked = np.asarray([e.group in locked for e in examples])
    return np.flatnonzero(~is_locked), np.flatnonzero(is_locked)


def leave_one_task_out(
    examples: list[GroundingExample], data: Data, names: tuple[str, ...]
) -> dict[str, dict]:
    """Per RAGTruth task: fitted on the tuning answers of the other tasks (HaluEval counts as
    QA), pooled (the task has no model of its own then), scored on the left-out task's locked
    answers."""
    tuning, locked = parts(examples)
    out = {}
    for task in ("QA", "Summary", "Data2txt"):
        train = np.asarray([i for i in tuning if examples[i].task != task])
        test = np.asarray(
            [i for i in locked if examples[i].task == task and examples[i].dataset == "ragtruth"]
        )
        scores = fitted_probabilities(
            data, train, test, names, by_task=BY_TASK, response_recipes=SHIPPED_RESPONSE_RECIPES
        )
        out[task] = report(examples, scores)[f"ragtruth/{task}"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument(
        "--write", action="store_true", help="fit on the tuning part, write weights"
    )
    parser.add_argument("--locked", action="store_true", help="score the locked part (once)")
    parser.add_argument("--leave-one-task-out", action="store_true")
    parser.add_argument(
        "--choose-extra",
        action="store_true",
        help="grouped CV in the tuning part of each way to add the training-only sets",
    )
    parser.add_argument(
        "--embedding-model",
        choices=[STATIC_MODEL],
        help="similarity features from this embedder instead of the packaged MiniLM",
    )
    parser.add_argument(
        "--fold-seed",
        type=int,
        help="with --choose-extra: deal the documents into folds by this shuffle",
    )
    parser.add_argument(
        "--extra-held-out",
        action="store_true",
        help="score the training-only sets' held-out documents (without the locked part)",
    )
    parser.add_argument(
        "--extra-config",
        choices=list(EXTRA_CHOICES),
        help="measure one of EXTRA_CHOICES instead of SHIPPED_EXTRA (not with --write)",
    )
    args = parser.parse_args()
    if args.extra_config and args.write:
        parser.error("--write fits SHIPPED_EXTRA; --extra-config only measures")
    folder = data_dir(args.data_dir)
    examples = ragtruth(folder) + halueval(folder)
    data = load(examples, args.embedding_model)
    extra = faith_train(folder)
    if args.choose_extra:
        chosen = choose_extra(examples, data, extra, args.fold_seed)
        RESULTS.mkdir(parents=True, exist_ok=True)
        name = "" if args.fold_seed is None else f"_{args.fold_seed}"
        (RESULTS / f"support_choose_extra{name}.json").write_text(
            json.dumps(chosen, indent=1) + "\n"
        )
        return
    config = EXTRA_CHOICES[args.extra_config] if args.extra_config else SHIPPED_EXTRA
    # The sets' features are only built where they are read: a fit that takes them, or a
    # measurement of their held-out documents (--locked with the packaged MiniLM).
    with_sets = bool(config) or args.extra_held_out or (args.locked and not args.embedding_model)
    if with_sets:
        data = with_extra_sets(data, examples, extra, config, args.embedding_model)
    tuning, locked = parts(examples)
    print(json.dumps({"split": fingerprint(examples), "extra_split": fingerprint(extra)}))
    cv = report(examples, cross_validate(data, tuning, SHIPPED_RESPONSE, **SHIPPED))
    print("tuning part, grouped 5-fold CV:", json.dumps(cv, indent=1))
    results = {"split": fingerprint(examples), "tuning_cv": cv}
    if args.locked:
        scores = fitted_probabilities(data, tuning, locked, SHIPPED_RESPONSE, **SHIPPED)
        results["locked"] = report(examples, scores)
        print("locked part, fitted on the tuning part:", json.dumps(results["locked"], indent=1))
        before = fitted_probabilities(data, tuning, locked, CLAIM_EVIDENCE)
        results["locked_previous_recipe"] = report(examples, before)
        print(
            "for reference, the previous recipe (one shared pair, claim evidence only), same "
            "parts:",
            json.dumps(results["locked_previous_recipe"], indent=1),
        )
    if with_sets and (args.locked or args.extra_held_out):
        results["extra_held_out"] = extra_held_out(examples, data, extra)
        print(
            "training-only sets, held-out documents:",
            json.dumps(results["extra_held_out"], indent=1),
        )
    if args.leave_one_task_out:
        results["leave_one_task_out"] = leave_one_task_out(examples, data, SHIPPED_RESPONSE)
        print("leave one task out:", json.dumps(results["leave_one_task_out"], indent=1))
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = f"_{args.embedding_model}" if args.embedding_model else ""
    if args.extra_config:
        suffix += "_" + args.extra_config.replace(", ", "_").replace(" ", "_")
    (RESULTS / f"train_support{suffix}.json").write_text(json.dumps(results, indent=1) + "\n")
    if args.write:
        write(examples, data, tuning, cv, args.embedding_model)


def write(
    examples: list[GroundingExample],
    data: Data,
    tuning: np.ndarray,
    cv: dict,
    embedding_model: str | None,
) -> None:
    """Fit on the tuning part and write the shipped weights: the shared claim and response
    models (every task together; what other evaluators' ``claim_support`` uses) and one pair
    per task (``support_tasks.json``, what faithfulness uses), for the embedder the features
    came from."""
    shipped = ShippedWeights.for_embedder(embedding_model)
    embedder_name = embedding_model or "packaged MiniLM (all-MiniLM-L6-v2, int8 ONNX)"
    claims = data.claims_of(tuning)
    info = {
        "trained_on": "RAGTruth test (dev half) + HaluEval QA (dev half) of the labelled data: "
        "the tuning part of benchmarks/_labelled_data.py",
        "embedding_model": embedder_name,
        "split": fingerprint(examples),
        "claims": len(claims),
        "cross_validation": f"{FOLDS}-fold inside the tuning part, grouped by source document",
        "inner_folds": INNER_FOLDS,
    }
    pooled = fit_detector(data, claims, SHIPPED_RESPONSE)
    prior = calibration_info(pooled)
    shipped.claim.write_text(json.dumps(weights_dict(pooled, "claim", info), indent=1) + "\n")
    shipped.response.write_text(
        json.dumps(weights_dict(pooled, "response", {**info, **prior}), indent=1) + "\n"
    )
    tasks = {
        task: {
            "claim": weights_dict(f, "claim", {}),
            "response": weights_dict(
                f,
                "response",
                calibration_info(f),
            ),
        }
        for task, f in fit_by_task(
            data,
            tuning,
            SHIPPED_RESPONSE,
            SHIPPED_PRIOR_WEIGHTS,
            response_recipes=SHIPPED_RESPONSE_RECIPES,
        ).items()
    }
    body = {"tasks": tasks, "info": {**info, "cv_response_level": cv}}
    shipped.tasks.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {shipped.claim}, {shipped.response} and {shipped.tasks}")


def calibration_info(fitted: Fitted) -> dict[str, float]:
    """What a response model's ``info`` records of its calibration (``_faith_fit``): the base
    rate, the weights the value and the verdict give it, the balanced cut, and
    ``verdict_threshold``, the hallucination probability above which the detector flags."""
    return {
        "base_rate": round(fitted.base_rate, 4),
        "value_prior_weight": fitted.value_prior_weight,
        "prior_weight": fitted.prior_weight,
        "balanced_cut": fitted.balanced_cut,
        "verdict_threshold": round(fitted.threshold, 4),
    }


def weights_dict(fitted: Fitted, which: str, info: dict[str, object]) -> dict[str, object]:
    """One model of a fitted pair in the format ``SupportModel.from_dict`` reads."""
    mean, scale, model = fitted.claim if which == "claim" else fitted.response
    return {
        "features": list(FEATURES if which == "claim" else fitted.names),
        "mean": mean.round(6).tolist(),
        "scale": scale.round(6).tolist(),
        "coef": model.coef_[0].round(6).tolist(),
        "intercept": round(float(model.intercept_[0]), 6),
        "info": info,
    }


if __name__ == "__main__":
    main()
