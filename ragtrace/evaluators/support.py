"""Is a claim supported by the retrieved passages? The local support detector.

Faithfulness, hallucination, context recall and answer correctness all ask the same question of
single sentences. Without an LLM, ragtrace answers it with a small logistic model over the
features of ``support_features`` (word, number and name coverage, sentence embeddings of the
packaged MiniLM). Its weights (``data/support_model.json``, a few hundred bytes) were fitted by
``benchmarks/train_support.py`` on RAGTruth and HaluEval; ``data/SUPPORT_MODEL.md`` is the model
card with its data, licence and cross-validated accuracy.

``claim_support(claims, passages)`` gives each claim's probability of being supported;
``SupportDetector.support_batch`` does the same for many records with one embedding call.
A different weights file (``weights=``) or embedding model (``embedding_model=``) can be given.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtrace.backends._loading import shared
from ragtrace.backends.embeddings import get_embedder
from ragtrace.evaluators.support_features import FEATURES, claim_features, index_passages
from ragtrace.text import split_sentences

WEIGHTS = Path(__file__).with_name("data") / "support_model.json"
SUPPORT_THRESHOLD = 0.5
MAX_PASSAGE_SENTENCES = 400


@dataclass(frozen=True)
class SupportModel:
    """A fitted logistic model: P(unsupported) = sigmoid(w . (x - mean) / scale + b)."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    info: dict[str, Any]

    @classmethod
    def load(cls, path: str | Path = WEIGHTS) -> SupportModel:
        """Read a weights file written by ``benchmarks/train_support.py``."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        model = cls(
            features=tuple(data["features"]),
            mean=tuple(float(v) for v in data["mean"]),
            scale=tuple(float(v) for v in data["scale"]),
            coef=tuple(float(v) for v in data["coef"]),
            intercept=float(data["intercept"]),
            info=dict(data.get("info", {})),
        )
        if model.features != FEATURES:
            raise ValueError(
                f"{path}: weights are for features {list(model.features)}, this ragtrace "
                f"computes {list(FEATURES)}; retrain with benchmarks/train_support.py"
            )
        return model

    def unsupported_probability(self, row: Sequence[float]) -> float:
        """P(the claim is unsupported) for one feature row."""
        z = self.intercept + sum(
            w * (x - m) / s
            for w, x, m, s in zip(self.coef, row, self.mean, self.scale, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


@dataclass(frozen=True)
class ClaimCheck:
    """The verdict on one claim: its support probability and the passage sentence closest to it."""

    claim: str
    support: float
    best_sentence: int | None
    features: tuple[float, ...]


class SupportDetector:
    """Scores claims against passages; one instance is shared by every evaluator and thread."""

    def __init__(
        self,
        *,
        weights: str | Path | None = None,
        embedding_model: str | None = None,
        threads: int | None = None,
    ) -> None:
        self.model = SupportModel.load(weights or WEIGHTS)
        self._embedding_model = embedding_model
        self._threads = threads

    def check_batch(
        self, items: Sequence[tuple[Sequence[str], Sequence[str]]]
    ) -> list[list[ClaimCheck]]:
        """For each (claims, passages) item, one ClaimCheck per non-empty claim, in order."""
        featurised = featurise(items, embedding_model=self._embedding_model, threads=self._threads)
        return [
            [
                ClaimCheck(claim, 1.0 - self.model.unsupported_probability(row), best, tuple(row))
                for claim, best, row in rows
            ]
            for rows in featurised
        ]


def featurise(
    items: Sequence[tuple[Sequence[str], Sequence[str]]],
    *,
    embedding_model: str | None = None,
    threads: int | None = None,
) -> list[list[tuple[str, int | None, list[float]]]]:
    """Feature rows for every non-empty claim of every (claims, passages) item.

    Each row comes with its claim and the index of the most similar passage sentence. All
    distinct sentences of all items go through the embedder in one call.
    """
    prepared = []
    texts: dict[str, None] = {}
    for claims, passages in items:
        sentences = [s for p in passages for s in split_sentences(p)][:MAX_PASSAGE_SENTENCES]
        kept = [c for c in claims if c and c.strip()]
        prepared.append((kept, sentences))
        texts.update(dict.fromkeys(kept))
        texts.update(dict.fromkeys(sentences))
    if not texts:
        return [[] for _ in items]
    order = list(texts)
    vectors = get_embedder(embedding_model, threads=threads).encode(order)
    row_of = {t: i for i, t in enumerate(order)}
    results = []
    for claims, sentences in prepared:
        index = index_passages(sentences)
        sentence_vectors = vectors[[row_of[s] for s in sentences]] if sentences else None
        rows = []
        for claim in claims:
            sims: list[float] = []
            if sentence_vectors is not None:
                sims = (sentence_vectors @ vectors[row_of[claim]]).tolist()
            best = max(range(len(sims)), key=sims.__getitem__) if sims else None
            rows.append((claim, best, claim_features(claim, index, sims)))
        results.append(rows)
    return results


def default_detector() -> SupportDetector:
    """The process-wide detector with the shipped weights and the packaged MiniLM."""
    return shared(("support-detector",), SupportDetector)


def claim_support(claims: Sequence[str], passages: Sequence[str]) -> list[float]:
    """Probability in [0, 1] that each claim is supported by the passages taken together.

    An empty claim asserts nothing and counts as supported (1.0).
    """
    if not claims:
        return []
    (checks,) = default_detector().check_batch([(claims, passages)])
    by_claim = {c.claim: c.support for c in checks}
    return [by_claim.get(c, 1.0) for c in claims]
