"""What the evaluation pipeline reports: drops, evaluations, sampling decisions, queue depth.

``PipelineMetrics`` is the protocol both sides of the pipeline count through;
``ragtrace._metrics.collection.Metrics`` satisfies it, and tests pass a fake.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ragtrace._model import RagRecord
from ragtrace.evaluators._base import Evaluator


class PipelineMetrics(Protocol):
    """What the pipeline reports; ``ragtrace._metrics.collection.Metrics`` satisfies it."""

    def count_drop(self, reason: str) -> None: ...
    def count_evaluation(self, evaluator: str, outcome: str, app: str) -> None: ...
    def count_sampling(self, decision: str, reason: str, n: int = 1) -> None: ...
    def watch_queue_depth(self, fn: Callable[[], float]) -> None: ...


def skipped(metrics: PipelineMetrics, evaluator: Evaluator, record: RagRecord) -> bool:
    """Whether ``record`` lacks a field ``evaluator`` needs; such a skip is counted."""
    if evaluator.missing_fields(record):
        metrics.count_evaluation(evaluator.name, "skipped", record.app)
        return True
    return False
