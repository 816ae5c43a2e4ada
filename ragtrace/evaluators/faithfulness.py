"""Faithfulness and hallucination: are the answer's claims supported by the retrieved chunks?

Both follow the claim-counting definitions of the seed pages (002, 003)::

    faithfulness  = claims supported by the retrieved context / claims in the answer
    hallucination = claims unsupported by the retrieved context / claims in the answer

Claims are the answer's sentences (``ragtrace.evaluators.text.split_sentences``; the pages ask an
LLM to extract claims, which a local splitter approximates). Whether a claim is supported is decided
by the local support detector (``ragtrace.evaluators.support``; a logistic model over word,
number, name and embedding evidence) or, with ``nli_model=``, by any Hugging Face NLI model's
entailment probability against the best-matching passage sentences. A claim is supported when
its support probability is at least ``support_threshold`` (0.5).

Sentences that only talk about the passages ("the passages do not say ...") are claims too, and
the detector learned that they are usually supported. ``details["claims"]`` keeps, per claim,
its text, support probability, verdict and the closest passage sentence, so a reviewer sees
which sentence is unsupported; ``details["hallucination_probability"]`` is the probability that
the answer holds at least one unsupported claim (the response-level detector score that
``benchmarks/accuracy.py`` reports). With the local detector it comes from a second small
logistic model over the claims' probabilities and evidence (the two largest unsupported
probabilities, the number of claims, mean bigram support and similarity), which flags answers
better than "any claim below 0.5" does on RAGTruth and HaluEval. ``detector="crossencoder"`` and
``"cascade"`` have their own, fitted on the cross-encoder's out-of-fold claim probabilities.
With ``nli_model=`` it is the largest claim probability. The two can disagree: the
response model leans on the second most doubtful claim, so one doubtful sentence among grounded
ones is named in the claim verdicts (and lowers the score) while the probability stays low,
unless the claim model is confident (0.9 or more) that it is unsupported, which flags the answer
by itself (``data/SUPPORT_MODEL.md``). An answer with no sentence has nothing to check: both
scores are 1.0 / 0.0 with ``details["claims"] == []``.

``detector=`` picks the local detector: ``features`` (default: the logistic model alone, ~1 ms a
record), ``crossencoder`` (every claim also goes through a MiniLM cross-encoder fine-tuned on
the labelled dev data, its logit stacked with the features: better on RAGTruth QA and HaluEval,
~40-50 ms a claim on one CPU thread, so opt-in) or ``cascade`` (the cross-encoder only for the
claims the feature model is unsure of). Figures and the weights' card:
``ragtrace/evaluators/data/SUPPORT_MODEL.md``.

Defaults follow the seed's thresholds (0.5); answers longer than ``max_claims`` sentences are
checked on their first ``max_claims`` (``details["truncated"]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ragtrace.evaluators.base import Evaluator
from ragtrace.evaluators.support import (
    DEFAULT_DETECTOR,
    SUPPORT_THRESHOLD,
    ClaimCheck,
    SupportDetector,
)
from ragtrace.evaluators.text import split_sentences
from ragtrace.model import RagRecord, Score

DEFAULT_MAX_CLAIMS = 40
_PREVIEW_CHARS = 300
_DETECTOR_NAMES = {
    "features": "ragtrace-support-lr",
    "crossencoder": "ragtrace-support-crossencoder",
    "cascade": "ragtrace-support-cascade",
}


class _ClaimSupport(Evaluator):
    """Shared machinery: split claims, check them in one batch, build per-claim details."""

    requires: ClassVar[frozenset[str]] = frozenset({"chunks", "response"})
    kind = "model"
    threshold: float | None = 0.5
    batch_size = 16
    timeout_s = 60.0

    def __init__(
        self,
        *,
        support_threshold: float = SUPPORT_THRESHOLD,
        max_claims: int = DEFAULT_MAX_CLAIMS,
        weights: str | None = None,
        embedding_model: str | None = None,
        nli_model: str | None = None,
        nli_label_map: dict[str, int] | None = None,
        threads: int | None = None,
        detector: str = DEFAULT_DETECTOR,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            support_threshold: A claim is supported when its probability is at least this.
            max_claims: Most answer sentences checked per record.
            weights: Another weights file for the support detector.
            embedding_model: Another embedding model for the detector's similarity features.
            nli_model: Decide support with this Hugging Face NLI model instead of the detector.
            nli_label_map: Label name -> index for ``nli_model`` when its config lacks names.
            threads: Threads of the model backends.
            detector: ``features`` (default), ``crossencoder`` or ``cascade`` (see above).
            **options: ``threshold``, ``batch_size``, ``timeout_s``, ...
        """
        super().__init__(**options)
        if not 0.0 <= support_threshold <= 1.0:
            raise ValueError("support_threshold must be in [0, 1]")
        if max_claims < 1:
            raise ValueError("max_claims must be >= 1")
        self.support_threshold = float(support_threshold)
        self.max_claims = int(max_claims)
        self._nli_model = nli_model
        self._nli_label_map = nli_label_map
        self._threads = threads
        self._detector = SupportDetector(
            weights=weights, embedding_model=embedding_model, threads=threads, detector=detector
        )

    def evaluate(self, record: RagRecord) -> list[Score]:
        return self.evaluate_batch([record])[0]

    def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
        items = []
        truncated = []
        for record in records:
            claims = split_sentences(record.response)
            truncated.append(len(claims) > self.max_claims)
            passages = [c.text for c in record.chunks if c.text]
            items.append((claims[: self.max_claims], passages))
        checks = self._check(items)
        return [
            [self._score(record_checks, cut)]
            for record_checks, cut in zip(checks, truncated, strict=True)
        ]

    def _check(self, items: list[tuple[list[str], list[str]]]) -> list[list[ClaimCheck]]:
        checks = self._detector.check_batch(items)
        if self._nli_model is None:
            return checks
        from ragtrace.evaluators._nli_support import nli_checks

        return nli_checks(
            items, checks, self._nli_model, label_map=self._nli_label_map, threads=self._threads
        )

    def _hallucination_probability(self, checks: list[ClaimCheck]) -> float:
        if self._nli_model is not None:  # NLI probabilities: the response model never saw them
            return max((1.0 - c.support for c in checks), default=0.0)
        return self._detector.hallucination_probability(checks)

    def _score(self, checks: list[ClaimCheck], truncated: bool) -> Score:
        unsupported = [c for c in checks if c.support < self.support_threshold]
        total = len(checks)
        details = {
            "claims": [
                {
                    "claim": c.claim[:_PREVIEW_CHARS],
                    "support": round(c.support, 4),
                    "supported": c.support >= self.support_threshold,
                    "closest_passage_sentence": c.best_sentence,
                }
                for c in checks
            ],
            "supported": total - len(unsupported),
            "unsupported": len(unsupported),
            "hallucination_probability": round(self._hallucination_probability(checks), 4),
            "detector": self._nli_model or _DETECTOR_NAMES[self._detector.detector],
            "truncated": truncated,
        }
        explanation = (
            f"{len(unsupported)} of {total} claims unsupported by the retrieved context"
            + (f"; first: {unsupported[0].claim[:120]!r}" if unsupported else "")
            if total
            else "the answer makes no claim to check"
        )
        return self._value(total, len(unsupported), explanation, details)

    def _value(
        self, total: int, unsupported: int, explanation: str, details: dict[str, Any]
    ) -> Score:
        raise NotImplementedError


class Faithfulness(_ClaimSupport):
    """Share of the answer's claims that the retrieved context supports (higher is better)."""

    name: ClassVar[str] = "faithfulness"
    direction = "higher_is_better"

    def _value(
        self, total: int, unsupported: int, explanation: str, details: dict[str, Any]
    ) -> Score:
        value = (total - unsupported) / total if total else 1.0
        return self.score(value, explanation=explanation, details=details)


class Hallucination(_ClaimSupport):
    """Share of the answer's claims the retrieved context does not support (lower is better)."""

    name: ClassVar[str] = "hallucination"
    direction = "lower_is_better"

    def _value(
        self, total: int, unsupported: int, explanation: str, details: dict[str, Any]
    ) -> Score:
        value = unsupported / total if total else 0.0
        return self.score(value, explanation=explanation, details=details)
