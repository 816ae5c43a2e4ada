"""The demo's tracer provider: counts finished spans and, with ``--otlp-endpoint``, exports them.

``DemoTracing(otlp_endpoint)`` builds a private provider (the demo never touches the global
one); ``spans`` counts every finished span and ``exported`` / ``failed`` what the OTLP exporter
delivered or gave up on, so the summary can say what really left the process.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


class MissingExtra(ImportError):
    """An optional dependency the chosen option needs is not installed."""


class _SpanCounter(SpanProcessor):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            self.count += 1


class _CountingExporter(SpanExporter):
    """Passes spans to ``inner`` and counts what it delivered and what it failed to."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.exported = 0
        self.failed = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception:
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            self.exported += len(spans)
        else:
            self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class DemoTracing:
    """A tracer provider for the demo app.

    Args:
        app: ``service.name`` of the spans.
        otlp_endpoint: Also export spans with OTLP/HTTP there (``/v1/traces`` is appended).

    Raises:
        MissingExtra: ``otlp_endpoint`` is set and the OTLP exporter is not installed.
    """

    def __init__(self, app: str, otlp_endpoint: str | None = None) -> None:
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": app, "openinference.project.name": app})
        )
        self._counter = _SpanCounter()
        self.provider.add_span_processor(self._counter)
        self._otlp: _CountingExporter | None = None
        if otlp_endpoint:
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                    OTLPSpanExporter,
                )
            except ImportError:
                raise MissingExtra(
                    "--otlp-endpoint needs the OTLP exporter: pip install 'ragtrace[otlp]'"
                ) from None
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            from ragtrace._runtime.tracing import otlp_signal_url

            url = otlp_signal_url(otlp_endpoint, "traces")
            self._otlp = _CountingExporter(OTLPSpanExporter(endpoint=url, timeout=5))
            self.provider.add_span_processor(BatchSpanProcessor(self._otlp))

    @property
    def spans(self) -> int:
        """Spans finished so far."""
        return self._counter.count

    @property
    def exported(self) -> int | None:
        """Spans the OTLP exporter delivered (None without an endpoint)."""
        return None if self._otlp is None else self._otlp.exported

    @property
    def failed(self) -> int | None:
        """Spans the OTLP exporter failed to deliver (None without an endpoint)."""
        return None if self._otlp is None else self._otlp.failed

    def shutdown(self) -> None:
        """Flush and stop the exporters."""
        self.provider.shutdown()
