"""Training the cross-encoder of ``crossencoder_locked.py`` from a bundle that can travel.

A bundle (``write_bundle``) holds what training needs and nothing that identifies the data:
per token length, the claims' token ids renumbered to the vocabulary they use, their labels
and folds (``tokens_{length}.npz``), and the base model in fp16 with only those vocabulary
rows (``base/model.safetensors``, about 32 MB), so it fits a GPU machine's transfer limit.
``train_bundle`` trains from it on any device: out-of-fold logits for the tuning claims, the
locked claims' from a cross-encoder trained on every tuning claim, and that one's tensors.

A bundle may also hold synthetic claims after the real ones (``synthetic``, from
``_crossencoder_conflicts.synthetic_pairs``): each is trained on wherever its source claim's fold
is, and none is ever scored, so the logits cover the real claims only.

It may also hold claims of the training-only sets (``extra``, from ``crossencoder_locked.py
--extra-sets``) after those: the claims of a set's tuning documents are trained on in every fold
and in the final training, each at its set's weight in the loss, and never scored; the claims of
its held-out documents are never trained on and are scored by the final cross-encoder only, their
logits following the real claims'.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from train_crossencoder import Trainer, tokenize

FOLDS = 5


def crossencoder_logits(
    trainer: Trainer,
    y: np.ndarray,
    splits: list[tuple[np.ndarray, np.ndarray]],
    tuning: np.ndarray,
    locked: np.ndarray,
    config: tuple[int, float, int],
    weight: np.ndarray | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Out-of-fold logits for the tuning claims; the locked claims' from a cross-encoder
    trained on every tuning claim, whose trained tensors come second (with no ``locked``
    claims, that last training is skipped and the tensors are empty). ``weight``: each row's
    weight in the loss (default 1)."""
    epochs, lr, batch = config
    logit = np.zeros(len(y))
    for number, (train, test) in enumerate(splits, 1):
        started = time.perf_counter()
        params = trainer.fit(train, y, epochs, lr, batch, weight)
        logit[test] = trainer.predict(params, test)
        print(f"  fold {number}/{FOLDS}: {time.perf_counter() - started:.0f} s", flush=True)
    if not len(locked):
        return logit, {}
    params = trainer.fit(tuning, y, epochs, lr, batch, weight)
    logit[locked] = trainer.predict(params, locked)
    return logit, params


# The fold of a training-only set's claims: of its tuning documents (trained on in every fold and
# in the final training, never scored), of its held-out documents (scored by the final one only).
EXTRA_TRAIN = -2
EXTRA_HELD = -3


def splits_of(
    fold: np.ndarray, synthetic: np.ndarray | None = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) claim indices of each fold; ``synthetic`` claims are trained on, never
    tested; claims of fold ``EXTRA_TRAIN`` are trained on in every fold, never tested."""
    tuning = np.flatnonzero(fold >= 0)
    everywhere = np.flatnonzero(fold == EXTRA_TRAIN)
    scored = np.ones(len(fold), bool) if synthetic is None else ~synthetic
    return [
        (
            np.concatenate([tuning[fold[tuning] != k], everywhere]),
            np.flatnonzero((fold == k) & scored),
        )
        for k in range(int(fold.max()) + 1)
    ]


def final_rows(fold: np.ndarray, locked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows the final cross-encoder trains on (every tuning claim and the training-only
    sets' tuning claims) and those it scores (the locked claims and the sets' held-out ones)."""
    train = np.flatnonzero((fold >= 0) | (fold == EXTRA_TRAIN))
    return train, np.concatenate([locked, np.flatnonzero(fold == EXTRA_HELD)]).astype(int)


def write_bundle(
    folder: Path,
    pairs: dict[str, Any],
    split: dict[str, np.ndarray],
    lengths: list[int],
    synthetic: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
    vocabulary: dict[str, Any] | None = None,
) -> None:
    """What training needs, small enough to travel to a GPU machine: per token length, the
    claims' tokens with ids renumbered to the vocabulary they use (``tokens_{length}.npz``, with
    labels, folds and weights), and the base model in fp16 with only those vocabulary rows.
    ``synthetic`` claims (claim, evidence, y, fold) follow the real ones, marked so; then the
    training-only sets' ``extra`` claims (claim, evidence, y, weight, held), of fold
    ``EXTRA_HELD`` where ``held`` else ``EXTRA_TRAIN``. The base keeps the vocabulary of
    ``vocabulary``'s pairs (claim, evidence) too, so that bundles of other ``extra`` claims
    share one base (the renumbering changes no output)."""
    from safetensors.numpy import load_file, save_file

    from ragtrace._backends.embeddings import _packaged_folder

    base = _packaged_folder()
    real = len(pairs["y"])
    fold, y = split["fold"], np.asarray(pairs["y"])
    if synthetic is not None:
        pairs = {
            "claim": list(pairs["claim"]) + list(synthetic["claim"]),
            "evidence": list(pairs["evidence"]) + list(synthetic["evidence"]),
        }
        fold = np.concatenate([fold, synthetic["fold"]])
        y = np.concatenate([y, synthetic["y"]])
    made = len(y)
    weight = np.ones(len(y))
    if extra is not None:
        pairs = {
            "claim": list(pairs["claim"]) + list(extra["claim"]),
            "evidence": list(pairs["evidence"]) + list(extra["evidence"]),
        }
        held = np.asarray(extra["held"], bool)
        fold = np.concatenate([fold, np.where(held, EXTRA_HELD, EXTRA_TRAIN)])
        y = np.concatenate([y, extra["y"]])
        weight = np.concatenate([weight, np.asarray(extra["weight"], float)])
    encoded = {length: tokenize(pairs, base, length) for length in lengths}
    more = [tokenize(vocabulary, base, n)["ids"].ravel() for n in lengths] if vocabulary else []
    used = np.unique(np.concatenate([e["ids"].ravel() for e in encoded.values()] + more))
    state = load_file(str(base / "model.safetensors"))
    state["embeddings.word_embeddings.weight"] = state["embeddings.word_embeddings.weight"][used]
    (folder / "base").mkdir(parents=True, exist_ok=True)
    save_file(
        {k: v.astype(np.float16) for k, v in state.items()},
        str(folder / "base" / "model.safetensors"),
    )
    for length, tokens in encoded.items():
        np.savez_compressed(
            folder / f"tokens_{length}.npz",
            ids=np.searchsorted(used, tokens["ids"]).astype(np.int32),
            types=tokens["types"].astype(np.int8),
            mask=tokens["mask"].astype(np.int8),
            y=y,
            fold=fold,
            locked=split["locked"],
            synthetic=(np.arange(len(y)) >= real) & (np.arange(len(y)) < made),
            weight=weight,
        )


def train_bundle(
    folder: Path, device: str, config: str, batch: int, folds_only: bool = False
) -> tuple[np.ndarray, dict[str, Any]]:
    """The cross-encoder's logits for every scored claim of a bundle (the real claims, then the
    training-only sets' held-out ones) and the tensors trained on every tuning claim (see
    ``crossencoder_logits``); with ``folds_only``, the tuning claims' out-of-fold logits alone
    (the others stay 0, no tensors)."""
    layers, tokens, epochs, lr = config.split(":")
    path = folder / f"tokens_{int(tokens)}.npz"
    if not path.is_file():
        raise SystemExit(f"{path} not found: write the bundle with --lengths {tokens}")
    saved = np.load(path)
    encoded = {k: saved[k].astype(np.int64) for k in ("ids", "types", "mask")}
    trainer = Trainer(folder / "base", encoded, int(layers), device)
    fold = saved["fold"]
    synthetic = saved["synthetic"] if "synthetic" in saved else np.zeros(len(fold), bool)
    weight = saved.get("weight")
    train, scored = final_rows(fold, saved["locked"])
    logits, params = crossencoder_logits(
        trainer,
        saved["y"],
        splits_of(fold, synthetic),
        train,
        scored[:0] if folds_only else scored,
        (int(epochs), float(lr), batch),
        None if weight is None or np.all(weight == 1) else weight,
    )
    return logits[~synthetic & (fold != EXTRA_TRAIN)], params
