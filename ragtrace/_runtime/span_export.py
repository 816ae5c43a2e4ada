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

from ragtrace._runtime.bounded_export import BoundedProcessor, DropCounter

__all__ = ["BoundedSpanProcessor", "DropCounter"]


class BoundedSpanProcessor(BoundedProcessor[ReadableSpan], SpanProcessor):
    """Buffers ended spans and exports them in batches from one daemon thread (the arguments
    are ``BoundedProcessor``'s)."""

    thread_name = "ragtrace-span-export"

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do when a span starts."""

    def on_end(self, span: ReadableSpan) -> None:
        """Buffer a sampled span; never blocks, never raises."""
        context = span.context
        if context is None or not context.trace_flags.sampled:
            return
        self._batches.add(span)
