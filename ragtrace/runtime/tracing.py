"""The tracer provider ragtrace writes to when the application did not set one."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from ragtrace.config import Config

TRACER_NAME = "ragtrace"


def default_provider(config: Config) -> trace.TracerProvider:
    """The global SDK provider if the app set one, else a private one (OTLP if configured)."""
    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        return provider
    own = TracerProvider(resource=Resource.create({"service.name": config.app}))
    if config.otlp_endpoint:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise ImportError(
                "otlp_endpoint needs the OTLP exporter: pip install 'ragtrace[otlp]'"
            ) from exc
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        endpoint = config.otlp_endpoint.rstrip("/")
        if not endpoint.endswith("/v1/traces"):
            endpoint += "/v1/traces"
        own.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return own
