"""The tracer provider ragtrace writes to when the application did not set one.

With ``otlp_endpoint`` configured, ragtrace's own provider exports over OTLP/HTTP through a
``BoundedSpanProcessor``: its shutdown keeps ragtrace's budget whatever the endpoint does, and
spans it could not send are counted in ``ragtrace_dropped_spans_total{reason}``. The provider
registers no ``atexit`` hook of its own: ragtrace's exit hook shuts it down within the budget.
"""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from ragtrace.config import Config
from ragtrace.runtime.span_export import BoundedSpanProcessor, DropCounter

TRACER_NAME = "ragtrace"


def default_provider(
    config: Config, on_span_drop: DropCounter | None = None
) -> tuple[trace.TracerProvider, BoundedSpanProcessor | None]:
    """The global SDK provider if the app set one, else a private one (OTLP if configured).

    Returns:
        The provider, and the span processor ragtrace added to it (None when it added none).

    Raises:
        ImportError: ``otlp_endpoint`` is set and the OTLP exporter is not installed.
    """
    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        return provider, None
    own = TracerProvider(
        resource=Resource.create({"service.name": config.app}), shutdown_on_exit=False
    )
    if not config.otlp_endpoint:
        return own, None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise ImportError(
            "otlp_endpoint needs the OTLP exporter: pip install 'ragtrace[otlp]'"
        ) from exc
    endpoint = config.otlp_endpoint.rstrip("/")
    if not endpoint.endswith("/v1/traces"):
        endpoint += "/v1/traces"
    processor = BoundedSpanProcessor(
        OTLPSpanExporter(endpoint=endpoint),
        on_span_drop or _ignore,
        shutdown_timeout_s=config.shutdown_timeout_s,
    )
    own.add_span_processor(processor)
    return own, processor


def _ignore(reason: str, n: int) -> None:
    """Drops counted nowhere (a provider built without metrics)."""
