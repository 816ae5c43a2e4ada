"""Where the pipeline hands things on: record sinks and the score sinks evaluations go to.

A ``RecordSink`` is any callable that takes every finished record on the application's thread
(``EvaluationPipeline.add_record_sink``). ``ScoreSinks`` publishes one record's evaluations to
each score sink (OpenTelemetry, Prometheus, a review store, ...) from a worker thread; a sink
that raises is reported to diagnostics and the others still get the record::

    sinks = ScoreSinks([otel_sink, prometheus_sink], diagnostics, redaction("pii"))
    sinks.publish(record, evaluations)
    sinks.shutdown()

Evaluations are redacted once, here, before any sink sees them: an explanation or a detail may
quote the text it judged (``Config.redact``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ragtrace.diagnostics import Diagnostics
from ragtrace.exporters.base import Evaluation, ScoreSink
from ragtrace.model import RagRecord
from ragtrace.redaction import NO_REDACTION, Redaction

RecordSink = Callable[[RagRecord], None]


class ScoreSinks:
    """The score sinks, published to in the order they were given.

    Args:
        sinks: The first sinks.
        diagnostics: Where a sink's failure is reported (``pipeline.sink.<type>``).
        redaction: Applied to every evaluation before the sinks get it.
    """

    def __init__(
        self,
        sinks: Sequence[ScoreSink],
        diagnostics: Diagnostics,
        redaction: Redaction = NO_REDACTION,
    ) -> None:
        self.sinks: tuple[ScoreSink, ...] = tuple(sinks)
        self._diag = diagnostics
        self._redaction = redaction

    def add(self, sink: ScoreSink) -> None:
        """Publish to ``sink`` too, from the next record on (callers serialise their adds)."""
        self.sinks = (*self.sinks, sink)

    def publish(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        """Hand one record's evaluations, redacted, to every sink. Never raises."""
        try:
            evaluations = self._redaction.evaluations(evaluations)
        except Exception as exc:  # never publish what could not be redacted
            self._diag.error("pipeline.redact", exc)
            return
        for sink in self.sinks:
            try:
                sink.export(record, evaluations)
            except Exception as exc:
                self._diag.error(f"pipeline.sink.{type(sink).__name__}", exc)

    def shutdown(self) -> None:
        """Shut every sink down (they flush and close). Never raises."""
        for sink in self.sinks:
            try:
                sink.shutdown()
            except Exception as exc:
                self._diag.error("pipeline.sink_shutdown", exc)
