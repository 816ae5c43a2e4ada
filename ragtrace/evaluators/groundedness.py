"""Groundedness: is every sentence of the answer backed by some sentence of the context?

After H2O Eval Studio's "Groundedness Evaluator" (semantic similarity, seed 004)::

    groundedness = min({ max({S(emb(a), emb(c)) for c in C}) for a in A })

where ``a`` are the sentences of the response, ``c`` the sentences of every retrieved chunk
and ``S = 1 - cosine distance = cosine``, clipped to [0, 1] (see
``ragtrace.evaluators._similarity``). One answer sentence with no close context sentence is
enough to pull the score down: the metric finds the least grounded sentence, as the catalogue's
insight names it. It is a similarity proxy, not an entailment check: a sentence that restates a
context sentence with one fact changed still scores high.

Choices where the catalogue is silent:

- A context without any sentence (all chunks empty) grounds nothing: every answer sentence
  gets 0. A response without a sentence is an error Score (the catalogue reports "a problem").
- Caps (``truncated`` in details): 64 answer sentences; 64 sentences per chunk and 256 context
  sentences per record, chunk by chunk in rank order (later chunks are not searched);
  sentences cut to 2,000 characters.
- Default threshold 0.5 (H2O's 0.75 is for BAAI/bge-small-en, whose cosines sit higher than
  MiniLM's; pass ``threshold=0.75`` with a bge model).

``details``: ``sentences`` (per answer sentence: ``sentence`` index, ``similarity`` of its best
context match, that match's ``chunk`` index and ``chunk_sentence`` index within the chunk, None
when there is no context sentence), ``least_grounded`` (the same for the minimum, plus ``text``,
the sentence's first 200 characters), ``context_sentences`` (count searched) and ``truncated``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ragtrace.evaluators._similarity import (
    DIGITS,
    ContextSentences,
    SimilarityEvaluator,
    TextBank,
    context_sentences,
    excerpt,
    sentences,
    similarity,
)
from ragtrace.model import RagRecord, Score

if TYPE_CHECKING:
    from ragtrace.evaluators._similarity import Matrix


@dataclass(frozen=True, slots=True)
class _Plan:
    answer: list[int]
    answer_texts: tuple[str, ...]
    context: list[int]
    sentences: ContextSentences
    truncated: bool


class Groundedness(SimilarityEvaluator[_Plan]):
    """The least grounded answer sentence's best similarity to a context sentence."""

    name: ClassVar[str] = "groundedness"
    requires: ClassVar[frozenset[str]] = frozenset({"chunks", "response"})

    def plan(self, record: RagRecord, bank: TextBank) -> _Plan:
        answer = sentences(record.response, self.max_sentences)
        found = context_sentences(
            tuple(record.chunks or ()), self.max_sentences, self.max_context_sentences
        )
        return _Plan(
            bank.add(answer.texts),
            answer.texts,
            bank.add(found.texts),
            found,
            answer.truncated or found.truncated,
        )

    def compute(self, plan: _Plan, vectors: Matrix, model_id: str) -> list[Score]:
        if not plan.answer:
            return self.errors("the response has no sentence to embed")
        matrix = similarity(vectors, plan.answer, plan.context)
        per_sentence: list[dict[str, Any]] = []
        for i in range(len(plan.answer)):
            row: dict[str, Any] = {"sentence": i, "similarity": 0.0}
            if plan.context:
                j = int(matrix[i].argmax())
                chunk, within = plan.sentences.locate(j)
                row.update(similarity=float(matrix[i, j]), chunk=chunk, chunk_sentence=within)
            else:
                row.update(chunk=None, chunk_sentence=None)
            per_sentence.append(row)
        least = min(range(len(per_sentence)), key=lambda i: per_sentence[i]["similarity"])
        value = per_sentence[least]["similarity"]
        for row in per_sentence:
            row["similarity"] = round(row["similarity"], DIGITS)
        worst = {**per_sentence[least], "text": excerpt(plan.answer_texts[least])}
        where = (
            f"chunk {worst['chunk']}, sentence {worst['chunk_sentence']}"
            if plan.context
            else "no context sentence"
        )
        explanation = (
            f"least grounded of {len(per_sentence)} answer sentence(s): sentence {least} "
            f"(best context match {value:.2f}, {where})"
        )
        details = {
            "sentences": per_sentence,
            "least_grounded": worst,
            "context_sentences": len(plan.context),
            "truncated": plan.truncated,
        }
        return [self.score(value, explanation=explanation, model=model_id, details=details)]
