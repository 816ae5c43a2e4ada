"""Answer relevance: does the answer address the question? A calibrated model and two readings.

All embed the query (whole; for a follow-up the app rewrote, its standalone question:
``ragtrace.evaluators._question.question_of``) and each sentence of the response with the
sentence embedder (default: the packaged all-MiniLM-L6-v2; ``model=`` takes any
sentence-transformers id or folder, or an ``.onnx`` file) and compare them with
``S = 1 - cosine distance = cosine``, clipped to [0, 1] (see ``ragtrace.evaluators._similarity``):

- ``answer_relevance`` (``AnswerRelevance``), by default (``method="calibrated"``): the
  probability that the answer addresses the question, from a small logistic model
  (``answer_signals.SignalModel``, weights in ``data/signal_models.json``, fitted by
  ``training/train_signals.py`` on the tuning part of public data) over the best sentence
  similarity to the query, the share of the answer's words found in the retrieved passages and
  in the three passage sentences nearest the question, and whether its form answers the
  question's ("yes" to a yes/no question, a number to "How many ...?"). Records without
  passages are read by a second model over the similarity and the form only. Operating points
  (``threshold=`` a name; by model, with passages / without): ``"strict"`` 0.82 / 0.23,
  ``"default"`` 0.18 / 0.13, ``"lenient"`` 0.04 / 0.10 (chosen on the default int8 embedder's
  vectors); each Score carries its model's cut.
  At the default, on the locked part, it fails at most 3.1% of normal answers and catches
  93.9% or more of another question's answers (docs/evaluators-online.md).
- ``answer_relevance`` with ``method="mean"``, after the Ejento metrics guide (seeds 000/001,
  "1.3 Answer Relevance"): the mean similarity of the response's segments to the query,
  ``1/N * sum_i cosine_similarity(E_gi, E_o)``. The guide says "each sentence or response
  segment": a segment here is a sentence (``ragtrace.evaluators._text.split_sentences``). An answer
  with one on-topic sentence and three digressions scores low: it "includes off-topic info". It
  was the default until it was measured against short correct answers: it failed 52-63% of
  ARES's and HaluEval's ("1967", "Arthur's Magazine" sit far from any question).
- ``answer_relevance_similarity`` (``AnswerRelevanceSentenceSimilarity``), after H2O Eval
  Studio's "Answer Relevancy (Sentence Similarity)" (seed 004):
  ``max({S(emb(question), emb(a)) for a in actual answer})``: at least one sentence answers.

Cosine thresholds (the mean and the H2O max): H2O's default is 0.75 with BAAI/bge-small-en,
whose cosines sit high (unrelated English sentences score ~0.6-0.7 there). MiniLM's cosines
spread lower: an unrelated answer scores ~0-0.15, an answer to the question ~0.2-0.8 (short
ones, bare names and figures, at the low end). Both default to ``ANSWER_THRESHOLD`` = 0.3; set
``threshold=0.75`` when ``model=`` is a bge model. The Ejento guide gives no threshold.

``details``: ``sentences`` (count), ``similarities`` (per response sentence, 4 decimals), the
best (and for the mean, the worst) sentence's index, for the calibrated method ``signals`` and
``signal_model``, and ``truncated`` (a cap applied; caps: 64 sentences per response and per
chunk, 256 passage sentences, 2,000 characters per sentence and for the query).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ragtrace._model import RagRecord, Score
from ragtrace._text import to_text
from ragtrace.evaluators import _answer_signals as answer_signals
from ragtrace.evaluators._answer_signals import (
    answers_form,
    covered_share,
    settle_method,
    signal_model,
    top_indices,
)
from ragtrace.evaluators._base import refuse_options
from ragtrace.evaluators._faithfulness.features import index_passages
from ragtrace.evaluators._question import question_of
from ragtrace.evaluators._similarity import (
    ContextSentences,
    SimilarityEvaluator,
    TextBank,
    context_sentences,
    rounded,
    selected_context,
    sentences,
    similarity,
    whole,
)

if TYPE_CHECKING:
    from ragtrace.evaluators._similarity import Matrix


ANSWER_THRESHOLD = 0.3  # the Ejento mean cosine (method="mean") and the H2O max
CONTEXT_MODEL = "answer_relevance"
NO_CONTEXT_MODEL = "answer_relevance_no_context"
NEAR_QUERY_SENTENCES = 3
# By signal model (records with passages, records without): the probability below which an
# answer fails (training/train_signals.py chose them on the tuning part).
OPERATING_POINTS: dict[str, dict[str, float | None]] = {
    "strict": {CONTEXT_MODEL: 0.82, NO_CONTEXT_MODEL: 0.23},
    "default": {CONTEXT_MODEL: 0.18, NO_CONTEXT_MODEL: 0.13},
    "lenient": {CONTEXT_MODEL: 0.04, NO_CONTEXT_MODEL: 0.10},
}


@dataclass(frozen=True, slots=True)
class _RelevancePlan:
    query: list[int]
    answer: list[int]
    context: list[int]
    context_texts: tuple[str, ...]
    query_text: str
    answer_text: str
    truncated: bool


@dataclass(frozen=True, slots=True)
class _Plan:
    query: list[int]
    answer: list[int]
    truncated: bool


def _missing_text(
    evaluator: SimilarityEvaluator[Any], query: list[int], answer: list[int]
) -> list[Score] | None:
    """Error Scores when the query or the answer has nothing to embed, else None."""
    if not query:
        return evaluator.errors("the query has no text to embed")
    if not answer:
        return evaluator.errors("the response has no sentence to embed")
    return None


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
        query = whole(question_of(record))
        answer = sentences(record.response, self.max_sentences)
        return _Plan(
            bank.add(query.texts), bank.add(answer.texts), query.truncated or answer.truncated
        )

    def compute(self, plan: _Plan, vectors: Matrix, model_id: str) -> list[Score]:
        missing = _missing_text(self, plan.query, plan.answer)
        if missing:
            return missing
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


class AnswerRelevance(SimilarityEvaluator[_RelevancePlan]):
    """Probability that the answer addresses the question (calibrated, default), or the mean
    cosine similarity of its sentences to the query (``method="mean"``, Ejento)."""

    name: ClassVar[str] = "answer_relevance"
    requires: ClassVar[frozenset[str]] = frozenset({"query", "response"})
    threshold_per_record: ClassVar[bool] = True
    threshold: float | None = OPERATING_POINTS["default"][CONTEXT_MODEL]
    operating_points = OPERATING_POINTS

    def __init__(
        self, *, method: str = "calibrated", weights: str | None = None, **options: Any
    ) -> None:
        """Build the evaluator.

        Args:
            method: ``calibrated`` (default: the probability from the signals above) or
                ``mean`` (the Ejento mean cosine, default threshold 0.3).
            weights: Another signal-model file (``training/train_signals.py`` writes one).
            **options: ``threshold`` (an operating point's name or a number), ``model``,
                ``threads``, ``max_sentences``, ``max_context_sentences``, ``batch_size``, ...
        """
        super().__init__(**options)
        settle_method(self, method, "mean", ANSWER_THRESHOLD, options.get("threshold"))
        self.method = method
        self.weights = weights

    def plan(self, record: RagRecord, bank: TextBank) -> _RelevancePlan:
        query = whole(question_of(record))
        answer = sentences(record.response, self.max_sentences)
        context = ContextSentences((), (), False)
        if self.method == "calibrated":
            context = context_sentences(
                tuple(record.chunks or ()), self.max_sentences, self.max_context_sentences
            )
        keep = selected_context(query.texts, answer.texts, context, self.select_sentences)
        return _RelevancePlan(
            bank.add(query.texts),
            bank.add(answer.texts),
            bank.add(context.texts, keep),
            context.texts,
            to_text(question_of(record)) or "",
            to_text(record.response) or "",
            query.truncated or answer.truncated or context.truncated,
        )

    def compute(self, plan: _RelevancePlan, vectors: Matrix, model_id: str) -> list[Score]:
        missing = _missing_text(self, plan.query, plan.answer)
        if missing:
            return missing
        sims = similarity(vectors, plan.query, plan.answer)[0]
        best = int(sims.argmax())
        details: dict[str, Any] = {
            "sentences": len(plan.answer),
            "similarities": rounded(sims),
            "best_sentence": best,
        }
        if self.method == "mean":
            value = float(sims.mean())
            worst = int(sims.argmin())
            explanation = (
                f"mean similarity {value:.2f} of {len(sims)} response sentence(s) to the query "
                f"(least relevant: sentence {worst}, {sims[worst]:.2f})"
            )
            details["worst_sentence"] = worst
        else:
            signals = relevance_signals(plan, sims, vectors)
            model = signal_model(
                CONTEXT_MODEL if plan.context else NO_CONTEXT_MODEL,
                None if self.weights is None else Path(self.weights),
            )
            value = model.probability(signals)
            details.update(signals=answer_signals.rounded(signals), signal_model=model.name)
            explanation = (
                f"relevance probability {value:.2f}: best sentence similarity "
                f"{signals['query_similarity']:.2f} to the query"
                + (
                    f", {signals['covered']:.0%} of its words in the passages "
                    f"({signals['covered_near_query']:.0%} in those nearest the question)"
                    if plan.context
                    else ", no passages to compare"
                )
                + ("; its form answers the question's" if signals["answers_form"] else "")
            )
        details["truncated"] = plan.truncated
        threshold = None if self.method == "mean" else self.threshold_of(details["signal_model"])
        return [
            self.score(
                value, explanation=explanation, model=model_id, details=details, threshold=threshold
            )
        ]


def relevance_signals(plan: _RelevancePlan, sims: Matrix, vectors: Matrix) -> dict[str, float]:
    """The calibrated model's signals (``answer_signals``) of one record."""
    signals = {
        "query_similarity": float(sims.max()),
        "answers_form": 1.0 if answers_form(plan.query_text, plan.answer_text) else 0.0,
    }
    if plan.context:
        near = similarity(vectors, plan.query, plan.context)[0]
        top = top_indices([float(v) for v in near], NEAR_QUERY_SENTENCES)
        signals["covered"] = covered_share(plan.answer_text, index_passages(plan.context_texts))
        signals["covered_near_query"] = covered_share(
            plan.answer_text, index_passages([plan.context_texts[i] for i in top])
        )
    return signals


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
