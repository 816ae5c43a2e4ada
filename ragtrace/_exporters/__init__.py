"""Where evaluation results go (sinks only): OpenTelemetry logs and spans, Prometheus metrics
(the families and the endpoint are ``ragtrace._metrics``), Phoenix annotations.

Every sink implements ``ScoreSink``: ``export(record, evaluations)`` is called once per evaluated
record from a worker thread, never from the application's thread. What it receives, ``Evaluation``,
lives beside ``Score`` in ``ragtrace._model``.
"""

from __future__ import annotations

from ragtrace._exporters.base import ScoreSink, outcome_of

__all__ = ["ScoreSink", "outcome_of"]
