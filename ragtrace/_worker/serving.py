"""What the two evaluation services, ``ragtrace worker`` and ``ragtrace ingest``, share: the
options they take alike and the settings those resolve to (their ``/metrics`` endpoint with the
health probes: ``ragtrace._metrics.endpoint.serve_configured_metrics``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragtrace._config import Config
from ragtrace._metrics.endpoint import check_configured_metrics
from ragtrace._worker.evaluator_names import named_evaluators


@dataclass(frozen=True)
class ServiceOptions:
    """The options both services take.

    Attributes:
        config_file: Settings file with the evaluators, sampling, pipeline sizes and queue.
        evaluators: Evaluator names instead of the settings file's (run the ones the apps
            sample).
        app: Name on the service's own telemetry (records keep their application's name).
        queue_url: The Redis stream (``redis://host:port/db?stream=...``; see
            ``ragtrace._pipeline.queues.redis_options``).
        metrics_port: ``/metrics`` and ``/healthz`` on this port (none by default; 0: a free
            one).
        metrics_addr: Address of that endpoint (default 127.0.0.1).
        otlp_endpoint: Export evaluation results there (typically back to the Collector):
            ``gen_ai.evaluation.result`` log events on each request's own trace and span.
        phoenix_endpoint: Also post every score as a Phoenix span annotation there.
        redact: The redaction policy every record, every dead letter and every result goes
            through before anything is written or sent (``none``, ``secrets``, ``pii``).
        metrics_allow_unauthenticated: Let the metrics and health endpoint listen beyond
            loopback without ``metrics_token`` (refused by default).
        drain_timeout_s: On stop, how long to wait for the records being evaluated.
        max_app_labels: Distinct ``app`` label values kept (default 20).

    Every None takes the value ``Config.resolve`` gives: ``RAGTRACE_*``, else the settings
    file, else the default.
    """

    config_file: str | None = None
    evaluators: tuple[str, ...] | None = None
    app: str = "ragtrace"
    queue_url: str | None = None
    metrics_port: int | None = None
    metrics_addr: str | None = None
    otlp_endpoint: str | None = None
    phoenix_endpoint: str | None = None
    redact: str | None = None
    metrics_allow_unauthenticated: bool | None = None
    drain_timeout_s: float = 20.0
    max_app_labels: int | None = None

    def resolve(self, **more: Any) -> Config:
        """The settings these options (and ``more`` of ``Config``'s) give; an open metrics
        endpoint is refused here, before anything starts.

        Raises:
            ValueError: A bad option or settings file, or an endpoint beyond loopback with
                neither a token nor ``metrics_allow_unauthenticated``.
        """
        config = Config.resolve(
            app=self.app,
            config_file=self.config_file,
            evaluators=(named_evaluators(self.evaluators) if self.evaluators is not None else None),
            queue_url=self.queue_url,
            metrics_port=self.metrics_port,
            metrics_addr=self.metrics_addr,
            otlp_endpoint=self.otlp_endpoint,
            phoenix_endpoint=self.phoenix_endpoint,
            redact=self.redact,
            metrics_allow_unauthenticated=self.metrics_allow_unauthenticated,
            max_app_labels=self.max_app_labels,
            **more,
        )
        check_configured_metrics(config)
        return config
