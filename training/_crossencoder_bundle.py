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
) -> tuple[np.ndarray, dict[str, Any]]:
    """Out-of-fold logits for the tuning claims; the locked claims' from a cross-encoder
    trained on every tuning claim, whose trained tensors come second (with no ``locked``
    claims, that last training is skipped and the tensors are empty)."""
    epochs, lr, batch = config
    logit = np.zeros(len(y))
    for number, (train, test) in enumerate(splits, 1):
        started = time.perf_counter()
        params = trainer.fit(train, y, epochs, lr, batch)
        logit[test] = trainer.predict(params, test)
        print(f"  fold {number}/{FOLDS}: {time.perf_counter() - started:.0f} s", flush=True)
    if not len(locked):
        return logit, {}
    params = trainer.fit(tuning, y, epochs, lr, batch)
    logit[locked] = trainer.predict(params, locked)
    return logit, params


def splits_of(
    fold: np.ndarray, synthetic: np.ndarray | None = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) claim indices of each fold; ``synthetic`` claims are trained on, never
    tested."""
    tuning = np.flatnonzero(fold >= 0)
    scored = np.ones(len(fold), bool) if synthetic is None else ~synthetic
    return [
        (tuning[fold[tuning] != k], np.flatnonzero((fold == k) & scored))
        for k in range(int(fold.max()) + 1)
    ]


def write_bundle(
    folder: Path,
    pairs: dict[str, Any],
    split: dict[str, np.ndarray],
    lengths: list[int],
    synthetic: dict[str, Any] | None = None,
) -> None:
    """What training needs, small enough to travel to a GPU machine: per token length, the
    claims' tokens with ids renumbered to the vocabulary they use (``tokens_{length}.npz``, with
    labels and folds), and the base model in fp16 with only those vocabulary rows. ``synthetic``
    claims (claim, evidence, y, fold) follow the real ones, marked so."""
    from safetensors.numpy import load_file, save_file

    from ragtrace.backends.embeddings import _packaged_folder

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
    encoded = {length: tokenize(pairs, base, length) for length in lengths}
    used = np.unique(np.concatenate([e["ids"].ravel() for e in encoded.values()]))
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
            synthetic=np.arange(len(y)) >= real,
        )


def train_bundle(
    folder: Path, device: str, config: str, batch: int, folds_only: bool = False
) -> tuple[np.ndarray, dict[str, Any]]:
    """The cross-encoder's logits for every claim of a bundle and the tensors trained on every
    tuning claim (see ``crossencoder_logits``); with ``folds_only``, the tuning claims'
    out-of-fold logits alone (the locked claims' stay 0, no tensors)."""
    layers, tokens, epochs, lr = config.split(":")
    path = folder / f"tokens_{int(tokens)}.npz"
    if not path.is_file():
        raise SystemExit(f"{path} not found: write the bundle with --lengths {tokens}")
    saved = np.load(path)
    encoded = {k: saved[k].astype(np.int64) for k in ("ids", "types", "mask")}
    trainer = Trainer(folder / "base", encoded, int(layers), device)
    fold = saved["fold"]
    synthetic = saved["synthetic"] if "synthetic" in saved else np.zeros(len(fold), bool)
    logits, params = crossencoder_logits(
        trainer,
        saved["y"],
        splits_of(fold, synthetic),
        np.flatnonzero(fold >= 0),
        saved["locked"][:0] if folds_only else saved["locked"],
        (int(epochs), float(lr), batch),
    )
    return logits[~synthetic], params
