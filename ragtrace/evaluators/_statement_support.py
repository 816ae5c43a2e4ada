"""Statement support: the shared base of the evaluators that check statements against a text.

``SupportEvaluator`` is the base of ``reference.AnswerCorrectness``,
``retrieval_quality`` (``ContextRecall``, ``ContextPrecision``, ``ContextEntitiesRecall``) and
``noise_sensitivity``. A subclass says, per record, which ``(claims, passages)`` items it needs
(a ``Plan``) and how to turn their support probabilities into Scores; ``evaluate_batch`` sends
every item of every record of a batch to the support function in one call and turns a record's
bad input (``InputError``) into error Scores for that record only.

Statements are the claims of ``ragtrace.evaluators._faithfulness.claims.split_claim_parts``
(sentences split at clauses joined by "and", "but", ";" or ", which", at an appositive and at a
last adjunct of place or time: closer to the claims the seeds have an LLM extract;
``splitter="sentences"`` or a function replaces it); "supported" means ``support >=
support_threshold`` from the local support detector
(``ragtrace.evaluators._faithfulness.claim_support``; ``support=`` injects any function with its
signature, a ``SupportFn``).

Caps on huge input: each text is cut to ``max_chars`` (20,000) characters and to its first
``max_statements`` (64) statements, and at most ``max_chunks`` (32) chunks are read;
``details["truncated"]`` says when a cap applied.

The module also holds the small text helpers the evaluators share: ``as_text`` (bytes decoded
as UTF-8 with bad bytes replaced, lone surrogates replaced, other objects through ``str``) and
``clip`` (short excerpts for ``details``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any, ClassVar

from ragtrace._model import RagRecord, Score
from ragtrace.evaluators._base import BatchEvaluator, InputError, positive_int, unit_option
from ragtrace.evaluators._faithfulness.claims import named_splitter

SupportFn = Callable[[Sequence[str], Sequence[str]], list[float]]
Splitter = Callable[[str], list[str]]
Item = tuple[list[str], list[str]]

DEFAULT_THRESHOLD = 0.75
DEFAULT_MAX_CHARS = 20_000
DEFAULT_MAX_STATEMENTS = 64
DEFAULT_MAX_CHUNKS = 32
DETAIL_CHARS = 300
FALLBACK_SUPPORT_THRESHOLD = 0.5


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


class SupportEvaluator(BatchEvaluator):
    """Base of the evaluators that ask "is this statement supported by that text?".

    Subclasses implement ``_plan(record)``; ``evaluate_batch`` sends every item of every record
    of a batch to the support function together (the default detector embeds them in one call)
    and turns a record's bad input into error Scores for that record only.
    """

    kind = "model"
    threshold: float | None = DEFAULT_THRESHOLD
    batch_size = 16
    timeout_s = 60.0
    # The seeds define these metrics over claims an LLM extracts: sentences split at their
    # clauses, appositives and last adjuncts come closer (BENCHMARKS.md, "Claims below the
    # sentence").
    default_splitter: ClassVar[str] = "claims"

    def __init__(
        self,
        *,
        support: SupportFn | None = None,
        support_threshold: float | None = None,
        splitter: str | Splitter | None = None,
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
                (default: ``faithfulness.detector.SUPPORT_THRESHOLD``).
            splitter: Text -> statements: ``sentences`` (``text.split_sentences``),
                ``clauses`` (``faithfulness.claims.split_clauses``: sentences also split at
                "and", "but", ";", ", which"), ``claims``
                (``faithfulness.claims.split_claim_parts``: clauses, also at an appositive and a
                last adjunct of place or time; the default) or a function.
            max_chars: Characters read from each text.
            max_statements: Statements read from each text.
            max_chunks: Retrieved chunks read, from the top.
            **options: ``threshold``, ``timeout_s``, ``batch_size``, ...
        """
        super().__init__(**options)
        if support is not None and not callable(support):
            raise ValueError(f"{self.name}: support must be callable, got {support!r}")
        self.support = support
        self.support_threshold = _support_threshold(self.name, support, support_threshold)
        self.splitter: Splitter = named_splitter(self.name, splitter, self.default_splitter)
        self.max_chars = positive_int(self.name, "max_chars", max_chars)
        self.max_statements = positive_int(self.name, "max_statements", max_statements)
        self.max_chunks = positive_int(self.name, "max_chunks", max_chunks)

    def _plan(self, record: RagRecord) -> Plan:
        """Items to score for ``record`` and how to finish (raise InputError on bad input)."""
        raise NotImplementedError

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

    def support_many(self, items: Sequence[Item]) -> list[list[float]]:
        """Support probabilities for every ``(claims, passages)`` item."""
        if not items:
            return []
        if self.support is None:
            from ragtrace.evaluators._faithfulness.detector import default_detector

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


def _support_threshold(name: str, support: SupportFn | None, value: float | None) -> float:
    chosen = unit_option(name, "support_threshold", value)
    if chosen is not None:
        return chosen
    try:
        from ragtrace.evaluators._faithfulness.detector import SUPPORT_THRESHOLD
    except ImportError:
        if support is None:
            raise
        return FALLBACK_SUPPORT_THRESHOLD
    return float(SUPPORT_THRESHOLD)


def _probability(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or math.isnan(float(value)):
        raise RuntimeError(f"{name}: support function returned {value!r}, not a probability")
    return min(1.0, max(0.0, float(value)))
