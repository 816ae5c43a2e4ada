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

Statements are the sentences of ``ragtrace.text.split_sentences`` (``splitter=`` replaces it);
"supported" means ``support >= support_threshold`` from the local support detector
(``ragtrace.evaluators.support.claim_support``; ``support=`` injects any function with its
signature). Both evaluators batch: one embedding call and one support call per batch.

This module also holds what the other reference-based evaluators (``retrieval_quality``,
``noise_sensitivity``, ``ragas``) share: ``SupportEvaluator`` (statements, caps, batching of the
support function) and ``as_text``.

Caps on huge input: each text is cut to ``max_chars`` (20,000) characters and to its first
``max_statements`` (64) statements, and at most ``max_chunks`` (32) chunks are read;
``details["truncated"]`` says when a cap applied. Bytes are decoded as UTF-8 (bad bytes
replaced), lone surrogates are replaced, other objects go through ``str``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any, ClassVar

from ragtrace.evaluators.base import Evaluator
from ragtrace.model import RagRecord, Score
from ragtrace.text import split_sentences

SupportFn = Callable[[Sequence[str], Sequence[str]], list[float]]
Splitter = Callable[[str], list[str]]
Item = tuple[list[str], list[str]]

DEFAULT_THRESHOLD = 0.75
DEFAULT_MAX_CHARS = 20_000
DEFAULT_MAX_STATEMENTS = 64
DEFAULT_MAX_CHUNKS = 32
DETAIL_CHARS = 300
FALLBACK_SUPPORT_THRESHOLD = 0.5


class InputError(ValueError):
    """A record lacks what an evaluator needs (turned into an error Score for that record)."""


def as_text(value: object) -> str:
    """``value`` as a str: bytes decoded as UTF-8 (bad bytes replaced), None as ""."""
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    text = value if isinstance(value, str) else str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: models and tokenizers reject them
        text = text.encode("utf-8", errors="replace").decode("utf-8")
    return text


def clip(text: str, limit: int = DETAIL_CHARS) -> str:
    """``text`` shortened to ``limit`` characters for ``details``."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class Plan:
    """What one record needs from the support function, and how to turn the answer into Scores.

    Attributes:
        items: ``(claims, passages)`` pairs to score.
        finish: Called with one list of support probabilities per item, in order.
    """

    items: list[Item]
    finish: Callable[[list[list[float]]], list[Score]]


class SupportEvaluator(Evaluator):
    """Base of the evaluators that ask "is this statement supported by that text?".

    Subclasses implement ``_plan(record)``; ``evaluate_batch`` sends every item of every record
    of a batch to the support function together (the default detector embeds them in one call)
    and turns a record's bad input into error Scores for that record only.
    """

    kind = "model"
    threshold: float | None = DEFAULT_THRESHOLD
    batch_size = 16
    timeout_s = 60.0
    score_names: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        *,
        support: SupportFn | None = None,
        support_threshold: float | None = None,
        splitter: Splitter | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        max_statements: int = DEFAULT_MAX_STATEMENTS,
        max_chunks: int = DEFAULT_MAX_CHUNKS,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            support: ``f(claims, passages) -> [probability per claim]`` (default: the local
                support detector, batched across records).
            support_threshold: A statement is supported when its probability is at least this
                (default: ``support.SUPPORT_THRESHOLD``).
            splitter: Text -> statements (default: ``ragtrace.text.split_sentences``).
            max_chars: Characters read from each text.
            max_statements: Statements read from each text.
            max_chunks: Retrieved chunks read, from the top.
            **options: ``threshold``, ``timeout_s``, ``batch_size``, ...
        """
        super().__init__(**options)
        if support is not None and not callable(support):
            raise ValueError(f"{self.name}: support must be callable, got {support!r}")
        if splitter is not None and not callable(splitter):
            raise ValueError(f"{self.name}: splitter must be callable, got {splitter!r}")
        self.support = support
        self.support_threshold = _support_threshold(self.name, support, support_threshold)
        self.splitter: Splitter = splitter or split_sentences
        self.max_chars = _positive(self.name, "max_chars", max_chars)
        self.max_statements = _positive(self.name, "max_statements", max_statements)
        self.max_chunks = _positive(self.name, "max_chunks", max_chunks)

    def _plan(self, record: RagRecord) -> Plan:
        """Items to score for ``record`` and how to finish (raise InputError on bad input)."""
        raise NotImplementedError

    def evaluate(self, record: RagRecord) -> list[Score]:
        return self.evaluate_batch([record])[0]

    def evaluate_batch(self, records: Sequence[RagRecord]) -> list[list[Score]]:
        return self._run(records, lambda _, record: self._plan(record))

    def _run(
        self, records: Sequence[RagRecord], planner: Callable[[int, RagRecord], Plan]
    ) -> list[list[Score]]:
        """Plan every record, score all items in one support call, finish each record."""
        plans: list[Plan | list[Score]] = []
        for index, record in enumerate(records):
            try:
                plans.append(planner(index, record))
            except InputError as exc:
                plans.append(self.errors(str(exc)))
        items = [item for plan in plans if isinstance(plan, Plan) for item in plan.items]
        answers = iter(self.support_many(items))
        results = []
        for plan in plans:
            if isinstance(plan, Plan):
                plan_answers = [next(answers) for _ in plan.items]
                results.append(plan.finish(plan_answers))
            else:
                results.append(plan)
        return results

    def errors(self, message: str) -> list[Score]:
        """One error Score per score this evaluator reports."""
        return [self.error_score(message, name=n) for n in self.score_names or (self.name,)]

    def support_many(self, items: Sequence[Item]) -> list[list[float]]:
        """Support probabilities for every ``(claims, passages)`` item."""
        if not items:
            return []
        if self.support is None:
            from ragtrace.evaluators.support import default_detector

            checks = default_detector().check_batch(items)
            answers = []
            for (claims, _), found in zip(items, checks, strict=True):
                by_claim = {c.claim: c.support for c in found}
                answers.append([by_claim.get(c, 1.0) for c in claims])
        else:
            answers = [list(self.support(claims, passages)) for claims, passages in items]
        for (claims, _), probabilities in zip(items, answers, strict=True):
            if len(probabilities) != len(claims):
                raise RuntimeError(
                    f"{self.name}: support function returned {len(probabilities)} values "
                    f"for {len(claims)} claims"
                )
        return [[_probability(self.name, p) for p in ps] for ps in answers]

    def supported(self, probability: float) -> bool:
        """Whether a support probability counts as supported."""
        return probability >= self.support_threshold

    def text(self, record: RagRecord, field_name: str) -> tuple[str, bool]:
        """A record field as text, capped; raises InputError when it is missing or blank."""
        text = as_text(getattr(record, field_name, None))
        if not text.strip():
            raise InputError(f"{self.name} needs a non-empty {field_name}")
        truncated = len(text) > self.max_chars
        return (text[: self.max_chars] if truncated else text), truncated

    def statements(self, text: str) -> tuple[list[str], bool]:
        """The statements of ``text`` (at most ``max_statements``) and whether some were cut."""
        found = [s for s in self.splitter(text) if s and s.strip()]
        if not found and text.strip():
            found = [text.strip()]
        return found[: self.max_statements], len(found) > self.max_statements

    def chunk_texts(self, record: RagRecord) -> tuple[list[str], bool]:
        """Texts of the top ``max_chunks`` chunks (each capped); raises InputError if none."""
        chunks = record.chunks or ()
        if isinstance(chunks, str | bytes):
            chunks = (chunks,)
        texts = [as_text(getattr(c, "text", c)) for c in list(chunks)[: self.max_chunks]]
        truncated = len(chunks) > self.max_chunks or any(len(t) > self.max_chars for t in texts)
        texts = [t[: self.max_chars] for t in texts]
        if not any(t.strip() for t in texts):
            raise InputError(f"{self.name} needs retrieved chunks with text")
        return texts, truncated

    def verdicts(
        self, statements: Sequence[str], probabilities: Sequence[float], key: str
    ) -> list[dict[str, Any]]:
        """Per-statement ``details`` entries: text, support probability and the verdict."""
        return [
            {"statement": clip(s), "support": round(p, 4), key: self.supported(p)}
            for s, p in zip(statements, probabilities, strict=True)
        ]


class AnswerSimilarity(Evaluator):
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
        self.max_chars = _positive(self.name, "max_chars", max_chars)

    def evaluate(self, record: RagRecord) -> list[Score]:
        return self.evaluate_batch([record])[0]

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
    from ragtrace.backends.embeddings import get_embedder

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


def _support_threshold(name: str, support: SupportFn | None, value: float | None) -> float:
    if value is None:
        try:
            from ragtrace.evaluators.support import SUPPORT_THRESHOLD
        except ImportError:
            if support is None:
                raise
            return FALLBACK_SUPPORT_THRESHOLD
        return float(SUPPORT_THRESHOLD)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(f"{name}: support_threshold must be a number in [0, 1], got {value!r}")
    return float(value)


def _positive(name: str, option: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: {option} must be a positive integer, got {value!r}")
    return value


def _probability(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or math.isnan(float(value)):
        raise RuntimeError(f"{name}: support function returned {value!r}, not a probability")
    return min(1.0, max(0.0, float(value)))
