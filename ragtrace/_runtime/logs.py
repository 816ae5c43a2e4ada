"""The logger provider evaluation results go to, resolved as the tracer provider is.

The provider passed to ``ragtrace.init(logger_provider=...)``, else the global SDK
``LoggerProvider`` if the application set one (``opentelemetry._logs.set_logger_provider``),
else a private one. The private provider has the resource of ragtrace's private tracer
provider (``tracing.own_resource``) and, with ``otlp_endpoint`` configured, exports OTLP/HTTP
logs to its ``/v1/logs`` through a ``BoundedLogProcessor`` (shutdown within ragtrace's budget;
records it could not send counted in ``ragtrace_dropped_log_records_total{reason}``); without
one it exports nothing.

Arize Phoenix takes no OTLP logs (its ``/v1/logs`` answers 405): when ``otlp_endpoint`` and
``phoenix_endpoint`` are the same server, the private provider exports nothing, and the
results reach Phoenix as span annotations instead (``ragtrace._exporters.phoenix``).

``EvaluationLogs`` holds it for one ``Ragtrace`` (when results go to logs): ragtrace's logger on
it, what confirms delivery, and its flush and shutdown within a deadline.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from opentelemetry import _logs
from opentelemetry._logs import Logger
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor, ReadWriteLogRecord

from ragtrace._config import Config
from ragtrace._exporters.base import ConfirmsDelivery
from ragtrace._pipeline.lifecycle import Deadline, run_bounded
from ragtrace._runtime.bounded_export import (
    BoundedProcessor,
    DropCounter,
    ProviderFlush,
    flush_provider,
)
from ragtrace._runtime.tracing import otlp_signal_url, own_resource

logger = logging.getLogger("ragtrace")

LOGGER_NAME = "ragtrace"


class BoundedLogProcessor(BoundedProcessor[ReadWriteLogRecord], LogRecordProcessor):
    """Buffers emitted log records and exports them in batches from one daemon thread, within
    a shutdown budget, counting what was not sent (the arguments are ``BoundedProcessor``'s)."""

    thread_name = "ragtrace-log-export"

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        """Buffer the record; never blocks, never raises."""
        self._batches.add(log_record)

    def emit(self, log_data: ReadWriteLogRecord) -> None:
        """The name older SDKs call."""
        self.on_emit(log_data)

    def enabled(self, *args: object, **kwargs: object) -> bool:
        return True


def resolve_logger_provider(
    config: Config,
    given: object | None = None,
    on_drop: DropCounter | None = None,
) -> tuple[object, BoundedLogProcessor | None, bool]:
    """The logger provider evaluation results go to.

    Returns:
        The provider, the processor ragtrace added to it (None when it added none), and
        whether the provider is ragtrace's own (its owner shuts it down).

    Raises:
        ImportError: ``otlp_endpoint`` is set and the OTLP exporter is not installed.
    """
    if given is not None:
        return given, None, False
    current = _logs.get_logger_provider()
    if isinstance(current, LoggerProvider):
        return current, None, False
    own = LoggerProvider(resource=own_resource(config), shutdown_on_exit=False)
    endpoint = config.otlp_endpoint
    if not endpoint:
        return own, None, True
    if config.phoenix_endpoint and _same_server(endpoint, config.phoenix_endpoint):
        logger.info(
            "ragtrace: evaluation results go to Phoenix as span annotations; no OTLP logs "
            "are sent to %s (Phoenix takes none)",
            endpoint,
        )
        return own, None, True
    try:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    except ImportError as exc:
        raise ImportError(
            "otlp_endpoint needs the OTLP exporter: pip install 'ragtrace[otlp]'"
        ) from exc
    processor = BoundedLogProcessor(
        OTLPLogExporter(endpoint=otlp_signal_url(endpoint, "logs")),
        on_drop,
        shutdown_timeout_s=config.shutdown_timeout_s,
    )
    own.add_log_record_processor(processor)
    return own, processor, True


def _same_server(a: str, b: str) -> bool:
    ua, ub = urlsplit(a), urlsplit(b)
    return (ua.hostname, ua.port) == (ub.hostname, ub.port)


class EvaluationLogs:
    """The logger provider of one ``Ragtrace``'s evaluation log events, for its lifetime.

    Args:
        config: The options (endpoints, shutdown budget).
        given: The provider given to ``init`` (None: resolve one, ``resolve_logger_provider``).
        on_drop: Where log records ragtrace's own processor could not send are counted.
        wanted: Whether results go to logs at all; if not, no provider is resolved.

    Attributes:
        logger_provider: The provider (None when not ``wanted``).
        logger: ragtrace's logger on it (``LOGGER_NAME``), or None.
        delivery: What confirms the records were exported: ragtrace's own processor, else the
            provider's ``force_flush`` answer (``ProviderFlush``); None without a provider.
    """

    def __init__(
        self,
        config: Config,
        given: object | None,
        on_drop: DropCounter | None,
        *,
        wanted: bool,
    ) -> None:
        self.logger_provider: object | None = None
        self.logger: Logger | None = None
        self.delivery: ConfirmsDelivery | None = None
        self._processor: BoundedLogProcessor | None = None
        self._own = False
        if wanted:
            self.logger_provider, self._processor, self._own = resolve_logger_provider(
                config, given, on_drop
            )
            self.logger = self.logger_provider.get_logger(LOGGER_NAME)  # type: ignore[attr-defined]
            self.delivery = self._processor or ProviderFlush(self.logger_provider, "flush-logs")

    def flush(self, timeout_s: float) -> bool:
        """Send the log records the provider holds, within ``timeout_s``."""
        return flush_provider(self.logger_provider, timeout_s, name="flush-logs")

    def close(self, deadline: Deadline) -> bool:
        """Shut ragtrace's own provider down (what it could not send is counted), or flush the
        application's, by ``deadline``."""
        if not self._own:
            return self.flush(deadline.remaining())
        sent = True
        if self._processor is not None:
            sent = self._processor.close(deadline.remaining())
        shutdown = getattr(self.logger_provider, "shutdown", None)
        if callable(shutdown):
            run_bounded(shutdown, deadline.remaining(), name="logs-shutdown")
        return sent
