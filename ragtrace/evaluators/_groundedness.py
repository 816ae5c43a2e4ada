"""Groundedness: is the answer drawn from the retrieved context?

By default (``method="calibrated"``) the value is the probability that it is, from a small
logistic model (``answer_signals.SignalModel``, weights in ``data/signal_models.json``, fitted by
``training/train_signals.py`` on the tuning part of public data: normal answers against the
same answers read with another record's passages) over three signals: the mean, over answer
sentences, of each one's best similarity to a context sentence; the share of the answer's
content words found in the context (numbers as values); and the share of its capitalised names
found nowhere in it. The threshold is the record's task's (``details["task"]``: the
``ragtrace.task`` attribute, ``task=``, or inferred as faithfulness infers it), by operating
point (``threshold=`` a name; qa / summary / data2txt): ``"strict"`` 0.91 / 0.18 / 0.48,
``"default"`` 0.25 / 0.18 / 0.36, ``"lenient"`` 0.03 / 0.18 / 0.27 (chosen on the default int8
embedder's vectors). At the default, on the locked part, it fails at most 3.5% of faithful answers
and catches 93.2% or more of answers read against another record's passages
(docs/evaluators-online.md). It judges the answer as a whole: one
invented sentence among grounded ones is faithfulness's to catch.

``method="min"`` is H2O Eval Studio's "Groundedness Evaluator" (semantic similarity, seed 004)::

    groundedness = min({ max({S(emb(a), emb(c)) for c in C}) for a in A })

where ``a`` are the sentences of the response, ``c`` the sentences of every retrieved chunk
and ``S = 1 - cosine distance = cosine``, clipped to [0, 1] (see
``ragtrace.evaluators._similarity``). One answer sentence with no close context sentence is
enough to pull the score down: the metric finds the least grounded sentence, as the catalogue's
insight names it. It was the default until it was measured on answers known to be faithful: it
failed 30-57% of them, and every data-to-text answer (a JSON record has no sentence to match).
Both methods are similarity proxies, not entailment checks: a sentence that restates a context
sentence with one fact changed still scores high.

Both read only the chunks the answer's model call saw when capture knows them
(``ragtrace.evaluators._answer_context``): a document a grader dropped grounds nothing; the
explanation then says so, chunk indices stay the record's, and ``judged_chunks`` lists them.

Choices where the catalogue is silent:

- A context without any sentence (all chunks empty) grounds nothing: every answer sentence
  gets 0. A response without a sentence is an error Score (the catalogue reports "a problem").
- Caps (``truncated`` in details): 64 answer sentences; 64 sentences per chunk and 256 context
  sentences per record, chunk by chunk in rank order (later chunks are not searched);
  sentences cut to 2,000 characters.
- ``method="min"``'s default threshold is 0.5 (H2O's 0.75 is for BAAI/bge-small-en, whose
  cosines sit higher than MiniLM's; pass ``threshold=0.75`` with a bge model).

``details`` (both methods): ``sentences`` (per answer sentence: ``sentence`` index,
``similarity`` of its best context match, that match's ``chunk`` index and ``chunk_sentence``
index within the chunk, None when there is no context sentence), ``least_grounded`` (the same
for the minimum, plus ``text``, the sentence's first 200 characters), ``context_sentences``
(count searched) and ``truncated``; the calibrated method adds ``signals``, ``signal_model``,
``task`` and ``least_grounded_similarity`` (H2O's value).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ragtrace._model import RagRecord, Score
from ragtrace._text import to_text
from ragtrace.evaluators import _answer_signals as answer_signals
from ragtrace.evaluators._answer_context import AnswerContext, answer_context
from ragtrace.evaluators._answer_signals import covered_share, settle_method, signal_model
from ragtrace.evaluators._faithfulness.features import index_passages, missing_name_share
from ragtrace.evaluators._faithfulness.response import TASKS, record_task, task_name
from ragtrace.evaluators._question import question_of
from ragtrace.evaluators._similarity import (
    DIGITS,
    ContextSentences,
    SimilarityEvaluator,
    TextBank,
    chunk_text,
    context_sentences,
    excerpt,
    selected_context,
    sentences,
    similarity,
    whole,
)

if TYPE_CHECKING:
    from ragtrace.evaluators._similarity import Matrix


MODEL = "groundedness"
MIN_THRESHOLD = 0.5  # the H2O minimum cosine (method="min")
# Per task: the calibrated probability below which an answer fails.
OPERATING_POINTS: dict[str, dict[str, float | None]] = {
    "strict": {"qa": 0.91, "summary": 0.18, "data2txt": 0.48},
    "default": {"qa": 0.25, "summary": 0.18, "data2txt": 0.36},
    "lenient": {"qa": 0.03, "summary": 0.18, "data2txt": 0.27},
}


@dataclass(frozen=True, slots=True)
class _Plan:
    answer: list[int]
    answer_texts: tuple[str, ...]
    context: list[int]
    sentences: ContextSentences
    truncated: bool
    answer_text: str = ""
    task: str = "qa"
    judged: AnswerContext | None = None


def grounding_signals(plan: _Plan, similarities: list[float]) -> dict[str, float]:
    """The calibrated model's signals (``answer_signals``) of one record."""
    index = index_passages(plan.sentences.texts)
    return {
        "mean_similarity": sum(similarities) / len(similarities),
        "covered": covered_share(plan.answer_text, index),
        "names_missing": missing_name_share(plan.answer_text, index),
    }


class Groundedness(SimilarityEvaluator[_Plan]):
    """The least grounded answer sentence's best similarity to a context sentence."""

    name: ClassVar[str] = "groundedness"
    requires: ClassVar[frozenset[str]] = frozenset({"chunks", "response"})
    threshold_per_record: ClassVar[bool] = True
    threshold: float | None = OPERATING_POINTS["default"]["qa"]
    operating_points = OPERATING_POINTS

    def __init__(
        self,
        *,
        method: str = "calibrated",
        task: str | None = None,
        weights: str | None = None,
        **options: Any,
    ) -> None:
        """Build the evaluator.

        Args:
            method: ``calibrated`` (default: the probability that the answer is drawn from the
                passages) or ``min`` (H2O's least grounded sentence, default threshold 0.5).
            task: ``qa``, ``summary`` or ``data2txt`` for records without a ``ragtrace.task``
                attribute (default: inferred from each record's shape, as ``faithfulness``
                does); it picks the calibrated method's threshold.
            weights: Another signal-model file (``training/train_signals.py`` writes one).
            **options: ``threshold`` (an operating point's name, or a number for every task),
                ``model``, ``threads``, ``max_sentences``, ``max_context_sentences``, ...
        """
        if task is not None and task_name(task) is None:
            raise ValueError(f"groundedness: task must be one of {', '.join(TASKS)}, got {task!r}")
        super().__init__(**options)
        settle_method(self, method, "min", MIN_THRESHOLD, options.get("threshold"))
        self.method = method
        self.task = task_name(task)
        self.weights = weights

    def plan(self, record: RagRecord, bank: TextBank) -> _Plan:
        answer = sentences(record.response, self.max_sentences)
        judged = answer_context(record)
        chunks = judged.chunks
        found = context_sentences(chunks, self.max_sentences, self.max_context_sentences)
        passages = [t for c in chunks if (t := to_text(chunk_text(c)))]
        keep = None
        if self.select_sentences is not None:
            query = whole(question_of(record)).texts
            keep = selected_context(query, answer.texts, found, self.select_sentences)
        return _Plan(
            bank.add(answer.texts),
            answer.texts,
            bank.add(found.texts, keep),
            found,
            answer.truncated or found.truncated,
            to_text(record.response) or "",
            record_task(to_text(record.query), passages, record.attributes, self.task),
            judged,
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
                if plan.judged is not None:
                    chunk = plan.judged.place(chunk)
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
        judged = plan.judged
        explanation = (
            f"least grounded of {len(per_sentence)} answer sentence(s): sentence {least} "
            f"(best context match {value:.2f}, {where})"
        ) + (judged.note() if judged is not None else "")
        details: dict[str, Any] = {
            "sentences": per_sentence,
            "least_grounded": worst,
            "context_sentences": len(plan.context),
            "truncated": plan.truncated,
            **(judged.details() if judged is not None else {}),
        }
        if self.method == "min":
            return [self.score(value, explanation=explanation, model=model_id, details=details)]
        similarities = [row["similarity"] for row in per_sentence]
        signals = grounding_signals(plan, similarities)
        model = signal_model(MODEL, None if self.weights is None else Path(self.weights))
        probability = model.probability(signals)
        threshold = self.threshold_of(plan.task)
        details.update(
            signals=answer_signals.rounded(signals),
            signal_model=model.name,
            task=plan.task,
            least_grounded_similarity=round(value, DIGITS),
        )
        explanation = (
            f"grounded probability {probability:.2f} ({plan.task}): mean best similarity "
            f"{signals['mean_similarity']:.2f} to a context sentence, "
            f"{signals['covered']:.0%} of its words and "
            f"{1 - signals['names_missing']:.0%} of its names in the passages; " + explanation
        )
        return [
            self.score(
                probability,
                explanation=explanation,
                model=model_id,
                details=details,
                threshold=threshold,
            )
        ]
