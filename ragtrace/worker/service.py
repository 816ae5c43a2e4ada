"""``ragtrace worker``: evaluate what applications ship to a Redis stream, on any machine.

A worker joins the stream's consumer group and runs the same ``EvaluationPipeline`` as an
application would (evaluators, sampling options and judges from the same settings file), with
its Prometheus ``/metrics``, ``/livez`` (the loop runs), ``/readyz`` and ``/healthz`` (reading
and acknowledging; see ``ragtrace.worker.health``) and OTLP evaluation spans parented on each
record's own trace. It acknowledges an entry only after every sink has published it, reclaims
entries a dead worker left behind, dead-letters poison, shares rate limits and the judge budget
with the rest of the fleet through Redis, shares what its models computed (sentence vectors,
splits) with the rest of the fleet in a bounded cache on the same Redis
(``ragtrace.backends.fleet_cache``, ``fleet_cache_mb``), and on SIGTERM stops reading, finishes
and acknowledges the batches it holds, then exits::

    options = WorkerOptions(queue_url="redis://127.0.0.1:6379/0", config_file="ragtrace.yaml")
    worker = Worker(options)
    worker.run()          # until stop() or SIGTERM/SIGINT (installed by the CLI)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from ragtrace.backends import fleet_cache
from ragtrace.config import Config
from ragtrace.exporters.base import Evaluation, ScoreSink
from ragtrace.exporters.prometheus import (
    LIVE_PATH,
    READY_PATH,
    MetricsServer,
    check_configured_metrics,
    start_metrics_server,
)
from ragtrace.exporters.queue_metrics import QueueMetrics
from ragtrace.model import RagRecord
from ragtrace.pipeline import PipelineOptions
from ragtrace.pipeline.queues.redis_consumer import RedisConsumer
from ragtrace.pipeline.queues.redis_options import RedisQueueOptions
from ragtrace.pipeline.sampling.shared_limits import RedisLimits
from ragtrace.redaction import redaction
from ragtrace.runtime.instance import Ragtrace
from ragtrace.worker.evaluator_names import named_evaluators
from ragtrace.worker.health import WorkerHealth
from ragtrace.worker.monitor import StreamMonitor

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerOptions:
    """How one worker process runs.

    Attributes:
        queue_url: The Redis stream (``redis://host:port/db?stream=...``; see
            ``ragtrace.pipeline.queues.redis_options``; None: as configured).
        config_file: Settings file with the evaluators, sampling and pipeline sizes.
        evaluators: Evaluator names (None: ``RAGTRACE_EVALUATORS``, else the settings file's,
            else the default).
        app: Name on the worker's own telemetry (records keep their application's name).
        workers: Threads reading and evaluating (None: as configured; ``Config.workers``).
        processes: Worker processes for evaluator calls (None: as configured).
        metrics_port: ``/metrics`` and ``/healthz`` on this port (None: as configured, else
            none; 0: a free one).
        metrics_addr: Address of that endpoint (None: as configured, else 127.0.0.1).
        otlp_endpoint: Export evaluation results there (OTLP/HTTP log events; None: as
            configured).
        phoenix_endpoint: Also post every score as a Phoenix span annotation there (None: as
            configured).
        redact: The redaction policy every record read, every dead letter and every result
            goes through (``none``, ``secrets``, ``pii``; None: as configured).
        metrics_allow_unauthenticated: Let the metrics and health endpoint listen beyond
            loopback without ``metrics_token`` (None: as configured, else refused).

    Every None takes the value ``Config.resolve`` gives: ``RAGTRACE_*``, else the settings
    file, else the default.
        health_stale_s: How old the last read or acknowledgement may be for ``/healthz`` 200.
        drain_timeout_s: On stop, how long to wait for the batches in hand.
        queue_overrides: Redis queue options beside those in the URL.
        max_app_labels: Distinct ``app`` label values kept (None: ``Config``'s, 20).
        fleet_cache_mb: Size of the cache the fleet's workers share in the queue's Redis
            (None: ``$RAGTRACE_FLEET_CACHE_MB``, else 256; 0: none).
    """

    queue_url: str | None = None
    config_file: str | None = None
    evaluators: tuple[str, ...] | None = None
    app: str = "ragtrace-worker"
    workers: int | None = None
    processes: int | None = None
    metrics_port: int | None = None
    metrics_addr: str | None = None
    otlp_endpoint: str | None = None
    phoenix_endpoint: str | None = None
    redact: str | None = None
    metrics_allow_unauthenticated: bool | None = None
    health_stale_s: float = 120.0
    drain_timeout_s: float = 20.0
    queue_overrides: dict[str, Any] = field(default_factory=dict)
    max_app_labels: int | None = None
    fleet_cache_mb: float | None = None


class DelaySink:
    """Observes each record's delay from its request's end to its scores being published."""

    def __init__(self, metrics: QueueMetrics) -> None:
        self._metrics = metrics

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        self._metrics.observe_delay(record.end_ns)

    def shutdown(self) -> None:
        """Nothing to release."""


class Worker:
    """One ``ragtrace worker`` process: a consumer, a pipeline, sinks, health.

    Args:
        options: How to run.
        registry: Prometheus registry (default: the global one).
        score_sinks: More sinks (a ``ReviewSink`` on PostgreSQL, say).
        client: A ready ``redis.Redis`` (default: one from ``options.queue_url``).

    Raises:
        ValueError: A bad option or settings file, naming it.
    """

    def __init__(
        self,
        options: WorkerOptions,
        *,
        registry: CollectorRegistry | None = None,
        score_sinks: Sequence[ScoreSink] = (),
        client: Any = None,
    ) -> None:
        self.options = options
        self.registry = registry if registry is not None else REGISTRY
        self.config = config = Config.resolve(
            queue_url=options.queue_url,
            app=options.app,
            config_file=options.config_file,
            otlp_endpoint=options.otlp_endpoint,
            evaluators=(
                named_evaluators(options.evaluators) if options.evaluators is not None else None
            ),
            workers=options.workers,
            processes=options.processes,
            metrics_port=options.metrics_port,
            metrics_addr=options.metrics_addr,
            max_app_labels=options.max_app_labels,
            phoenix_endpoint=options.phoenix_endpoint,
            redact=options.redact,
            metrics_allow_unauthenticated=options.metrics_allow_unauthenticated,
        )
        check_configured_metrics(config)  # refuse an open endpoint before anything starts
        if config.queue_url is None:
            raise ValueError(
                "no queue to read: give --queue redis://host:port/db, set RAGTRACE_QUEUE_URL or "
                "name it under `queue:` in the settings file"
            )
        self.queue_options = RedisQueueOptions.from_url(config.queue_url, **options.queue_overrides)
        self.redaction = redaction(config.redact)
        self.queue_metrics = QueueMetrics(self.registry)
        self._stopped = threading.Event()
        self.runtime: Ragtrace | None = None
        self.fleet_cache = _open_fleet_cache(self.queue_options, options.fleet_cache_mb)
        try:
            self.consumer = RedisConsumer(
                self.queue_options,
                on_event=self.queue_metrics.count_event,
                on_error=self._queue_error,
                on_batch=self.queue_metrics.observe_batch,
                client=client,
                redaction=self.redaction,
            )
            # The worker serves its own /metrics (with /healthz) and reads the queue: its
            # runtime opens no endpoint and ships nowhere.
            self.runtime = Ragtrace(
                config.replace(metrics_port=None, queue_url=None),
                registry=self.registry,
                pipeline_options=replace(
                    PipelineOptions.from_config(config), max_batch=self.queue_options.batch
                ),
                score_sinks=[*score_sinks, DelaySink(self.queue_metrics)],
                consumer=self.consumer,
            )
        except BaseException:
            self.queue_metrics.unregister()
            if self.fleet_cache is not None:
                self.fleet_cache.close()
            raise
        sampler = self.runtime.pipeline.sampler
        if not sampler.limit_settings.empty:
            sampler.share_limits(
                lambda s: RedisLimits(self.consumer.commands.client, s, self.queue_options.stream)
            )
        self.health = WorkerHealth(
            self.consumer, options.health_stale_s, self.queue_options.max_hold_s
        )
        self.monitor = StreamMonitor(self.consumer.commands, self.queue_metrics, self._queue_error)
        self.server: MetricsServer | None = None

    @property
    def evaluators(self) -> tuple[str, ...]:
        assert self.runtime is not None
        return tuple(e.name for e in self.runtime.pipeline.evaluators)

    def start(self) -> None:
        """Serve metrics and health, and start reading."""
        assert self.runtime is not None
        if self.config.metrics_port is not None:
            self.server = start_metrics_server(
                self.config.metrics_port,
                self.config.metrics_addr,
                self.registry,
                health=self.health.check,
                probes={LIVE_PATH: self.health.live, READY_PATH: self.health.check},
                token=self.config.metrics_token,
                allow_unauthenticated=self.config.metrics_allow_unauthenticated,
            )
        self.monitor.start()
        if self.fleet_cache is not None:  # before the pipeline starts its worker processes
            fleet_cache.install(self.fleet_cache)
        self.runtime.pipeline.start()
        _log.info(
            "ragtrace worker %s reading %s (stream %s, group %s) with %s",
            self.queue_options.consumer,
            self.queue_options.safe_url,
            self.queue_options.stream,
            self.queue_options.group,
            ", ".join(self.evaluators) or "no evaluators",
        )

    def run(self) -> None:
        """Start, then block until ``stop()``; drain before returning."""
        self.start()
        self._stopped.wait()
        self.drain()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until ``stop()`` (True) or ``timeout_s`` (False)."""
        return self._stopped.wait(timeout_s)

    def stop(self) -> None:
        """Ask ``run`` to return (safe from a signal handler)."""
        self._stopped.set()

    def drain(self) -> bool:
        """Stop reading, finish and acknowledge the batches in hand, shut down. True if all
        the batches in hand were finished within ``drain_timeout_s``."""
        self.consumer.close()
        finished = True
        if self.runtime is not None:
            finished = self.runtime.pipeline.flush(self.options.drain_timeout_s)
            self.runtime.shutdown(timeout_s=min(5.0, self.options.drain_timeout_s))
        self.monitor.stop()
        if self.server is not None:
            self.server.close()
        if self.fleet_cache is not None:
            if fleet_cache.current() is self.fleet_cache:
                fleet_cache.install(None)
            self.fleet_cache.close()
        self.queue_metrics.unregister()
        return finished

    def _queue_error(self, site: str, exc: BaseException) -> None:
        if self.runtime is not None:
            self.runtime.diagnostics.error(site, exc)
        else:
            _log.warning("ragtrace worker: %s: %s", site, exc)


def _open_fleet_cache(
    queue: RedisQueueOptions, size_mb: float | None
) -> fleet_cache.FleetCache | None:
    """The fleet cache on the queue's Redis (keys under ``<stream>:cache``), or None when
    turned off (0 MB)."""
    if fleet_cache.configured_mb(size_mb) == 0:
        return None
    return fleet_cache.FleetCache.connect(
        queue.connection_url, prefix=f"{queue.stream}:cache", size_mb=size_mb
    )
