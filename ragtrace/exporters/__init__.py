"""Where evaluation results go: OpenTelemetry spans, Prometheus metrics (and later a review store).

Every sink implements ``ScoreSink``: ``export(record, evaluations)`` is called once per evaluated
record from a worker thread, never from the application's thread.
"""

from __future__ import annotations

from ragtrace.exporters.base import Evaluation, ScoreSink, outcome_of

__all__ = ["Evaluation", "ScoreSink", "outcome_of"]
