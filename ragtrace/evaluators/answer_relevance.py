"""Answer relevance: does the answer address the question? Two embedding readings.

Both embed the query (whole) and each sentence of the response with the sentence embedder
(default: the packaged all-MiniLM-L6-v2; ``model=`` takes any sentence-transformers id or
folder, or an ``.onnx`` file) and compare them with ``S = 1 - cosine distance = cosine``,
clipped to [0, 1] (see ``ragtrace.evaluators._similarity``):

- ``answer_relevance`` (``AnswerRelevance``), after the Ejento metrics guide (seeds 000/001,
  "1.3 Answer Relevance"): the mean similarity of the response's segments to the query,
  ``1/N * sum_i cosine_similarity(E_gi, E_o)``. The guide says "each sentence or response
  segment": a segment here is a sentence (``ragtrace.evaluators.text.split_sentences``). An answer
  with one on-topic sentence and three digressions scores low: it "includes off-topic info".
- ``answer_relevance_similarity`` (``AnswerRelevanceSentenceSimilarity``), after H2O Eval
  Studio's "Answer Relevancy (Sentence Similarity)" (seed 004):
  ``max({S(emb(question), emb(a)) for a in actual answer})``: at least one sentence answers.

Thresholds: H2O's default is 0.75 with BAAI/bge-small-en, whose cosines sit high (unrelated
English sentences score ~0.6-0.7 there). MiniLM's cosines spread lower: an unrelated answer
scores ~0-0.15, an answer to the question ~0.2-0.8 (short ones, bare names and figures, at the
low end). On ARES's answer-relevance rows (``benchmarks/_accuracy_ares.py``, 1,992 labelled
rows) balanced accuracy is 0.59 at 0.5, 0.72 at 0.3 and 0.80 at 0.15. Both evaluators
default to ``ANSWER_THRESHOLD`` = 0.3: ARES's positives are unusually short (bare names score
low), and at 0.3 an answer of one on-topic sentence (~0.8) and two digressions (~0) fails the
mean, as the Ejento reading intends. Set ``threshold=0.75`` when
``model=`` is a bge model. The Ejento guide gives no threshold.

``details``: ``sentences`` (count), ``similarities`` (per response sentence, 4 decimals), the
best (and for the mean, the worst) sentence's index, and ``truncated`` (a cap applied; caps:
64 sentences per response, 2,000 characters per sentence and for the query).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ragtrace.evaluators._similarity import (
    SimilarityEvaluator,
    TextBank,
    rounded,
    sentences,
    similarity,
    whole,
)
from ragtrace.evaluators.base import refuse_options
from ragtrace.model import RagRecord, Score

if TYPE_CHECKING:
    from ragtrace.evaluators._similarity import Matrix


ANSWER_THRESHOLD = 0.3


@dataclass(frozen=True, slots=True)
class _Plan:
    query: list[int]
    answer: list[int]
    truncated: bool


class _QueryVersusAnswer(SimilarityEvaluator[_Plan]):
    """Similarities of the query to each response sentence; subclasses aggregate them."""

    requires: ClassVar[frozenset[str]] = frozenset({"query", "response"})
    threshold: float | None = ANSWER_THRESHOLD

    def __init__(self, **options: Any) -> None:
        """Build the evaluator; ``options`` as ``SimilarityEvaluator`` takes them."""
        refuse_options(
            self.name, options, {"max_context_sentences": "it reads the query and the answer only"}
        )
        super().__init__(**options)

    def plan(self, record: RagRecord, bank: TextBank) -> _Plan:
        query = whole(record.query)
        answer = sentences(record.response, self.max_sentences)
        return _Plan(
            bank.add(query.texts), bank.add(answer.texts), query.truncated or answer.truncated
        )

    def compute(self, plan: _Plan, vectors: Matrix, model_id: str) -> list[Score]:
        if not plan.query:
            return self.errors("the query has no text to embed")
        if not plan.answer:
            return self.errors("the response has no sentence to embed")
        sims = similarity(vectors, plan.query, plan.answer)[0]
        value, explanation, extra = self.aggregate(sims)
        details = {
            "sentences": len(plan.answer),
            "similarities": rounded(sims),
            **extra,
            "truncated": plan.truncated,
        }
        return [self.score(value, explanation=explanation, model=model_id, details=details)]

    @abstractmethod
    def aggregate(self, sims: Matrix) -> tuple[float, str, dict[str, int]]:
        """The value, an explanation and index details from per-sentence similarities."""


class AnswerRelevance(_QueryVersusAnswer):
    """Mean cosine similarity of the response's sentences to the query (Ejento)."""

    name: ClassVar[str] = "answer_relevance"

    def aggregate(self, sims: Matrix) -> tuple[float, str, dict[str, int]]:
        value = float(sims.mean())
        best, worst = int(sims.argmax()), int(sims.argmin())
        explanation = (
            f"mean similarity {value:.2f} of {len(sims)} response sentence(s) to the query "
            f"(least relevant: sentence {worst}, {sims[worst]:.2f})"
        )
        return value, explanation, {"best_sentence": best, "worst_sentence": worst}


class AnswerRelevanceSentenceSimilarity(_QueryVersusAnswer):
    """Largest cosine similarity of a response sentence to the query (H2O)."""

    name: ClassVar[str] = "answer_relevance_similarity"

    def aggregate(self, sims: Matrix) -> tuple[float, str, dict[str, int]]:
        best = int(sims.argmax())
        value = float(sims[best])
        explanation = (
            f"most relevant of {len(sims)} response sentence(s): sentence {best}, "
            f"similarity {value:.2f} to the query"
        )
        return value, explanation, {"best_sentence": best}
