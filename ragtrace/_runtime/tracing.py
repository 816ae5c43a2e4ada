"""The tracer provider ragtrace writes to when the application did not set one.

Resolution: the provider passed to ``ragtrace.init``, else the global SDK provider if the app
set one, else a private one. The private provider:

- names its resource after ``Config.app``: ``service.name`` and ``openinference.project.name``
  (the Phoenix project its traces land in), unless ``OTEL_SERVICE_NAME`` or
  ``OTEL_RESOURCE_ATTRIBUTES`` set them;
- raises the span attribute count limit so a retriever span holds ``Config.max_chunks`` chunks
  with all their attributes (unless ``OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT`` or
  ``OTEL_ATTRIBUTE_COUNT_LIMIT`` says otherwise);
- with ``otlp_endpoint`` configured, exports over OTLP/HTTP through a ``BoundedSpanProcessor``:
  its shutdown keeps ragtrace's budget whatever the endpoint does, and spans it could not send
  are counted in ``ragtrace_dropped_spans_total{reason}``.

The provider registers no ``atexit`` hook of its own: ragtrace's exit hook shuts it down within
the budget. A provider the application owns keeps its resource and limits: ragtrace reads them
(``span_writers.span_attribute_limit``) and never changes them.
"""

from __future__ import annotations

import os

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider

from ragtrace import _semconv as sc
from ragtrace._config import Config
from ragtrace._runtime.span_export import BoundedSpanProcessor, DropCounter

TRACER_NAME = "ragtrace"
ATTRIBUTES_PER_CHUNK = 4
"""``retrieval.documents.N.{id,score,content,metadata}``."""
SPAN_ATTRIBUTE_HEADROOM = 32
"""A retriever span's other attributes (kind, query, ranked list, counts), with room to spare."""
_COUNT_LIMIT_ENV = ("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "OTEL_ATTRIBUTE_COUNT_LIMIT")
OTEL_RESOURCE_ATTRIBUTES = "OTEL_RESOURCE_ATTRIBUTES"
OTEL_SERVICE_NAME = "OTEL_SERVICE_NAME"


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
        resource=own_resource(config),
        shutdown_on_exit=False,
        span_limits=own_span_limits(config),
    )
    if not config.otlp_endpoint:
        return own, None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise ImportError(
            "otlp_endpoint needs the OTLP exporter: pip install 'ragtrace[otlp]'"
        ) from exc
    processor = BoundedSpanProcessor(
        OTLPSpanExporter(endpoint=otlp_signal_url(config.otlp_endpoint, "traces")),
        on_span_drop,
        shutdown_timeout_s=config.shutdown_timeout_s,
    )
    own.add_span_processor(processor)
    return own, processor


def own_resource(config: Config) -> Resource:
    """The resource of ragtrace's private providers: ``service.name`` and
    ``openinference.project.name`` from ``config.app``, unless the environment sets them
    (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``), which then wins."""
    from_env = Resource.create({})  # the SDK's defaults merged with the environment's
    named: dict[str, str] = {}
    if not os.environ.get(OTEL_SERVICE_NAME) and not _in_resource_env(sc.SERVICE_NAME):
        named[sc.SERVICE_NAME] = config.app
    if not _in_resource_env(sc.OI_PROJECT_NAME):
        named[sc.OI_PROJECT_NAME] = config.app
    return from_env.merge(Resource(named))


def own_span_limits(config: Config) -> SpanLimits:
    """Span limits that fit ``config.max_chunks`` chunks with all their attributes on one
    retriever span, unless the environment sets an attribute count limit (which then wins)."""
    if any(os.environ.get(name, "").strip() for name in _COUNT_LIMIT_ENV):
        return SpanLimits()
    needed = ATTRIBUTES_PER_CHUNK * config.max_chunks + SPAN_ATTRIBUTE_HEADROOM
    return SpanLimits(max_span_attributes=max(SpanLimits().max_span_attributes or 0, needed))


def otlp_signal_url(endpoint: str, signal: str) -> str:
    """The OTLP/HTTP URL of ``signal`` (``traces``, ``logs``) at ``endpoint``: a base URL gets
    ``/v1/<signal>``; a URL that already names another signal's path has it replaced."""
    url = endpoint.rstrip("/")
    for known in ("traces", "logs", "metrics"):
        if url.endswith(f"/v1/{known}"):
            url = url[: -len(f"/v1/{known}")]
            break
    return f"{url}/v1/{signal}"


def _in_resource_env(key: str) -> bool:
    raw = os.environ.get(OTEL_RESOURCE_ATTRIBUTES, "")
    return any(part.split("=", 1)[0].strip() == key for part in raw.split(",") if "=" in part)
