"""The ``Ragtrace`` object that ``ragtrace.init`` returns, and the process-wide current one.

``init`` wires the parts together: configuration, a tracer, the capture layer the integrations
feed, the Prometheus families and the record pipeline. Integrations created without an explicit
instance use ``current()``, which initialises one from the environment on first use.
"""

from __future__ import annotations

import threading
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import REGISTRY, CollectorRegistry

from ragtrace.capture import Capture
from ragtrace.config import Config, Redactor
from ragtrace.diagnostics import Diagnostics
from ragtrace.metrics import Metrics
from ragtrace.model import RagRecord
from ragtrace.pipeline import RecordPipeline, RecordSink

TRACER_NAME = "ragtrace"

_lock = threading.Lock()
_current: Ragtrace | None = None


class Ragtrace:
    """A running ragtrace: capture, metrics and pipeline for one application.

    Create it with ``ragtrace.init``. Attributes ``config``, ``capture``, ``metrics``,
    ``diagnostics`` and ``pipeline`` are public for integrations and tests.
    """

    def __init__(
        self,
        config: Config,
        tracer_provider: trace.TracerProvider | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.config = config
        self._own_provider = tracer_provider is None and not isinstance(
            trace.get_tracer_provider(), TracerProvider
        )
        self.tracer_provider = tracer_provider or _default_provider(config)
        self.metrics = Metrics(registry if registry is not None else REGISTRY, config.app)
        self.diagnostics = Diagnostics(on_error=self.metrics.count_internal_error)
        self.pipeline = RecordPipeline(self.diagnostics)
        tracer = self.tracer_provider.get_tracer(TRACER_NAME)
        self.capture = Capture(tracer, config, self._emit, self.diagnostics)
        self._shut_down = False

    def _emit(self, record: RagRecord) -> None:
        try:
            self.metrics.observe_record(record)
        except Exception as exc:
            self.diagnostics.error("metrics.observe_record", exc)
        if not self.pipeline.submit(record):
            self.metrics.count_drop("shutdown")

    def add_record_sink(self, sink: RecordSink) -> RecordSink:
        """Call ``sink(record)`` for every finished request (usable as a decorator).

        The sink runs on the thread that finished the request: keep it quick.
        """
        self.pipeline.add_sink(sink)
        return sink

    def remove_record_sink(self, sink: RecordSink) -> None:
        self.pipeline.remove_sink(sink)

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Hand on everything buffered (records, spans). True if all went within the timeout."""
        ok = self.pipeline.flush(timeout_s)
        force_flush = getattr(self.tracer_provider, "force_flush", None)
        if callable(force_flush):
            ok = bool(force_flush(int(timeout_s * 1000))) and ok
        return ok

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Close open requests, flush, stop. Idempotent; a shut-down instance drops records."""
        global _current
        if self._shut_down:
            return
        self.capture.close_all()
        self.flush(timeout_s)
        self.pipeline.shutdown(timeout_s)
        self._shut_down = True
        if self._own_provider and isinstance(self.tracer_provider, TracerProvider):
            self.tracer_provider.shutdown()
        self.metrics.unregister()
        with _lock:
            if _current is self:
                _current = None

    @property
    def is_shut_down(self) -> bool:
        return self._shut_down


def _default_provider(config: Config) -> trace.TracerProvider:
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


def init(
    app: str | None = None,
    *,
    tracer_provider: trace.TracerProvider | None = None,
    registry: CollectorRegistry | None = None,
    capture_content: bool | None = None,
    redact: Redactor | None = None,
    **options: Any,
) -> Ragtrace:
    """Start ragtrace for an application and make it the current instance.

    Args:
        app: Application name on every span, record and metric (``RAGTRACE_APP``).
        tracer_provider: Where spans go; default: the global SDK provider if one is set, else
            a private provider (exporting OTLP/HTTP when ``otlp_endpoint`` is configured).
        registry: Prometheus registry for ragtrace's metrics (default: the global one).
        capture_content: Put query, chunk text, prompts and answers on spans (default True).
        redact: Applied to every captured text before it leaves the request path.
        **options: Any other ``Config`` field (``max_chunk_chars``, ``answer_keys``, ...).

    Explicit arguments beat ``RAGTRACE_*`` environment variables, which beat defaults. Calling
    ``init`` again shuts the previous instance down first.

    Raises:
        TypeError, ValueError: A bad option, naming it.
    """
    global _current
    config = Config.resolve(app=app, capture_content=capture_content, redact=redact, **options)
    with _lock:
        previous = _current
    if previous is not None:
        previous.shutdown()
    instance = Ragtrace(config, tracer_provider=tracer_provider, registry=registry)
    with _lock:
        _current = instance
    return instance


def current() -> Ragtrace:
    """The current instance, initialised from the environment if ``init`` was not called."""
    global _current
    instance = _current
    if instance is not None:
        return instance
    with _lock:
        if _current is None:
            _current = Ragtrace(Config.resolve())
        return _current


def get_current() -> Ragtrace | None:
    """The current instance, or None when ``init`` has not been called."""
    return _current
