"""Spans to an exporter in batches, never waiting past a deadline, counting what was not sent.

ragtrace's own tracer provider (``otlp_endpoint`` set, no provider from the application) uses
``BoundedSpanProcessor`` instead of the SDK's ``BatchSpanProcessor``, whose ``force_flush``
ignores its timeout and whose shutdown waits for each batch's retries (about 10 s a batch with
an unreachable endpoint)::

    processor = BoundedSpanProcessor(OTLPSpanExporter(endpoint=url), metrics.count_dropped_spans)
    provider.add_span_processor(processor)
    ...
    processor.close(timeout_s=2.0)      # returns within 2 s, whatever the endpoint does

Every span that ends here is either handed to the exporter with success or counted once in
``on_drop(reason, n)`` (``queue_full``, ``export_failed``, ``shutdown``; see
``bounded_export``, which does the batching).
"""

from __future__ import annotations

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ragtrace.runtime.bounded_export import (
    DELAY_S,
    MAX_BATCH,
    MAX_QUEUE,
    BoundedBatches,
    DropCounter,
)

__all__ = ["BoundedSpanProcessor", "DropCounter"]


class BoundedSpanProcessor(SpanProcessor):
    """Buffers ended spans and exports them in batches from one daemon thread.

    Args:
        exporter: Where batches go (an ``OTLPSpanExporter``, say).
        on_drop: Counts spans that were not sent, by reason.
        shutdown_timeout_s: The budget of a ``shutdown()`` called without one (by
            ``TracerProvider.shutdown``, say).
        max_queue: Most spans buffered; more are dropped (``queue_full``).
        max_batch: Most spans per export.
        delay_s: Longest a span waits before its batch is sent.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        on_drop: DropCounter,
        *,
        shutdown_timeout_s: float = 5.0,
        max_queue: int = MAX_QUEUE,
        max_batch: int = MAX_BATCH,
        delay_s: float = DELAY_S,
    ) -> None:
        self._batches: BoundedBatches[ReadableSpan] = BoundedBatches(
            lambda batch: exporter.export(batch) == SpanExportResult.SUCCESS,
            exporter.shutdown,
            on_drop,
            shutdown_timeout_s=shutdown_timeout_s,
            max_queue=max_queue,
            max_batch=max_batch,
            delay_s=delay_s,
            name="ragtrace-span-export",
        )

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do when a span starts."""

    def on_end(self, span: ReadableSpan) -> None:
        """Buffer a sampled span; never blocks, never raises."""
        context = span.context
        if context is None or not context.trace_flags.sampled:
            return
        self._batches.add(span)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Send everything buffered; False if that did not finish within the timeout."""
        return self._batches.flush(timeout_millis / 1000)

    def shutdown(self) -> None:
        """``close()`` within the budget given at creation (``TracerProvider.shutdown``)."""
        self.close()

    def close(self, timeout_s: float | None = None) -> bool:
        """Refuse new spans, send what is buffered within ``timeout_s`` (default: the budget
        given at creation), count what is left as ``shutdown`` and stop. Idempotent.

        Returns:
            True if everything buffered was sent (or counted as failed) in time.
        """
        return self._batches.close(timeout_s)

    @property
    def buffered(self) -> int:
        """Spans buffered or in flight."""
        return self._batches.buffered
