"""The opt-in cross-encoder on the locked split: trained on the tuning part only, scored once.

    cd benchmarks && ../.venv/bin/python crossencoder_locked.py [--data-dir ../shared/data]
        [--device cpu] [--threads 2] [--config 4:64:1:2e-4] [--bundle DIR | --train-bundle DIR
        | --logits FILE]

The shipped cross-encoder (``train_crossencoder.py``) was trained before the locked split
existed, on rows that are now in the locked part, so it has no locked figure. This script
retrains the same recipe on the tuning part of ``_split`` only and measures, on the same parts:

- ``default``: the shipped feature recipe (``train_support.py``: a claim and a response model
  per task, word coverage), refitted here on these claim rows (a plumbing check: it must give
  the locked figures BENCHMARKS.md reports);
- ``default + crossencoder``: the same recipe with the cross-encoder's logit as an eleventh
  claim feature (the tuning claims get out-of-fold logits from 5 folds grouped by document
  inside the tuning part; the locked claims get the logits of a cross-encoder trained on the
  whole tuning part);
- ``crossencoder path``: what ``detector="crossencoder"`` computes (the stacked claim model
  and one claim-evidence response model for every task).

For each: 5-fold CV grouped by document inside the tuning part (the figures to choose by), and
the locked part (fitted on the tuning part). Claim pairs come from ``train_crossencoder.py``'s
cache (built here if missing). Nothing is written to ``ragtrace/``: the weights it trains are
measured, not shipped. Results go to ``benchmarks/results/crossencoder_locked.json``.

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
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _datasets import data_dir, halueval, ragtruth
from _faith_fit import Data, cross_validate, fit, fitted_probabilities
from _split import fingerprint, locked_groups
from train_crossencoder import (
    DEFAULT_CONFIG,
    RESULTS,
    Trainer,
    build_pairs,
    response_oof,
    stacked_oof,
    tokenize,
)
from train_support import (
    SHIPPED_RESPONSE,
    fit_response_on,
    report,
    response_inputs,
    response_probabilities,
)

OUT = RESULTS / "crossencoder_locked.json"
FOLDS = 5


def tuning_folds(
    claims: np.ndarray, groups: np.ndarray, y: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """5 folds of ``claims`` (global claim indices) grouped by their answers' documents."""
    from sklearn.model_selection import GroupKFold

    split = GroupKFold(n_splits=FOLDS).split(claims, y[claims], groups[claims])
    return [(claims[a], claims[b]) for a, b in split]


def crossencoder_logits(
    trainer: Trainer,
    y: np.ndarray,
    splits: list[tuple[np.ndarray, np.ndarray]],
    tuning: np.ndarray,
    locked: np.ndarray,
    config: tuple[int, float, int],
) -> np.ndarray:
    """Out-of-fold logits for the tuning claims; the locked claims' from a cross-encoder
    trained on every tuning claim."""
    epochs, lr, batch = config
    logit = np.zeros(len(y))
    for number, (train, test) in enumerate(splits, 1):
        started = time.perf_counter()
        params = trainer.fit(train, y, epochs, lr, batch)
        logit[test] = trainer.predict(params, test)
        print(f"  fold {number}/{FOLDS}: {time.perf_counter() - started:.0f} s", flush=True)
    params = trainer.fit(tuning, y, epochs, lr, batch)
    logit[locked] = trainer.predict(params, locked)
    return logit


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
    mean, scale, model = fit(X[tuning], y[tuning])
    p[locked] = model.predict_proba((X[locked] - mean) / scale)[:, 1]
    fitted = fit_response_on(examples, p, X, owner, tuning)
    answers, values = response_probabilities(fitted, p, X, owner, locked, examples)
    out = np.full(len(examples), np.nan)
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


def splits_of(fold: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) claim indices of each fold."""
    tuning = np.flatnonzero(fold >= 0)
    return [
        (tuning[fold[tuning] != k], np.flatnonzero(fold == k)) for k in range(int(fold.max()) + 1)
    ]


def write_bundle(
    folder: Path, pairs: dict[str, Any], split: dict[str, np.ndarray], tokens: int
) -> None:
    """What training needs, small enough to travel to a GPU machine: the claims' tokens with ids
    renumbered to the vocabulary they use, labels, folds, and the base model in fp16 with only
    those vocabulary rows."""
    from safetensors.numpy import load_file, save_file

    from ragtrace.backends.embeddings import _packaged_folder

    base = _packaged_folder()
    encoded = tokenize(pairs, base, tokens)
    used, ids = np.unique(encoded["ids"], return_inverse=True)
    state = load_file(str(base / "model.safetensors"))
    state["embeddings.word_embeddings.weight"] = state["embeddings.word_embeddings.weight"][used]
    (folder / "base").mkdir(parents=True, exist_ok=True)
    save_file(
        {k: v.astype(np.float16) for k, v in state.items()},
        str(folder / "base" / "model.safetensors"),
    )
    np.savez_compressed(
        folder / "tokens.npz",
        ids=ids.reshape(encoded["ids"].shape).astype(np.int32),
        types=encoded["types"].astype(np.int8),
        mask=encoded["mask"].astype(np.int8),
        y=pairs["y"],
        fold=split["fold"],
        locked=split["locked"],
        tokens=np.asarray(tokens),
    )


def train_bundle(folder: Path, device: str, config: str, batch: int) -> np.ndarray:
    """The cross-encoder's logits for every claim of a bundle (see ``crossencoder_logits``)."""
    saved = np.load(folder / "tokens.npz")
    layers, tokens, epochs, lr = config.split(":")
    if int(tokens) != int(saved["tokens"]):
        raise SystemExit(f"the bundle holds {int(saved['tokens'])} tokens a pair, not {tokens}")
    encoded = {k: saved[k].astype(np.int64) for k in ("ids", "types", "mask")}
    trainer = Trainer(folder / "base", encoded, int(layers), device)
    fold = saved["fold"]
    return crossencoder_logits(
        trainer,
        saved["y"],
        splits_of(fold),
        np.flatnonzero(fold >= 0),
        saved["locked"],
        (int(epochs), float(lr), batch),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="layers:tokens:epochs:lr")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--bundle", type=Path, help="write a training bundle here and stop")
    parser.add_argument("--train-bundle", type=Path, help="train from a bundle (no data needed)")
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
        logits = train_bundle(args.train_bundle, args.device, args.config, args.batch)
        np.save(args.logits or args.train_bundle / "logits.npy", logits)
        print(f"trained in {time.perf_counter() - started:.0f} s")
        return
    examples = ragtruth(data_dir(args.data_dir)) + halueval(data_dir(args.data_dir))
    pairs = build_pairs(examples)
    if [m[0] for m in pairs["meta"]] != [e.id for e in examples]:
        raise SystemExit("the claim-pair cache was built from other data: delete it and rerun")
    X, y, owner = pairs["X"], pairs["y"], pairs["owner"]
    split = parts(examples, owner, y)
    tokens = int(args.config.split(":")[1])
    if args.bundle:
        write_bundle(args.bundle, pairs, split, tokens)
        print(f"wrote {args.bundle}")
        return
    if args.logits:
        logit = np.load(args.logits)
    else:
        with tempfile.TemporaryDirectory() as folder:
            write_bundle(Path(folder), pairs, split, tokens)
            logit = train_bundle(Path(folder), args.device, args.config, args.batch)
    print(table(measure(examples, X, y, owner, split, logit, args)))
    print(f"wrote {OUT} ({time.perf_counter() - started:.0f} s)")


def measure(
    examples: list[Any],
    X: np.ndarray,
    y: np.ndarray,
    owner: np.ndarray,
    split: dict[str, np.ndarray],
    logit: np.ndarray,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Tuning CV and locked figures of the three detectors; written to ``OUT``."""
    from sklearn.metrics import roc_auc_score

    tuning, locked = split["tuning"], split["locked"]
    labels, groups, coverage, tasks = response_inputs(examples)
    results: dict[str, Any] = {
        "split": fingerprint(examples),
        "config": args.config,
        "device": args.device,
        "claim_auroc": {
            "tuning_out_of_fold": round(float(roc_auc_score(y[tuning], logit[tuning])), 3),
            "locked": round(float(roc_auc_score(y[locked], logit[locked])), 3),
        },
    }
    stacked = np.column_stack([X, logit])
    for name, rows in (("default", X), ("default + crossencoder", stacked)):
        data = Data(rows, y, owner, labels, groups, coverage, tasks)
        cv = cross_validate(data, split["tuning_answers"], SHIPPED_RESPONSE, by_task=True)
        scored = fitted_probabilities(
            data, split["tuning_answers"], split["locked_answers"], SHIPPED_RESPONSE, by_task=True
        )
        results[name] = {"tuning_cv": report(examples, cv), "locked": report(examples, scored)}
    splits = splits_of(split["fold"])
    cv, scored = crossencoder_path(examples, stacked, y, owner, splits, tuning, locked)
    results["crossencoder path"] = {
        "tuning_cv": report(examples, cv),
        "locked": report(examples, scored),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return results


def table(results: dict[str, Any]) -> str:
    """BA / AUROC per slice, tuning CV and locked part, one line per detector."""
    slices = ("ragtruth/QA", "ragtruth/Summary", "ragtruth/Data2txt", "ragtruth/all", "halueval/QA")
    head = "| detector | part | " + " | ".join(slices) + " |"
    lines = [head, "|" + "---|" * (len(slices) + 2)]
    for name in ("default", "default + crossencoder", "crossencoder path"):
        for part in ("tuning_cv", "locked"):
            r = results[name][part]
            cells = [f"{r[s]['balanced_accuracy']:.3f} / {r[s]['auroc']:.3f}" for s in slices]
            lines.append(f"| {name} | {part} | " + " | ".join(cells) + " |")
    claim = results["claim_auroc"]
    lines.append(
        f"claim-level AUROC of the cross-encoder: tuning out of fold {claim['tuning_out_of_fold']}"
        f", locked {claim['locked']}"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
