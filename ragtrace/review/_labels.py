"""Labels flow back: a person's verdict becomes a ``human`` Score on ragtrace's sinks.

``LabelService(store, sinks).label(item_id, Label("bad", "hallucination"))`` stores the label,
then publishes it like any evaluator result:

- OpenTelemetry: an ``evaluate human`` span (``gen_ai.evaluation.name = "human"``, kind
  ``human``) in a trace of its own, linked to the labelled request's RAG span, through the same
  ``OtelEvaluationSink`` the pipeline uses, so Phoenix, Jaeger or Tempo show the verdict.
- Prometheus: ``ragtrace_evaluations_total{evaluator="human", outcome}`` (good = pass,
  bad = fail, unsure = skipped) and, for good and bad, ``ragtrace_evaluation_score`` (1 and 0)
  with the trace id as exemplar.
- The review collector (``ReviewMetrics``) is told to read the store again, so
  ``ragtrace_review_labels_total`` and the agreement gauges move at the next scrape.

The human Score: value 1.0 (good), 0.0 (bad) or None (unsure); label the verdict; threshold
0.5; explanation the notes; details the failure type, reviewer, item id and whether a corrected
answer was given. The notes and corrected answer are redacted (``redact``) before they are
stored or sent anywhere.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ragtrace._capture.content import TextPolicy
from ragtrace._config import Redactor
from ragtrace._exporters.base import ScoreSink
from ragtrace._metrics.collection import Metrics
from ragtrace._metrics.review import ReviewMetrics
from ragtrace._model import Evaluation, RagRecord, Score
from ragtrace._redaction import Redaction, redaction
from ragtrace.review._items import Label, ReviewItem, StoredLabel
from ragtrace.review._sql_store import SqlReviewStore

logger = logging.getLogger("ragtrace.review")

HUMAN = "human"
MAX_NOTE_CHARS = 16000
_VALUES = {"good": 1.0, "bad": 0.0, "unsure": None}
_OUTCOMES = {"good": "pass", "bad": "fail", "unsure": "skipped"}


def human_score(stored: StoredLabel) -> Score:
    """The ``human`` Score of a label (see the module docstring)."""
    label = stored.label
    details: dict[str, Any] = {
        "review_item": stored.item_id,
        "review_label": stored.id,
        "failure_type": label.failure_type,
        "reviewer": label.reviewer,
        "corrected_answer": label.corrected_answer is not None,
    }
    return Score(
        name=HUMAN,
        value=_VALUES[label.verdict],
        label=label.verdict,
        explanation=label.notes,
        threshold=0.5,
        passed=None if label.verdict == "unsure" else label.verdict == "good",
        evaluator_kind="human",
        details={k: v for k, v in details.items() if v is not None},
    )


class HumanPrometheusSink:
    """Counts human verdicts in ragtrace's evaluation families (unsure counts as skipped)."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        for evaluation in evaluations:
            for score in evaluation.scores:
                verdict = score.label if score.label in _OUTCOMES else "unsure"
                self.metrics.count_evaluation(score.name, _OUTCOMES[verdict], record.app)
                if score.value is not None:
                    self.metrics.observe_score(score, record.app, record.trace_id or None)

    def shutdown(self) -> None:
        """The families belong to ``Metrics``."""


class LabelService:
    """Stores labels and publishes them as human Scores.

    Args:
        store: The review store.
        sinks: Where human Scores go (``OtelEvaluationSink``, ``HumanPrometheusSink``, ...).
        review_metrics: Told to re-read the store after each label.
        redact: The redaction policy (a name, a function or a ``Redaction``) applied to notes,
            corrected answer and reviewer before anything is written.
    """

    def __init__(
        self,
        store: SqlReviewStore,
        sinks: Sequence[ScoreSink] = (),
        *,
        review_metrics: ReviewMetrics | None = None,
        redact: str | Redactor | Redaction | None = None,
    ) -> None:
        self.store = store
        self.sinks = tuple(sinks)
        self.review_metrics = review_metrics
        self._policy = TextPolicy(redaction(redact))

    def label(
        self,
        item_id: int,
        label: Label,
        *,
        expected_label_id: int | None = None,
        holder: str | None = None,
    ) -> StoredLabel:
        """Store ``label`` for an item (notes, corrected answer and reviewer redacted) and
        publish it; the arguments, and the errors raised, are ``SqlReviewStore.add_label``'s."""
        clean = Label(
            verdict=label.verdict,
            failure_type=label.failure_type,
            notes=self._policy.clean(label.notes, MAX_NOTE_CHARS)[0],
            corrected_answer=self._policy.clean(label.corrected_answer, MAX_NOTE_CHARS)[0],
            reviewer=self._policy.clean(label.reviewer, 200)[0],
        )
        stored = self.store.add_label(
            item_id, clean, expected_label_id=expected_label_id, holder=holder
        )
        if self.review_metrics is not None:
            self.review_metrics.invalidate()
        item = self.store.get(item_id)
        if item is not None:
            self.publish(item, stored)
        return stored

    def publish(self, item: ReviewItem, stored: StoredLabel) -> None:
        """Send the human Score of ``stored`` to every sink; a failing sink is logged."""
        record = RagRecord(
            trace_id=item.trace_id,
            span_id=item.span_id,
            query=None,
            app=item.app,
            model=item.model,
            start_ns=item.request_ns,
            end_ns=item.request_ns,
        )
        evaluation = Evaluation(HUMAN, (human_score(stored),), stored.created_ns, stored.created_ns)
        for sink in self.sinks:
            try:
                sink.export(record, [evaluation])
            except Exception:
                logger.warning("ragtrace review: sink %r failed on a label", sink, exc_info=True)

    def shutdown(self) -> None:
        """Shut the sinks down."""
        for sink in self.sinks:
            try:
                sink.shutdown()
            except Exception:
                logger.warning("ragtrace review: sink %r failed to shut down", sink, exc_info=True)
