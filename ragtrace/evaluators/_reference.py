"""Reference-based answer metrics: answer similarity and answer correctness.

For offline runs and labelled traffic, where ``record.reference`` holds a ground-truth answer.

- ``answer_similarity`` (Ejento 1.2, H2O "Answer Semantic Similarity"): the cosine of the
  embeddings of the answer and the reference, with ``get_embedder`` (default: the packaged
  all-MiniLM-L6-v2; ``model=`` takes any sentence-transformers id or folder). Cosine lies in
  [-1, 1]; a negative cosine (opposite meaning is rare, unrelated text sits near 0) is reported
  as 0 so the value stays in [0, 1]. The embedder reads the first 256 tokens of each text.
- ``answer_correctness`` (Ejento 1.1, H2O "Answer Correctness"):
  ``0.75 * factual F1 + 0.25 * similarity`` (``weights=`` changes the two weights; they are
  divided by their sum, as RAGAS does with ``np.average``). Factual F1 counts statements:
  TP = answer statements supported by the reference, FP = answer statements not supported by
  it, FN = reference statements not supported by the answer, and
  ``F1 = TP / (TP + 0.5 * (FP + FN))`` (0 when all three are 0).

Statements are the sentences of ``ragtrace.evaluators._text.split_sentences`` (``splitter=``
replaces it); "supported" means ``support >= support_threshold`` from the local support
detector (``ragtrace.evaluators._faithfulness.claim_support``; ``support=`` injects any function
with its signature). Both evaluators batch: one embedding call and one support call per batch.
``AnswerCorrectness`` is a ``statement_support.SupportEvaluator`` (statements, caps, batching
of the support function), the base it shares with ``retrieval_quality`` and
``noise_sensitivity``.

Caps on huge input: each text is cut to ``max_chars`` (20,000) characters and, for answer
correctness, to its first ``max_statements`` (64) statements; ``details["truncated"]`` says when
a cap applied. Text is read with ``statement_support.as_text``: bytes are decoded as UTF-8 (bad
bytes replaced), lone surrogates are replaced, other objects go through ``str``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._base import BatchEvaluator, positive_int, refuse_options
from ragtrace.evaluators._statement_support import (
    DEFAULT_MAX_CHARS,
    DEFAULT_THRESHOLD,
    Plan,
    SupportEvaluator,
    as_text,
)


class AnswerSimilarity(BatchEvaluator):
    """Cosine similarity of the answer's and the reference's embeddings."""

    name: ClassVar[str] = "answer_similarity"
    requires: ClassVar[frozenset[str]] = frozenset({"response", "reference"})
    kind = "model"
    threshold: float | None = DEFAULT_THRESHOLD
    batch_size = 32
    timeout_s = 30.0

    def __init__(
        self,
        *,
        model: str | None = None,
        threads: int | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            model: Embedding model (default: the packaged all-MiniLM-L6-v2).
            threads: Model threads (default ``$RAGTRACE_MODEL_THREADS`` or 1).
            max_chars: Characters read from each text.
            **options: ``threshold`` (0.75), ``timeout_s``, ``batch_size``, ...
        """
        super().__init__(**options)
        self.model = model
        self.threads = threads
        self.max_chars = positive_int(self.name, "max_chars", max_chars)

    def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
        pairs = [_pair(self.name, r, self.max_chars) for r in records]
        sims = similarities([p for p in pairs if not isinstance(p, str)], self.model, self.threads)
        found = iter(sims)
        results = []
        for pair in pairs:
            if isinstance(pair, str):
                results.append([self.error_score(pair)])
                continue
            value, model_id = next(found)
            results.append(
                [
                    self.score(
                        value,
                        explanation=f"cosine similarity of answer and reference {value:.3f}",
                        model=model_id,
                        details={"truncated": pair[2]},
                    )
                ]
            )
        return results


class AnswerCorrectness(SupportEvaluator):
    """Weighted factual F1 (statements vs the reference) and semantic similarity."""

    name: ClassVar[str] = "answer_correctness"
    requires: ClassVar[frozenset[str]] = frozenset({"response", "reference"})

    def __init__(
        self,
        *,
        weights: Sequence[float] = (0.75, 0.25),
        model: str | None = None,
        threads: int | None = None,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            weights: ``(factuality, similarity)`` weights, non-negative, not both 0.
            model: Embedding model for the similarity (default: the packaged MiniLM).
            threads: Model threads for the similarity.
            **options: See ``SupportEvaluator`` (``support``, ``support_threshold``, caps) and
                ``threshold`` (0.75), ``timeout_s``, ...
        """
        refuse_options(
            self.name, options, {"max_chunks": "it reads the answer and the reference only"}
        )
        super().__init__(**options)
        try:
            factual, semantic = (float(w) for w in weights)
        except (TypeError, ValueError):
            raise ValueError(
                f"answer_correctness: weights must be two numbers, got {weights!r}"
            ) from None
        if not (factual >= 0 and semantic >= 0 and factual + semantic > 0):
            raise ValueError(
                f"answer_correctness: weights must be >= 0 and not both 0, got {weights!r}"
            )
        total = factual + semantic
        self.weights = (factual / total, semantic / total)
        self.model = model
        self.threads = threads

    def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
        sims: dict[int, tuple[float, str]] = {}
        if self.weights[1] > 0:
            pairs = [_pair(self.name, r, self.max_chars) for r in records]
            valid = {i: p for i, p in enumerate(pairs) if not isinstance(p, str)}
            found = similarities(list(valid.values()), self.model, self.threads)
            sims = dict(zip(valid, found, strict=True))
        return self._run(records, lambda i, record: self._plan_with(record, sims.get(i)))

    def _plan_with(self, record: RagRecord, similarity: tuple[float, str] | None) -> Plan:
        answer, cut_answer = self.text(record, "response")
        reference, cut_reference = self.text(record, "reference")
        answer_statements, more_answer = self.statements(answer)
        reference_statements, more_reference = self.statements(reference)
        truncated = cut_answer or cut_reference or more_answer or more_reference

        def finish(answers: list[list[float]]) -> list[Score]:
            in_reference, in_answer = answers
            tp = sum(self.supported(p) for p in in_reference)
            fp = len(answer_statements) - tp
            fn = sum(not self.supported(p) for p in in_answer)
            denominator = tp + 0.5 * (fp + fn)
            f1 = tp / denominator if denominator else 0.0
            sim, model_id = similarity if similarity is not None else (0.0, None)
            value = self.weights[0] * f1 + self.weights[1] * sim
            return [
                self.score(
                    min(1.0, max(0.0, value)),
                    explanation=(
                        f"factual F1 {f1:.3f} (TP {tp}, FP {fp}, FN {fn}), similarity {sim:.3f}"
                    ),
                    model=model_id,
                    details={
                        "factual_f1": f1,
                        "similarity": sim if similarity is not None else None,
                        "weights": {"factuality": self.weights[0], "similarity": self.weights[1]},
                        "tp": tp,
                        "fp": fp,
                        "fn": fn,
                        "answer_statements": self.verdicts(
                            answer_statements, in_reference, "in_reference"
                        ),
                        "reference_statements": self.verdicts(
                            reference_statements, in_answer, "in_answer"
                        ),
                        "support_threshold": self.support_threshold,
                        "truncated": truncated,
                    },
                )
            ]

        return Plan(
            items=[(answer_statements, [reference]), (reference_statements, [answer])],
            finish=finish,
        )


def similarities(
    pairs: Sequence[tuple[str, str, bool]], model: str | None, threads: int | None
) -> list[tuple[float, str]]:
    """``(max(0, cosine), model id)`` of each (answer, reference, _) pair, one encode call."""
    if not pairs:
        return []
    from ragtrace._backends.embeddings import get_embedder

    embedder = get_embedder(model, threads=threads)
    texts = list(dict.fromkeys(t for a, r, _ in pairs for t in (a, r)))
    vectors = embedder.encode(texts)
    row = {t: i for i, t in enumerate(texts)}
    found = []
    for answer, reference, _ in pairs:
        cosine = float(vectors[row[answer]] @ vectors[row[reference]])
        found.append((min(1.0, max(0.0, cosine)), embedder.model_id))
    return found


def _pair(name: str, record: RagRecord, max_chars: int) -> tuple[str, str, bool] | str:
    """``(answer, reference, truncated)`` capped, or an error message."""
    answer = as_text(record.response)
    reference = as_text(record.reference)
    for what, text in (("response", answer), ("reference", reference)):
        if not text.strip():
            return f"{name} needs a non-empty {what}"
    truncated = len(answer) > max_chars or len(reference) > max_chars
    return answer[:max_chars], reference[:max_chars], truncated
