"""Evaluation results as Prometheus metrics: ``PrometheusSink`` turns each record's
evaluations into the ``ragtrace_evaluation_*`` families of a ``Metrics``
(``ragtrace._metrics``, where the ``/metrics`` endpoint that serves them lives too)::

    sink = PrometheusSink(rt.metrics)            # hand it to the evaluation pipeline

Every ``Ragtrace`` has one (``from_config``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ragtrace._config import Config
from ragtrace._exporters.base import SinkContext, outcome_of
from ragtrace._metrics.collection import Metrics
from ragtrace._model import Evaluation, RagRecord


class PrometheusSink:
    """A ``ScoreSink`` that counts outcomes, observes scores and evaluator durations.

    Per ``Evaluation``: its duration once under ``evaluator=evaluation.evaluator``; per
    ``Score``: one ``ragtrace_evaluations_total`` count with ``outcome_of(score)`` and, when the
    score has a value, one observation of ``ragtrace_evaluation_score`` with the record's trace
    id as exemplar (both under ``evaluator=score.name``, ``app=record.app``).
    """

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        """Publish one record's evaluation results."""
        metrics = self.metrics
        for evaluation in evaluations:
            metrics.observe_evaluation_duration(evaluation.evaluator, evaluation.duration_s)
            for score in evaluation.scores:
                metrics.count_evaluation(score.name, outcome_of(score), record.app)
                if score.value is not None:
                    metrics.observe_score(score, record.app, record.trace_id)

    def shutdown(self) -> None:
        """Nothing to release: the families belong to ``Metrics``."""


def from_config(config: Config, context: SinkContext) -> PrometheusSink:
    """The Prometheus sink every ``Ragtrace`` has, over its metrics."""
    return PrometheusSink(context.metrics)
