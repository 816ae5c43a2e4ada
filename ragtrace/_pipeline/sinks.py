"""Where the pipeline hands things on: record sinks and the score sinks evaluations go to.

A ``RecordSink`` is any callable that takes every finished record on the application's thread
(``EvaluationPipeline.add_record_sink``). ``ScoreSinks`` publishes one record's evaluations to
each score sink (OpenTelemetry, Prometheus, a review store, ...) from a worker thread; a sink
that raises is reported to diagnostics and the others still get the record::

    sinks = ScoreSinks([otel_sink, prometheus_sink], diagnostics, redaction("pii"))
    sinks.publish(record, evaluations)
    sinks.shutdown()

A queue that redelivers acknowledges a batch only once its results are delivered: the workers
take ``mark()`` before publishing it and ask ``deliver(mark, timeout_s)`` after; the sinks that
send in the background (``ConfirmsDelivery``: OTLP, Phoenix) confirm, the others delivered when
``export`` returned (a review store commits there; Prometheus is scraped)::

    mark = sinks.mark()
    failed = sinks.publish(record, evaluations)     # names of sinks whose export raised
    failed |= sinks.deliver(mark, timeout_s=5.0)   # names of sinks that did not confirm

Evaluations are redacted once, here, before any sink sees them: an explanation or a detail may
quote the text it judged (``Config.redact``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import cast

from ragtrace._diagnostics import Diagnostics
from ragtrace._exporters.base import ConfirmsDelivery, ScoreSink
from ragtrace._model import Evaluation, RagRecord
from ragtrace._redaction import NO_REDACTION, Redaction

RecordSink = Callable[[RagRecord], None]
"""A function ``Ragtrace.add_record_sink`` calls with each finished request's record, on the
thread that finished the request."""
DeliveryMark = tuple[int, ...]
"""One mark per sink (``ScoreSinks.mark``)."""


def sink_name(sink: object) -> str:
    """The name a sink's failures are reported under: its type's name."""
    return type(sink).__name__


def _confirms(sink: object) -> ConfirmsDelivery | None:
    ok = callable(getattr(sink, "delivery_mark", None)) and callable(getattr(sink, "deliver", None))
    return cast(ConfirmsDelivery, sink) if ok else None


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

    def publish(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> set[str]:
        """Hand one record's evaluations, redacted, to every sink. Never raises.

        Returns:
            The names (``sink_name``) of the sinks whose ``export`` raised.
        """
        try:
            evaluations = self._redaction.evaluations(evaluations)
        except Exception as exc:  # never publish what could not be redacted
            self._diag.error("pipeline.redact", exc)
            return set()
        failed: set[str] = set()
        for sink in self.sinks:
            try:
                sink.export(record, evaluations)
            except Exception as exc:
                failed.add(sink_name(sink))
                self._diag.error(f"pipeline.sink.{type(sink).__name__}", exc)
        return failed

    def mark(self) -> DeliveryMark:
        """Each sink's delivery mark (0 for a sink that confirms nothing), taken before
        publishing what ``deliver`` is to confirm. Never raises."""
        marks: list[int] = []
        for sink in self.sinks:
            confirms = _confirms(sink)
            try:
                marks.append(confirms.delivery_mark() if confirms is not None else 0)
            except Exception as exc:
                self._diag.error("pipeline.delivery", exc)
                marks.append(-1)  # never equal to a later mark: the delivery fails
        return tuple(marks)

    def deliver(self, mark: DeliveryMark, timeout_s: float) -> set[str]:
        """Ask every sink that confirms delivery to send what it holds, sharing ``timeout_s``
        (the sinks send in parallel already: each waits for the time left). Never raises.

        Returns:
            The names of the sinks that did not confirm (empty: all delivered). A sink added
            after ``mark`` confirms nothing for this batch.
        """
        deadline = time.monotonic() + max(0.0, timeout_s)
        failed: set[str] = set()
        for sink, since in zip(self.sinks, mark, strict=False):
            confirms = _confirms(sink)
            if confirms is None:
                continue
            try:
                ok = since >= 0 and confirms.deliver(since, max(0.0, deadline - time.monotonic()))
            except Exception as exc:
                self._diag.error("pipeline.delivery", exc)
                ok = False
            if not ok:
                failed.add(sink_name(sink))
        return failed

    def shutdown(self) -> None:
        """Shut every sink down (they flush and close). Never raises."""
        for sink in self.sinks:
            try:
                sink.shutdown()
            except Exception as exc:
                self._diag.error("pipeline.sink_shutdown", exc)
