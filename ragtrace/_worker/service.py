"""``ragtrace worker``: evaluate what applications ship to a Redis stream, on any machine.

A worker joins the stream's consumer group and runs the same ``EvaluationPipeline`` as an
application would (evaluators, sampling options and judges from the same settings file), with
its Prometheus ``/metrics``, ``/livez`` (the loop runs), ``/readyz`` and ``/healthz`` (reading
and acknowledging; see ``ragtrace._worker.health``) and OTLP evaluation spans parented on each
record's own trace. It acknowledges an entry only after every sink has published it and those
that send in the background (OTLP, Phoenix) confirmed delivering it (else the entry stays
pending, counted in ``ragtrace_queue_delivery_failures_total{sink}``, and is delivered
again), reclaims entries a dead worker left behind, dead-letters poison, shares rate limits and
the judge budget with the rest of the fleet through Redis, shares what its models computed
(sentence vectors, splits) with the rest of the fleet in a bounded cache on the same Redis
(``ragtrace._backends.fleet_cache``, ``fleet_cache_mb``), and on SIGTERM stops reading,
finishes and acknowledges the batches it holds, then exits::

    config = service_config(APP, queue_url="redis://127.0.0.1:6379/0", config_file="ragtrace.yaml")
    worker = Worker(WorkerOptions(config))
    worker.run()          # until stop() or SIGTERM/SIGINT (installed by the CLI)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from ragtrace._backends import fleet_cache
from ragtrace._config import Config
from ragtrace._config.redis_queue import RedisQueueOptions
from ragtrace._exporters.base import ScoreSink
from ragtrace._metrics.endpoint import MetricsServer, serve_configured_metrics
from ragtrace._metrics.queues import QueueMetrics
from ragtrace._model import Evaluation, RagRecord
from ragtrace._pipeline import PipelineOptions
from ragtrace._pipeline.queues.redis_consumer import RedisConsumer
from ragtrace._pipeline.queues.redis_sessions import RedisSessions
from ragtrace._pipeline.queues.redis_streams import close_client
from ragtrace._pipeline.sampling.shared_limits import RedisLimits
from ragtrace._redaction import redaction
from ragtrace._runtime.instance import FleetRuntime, Ragtrace
from ragtrace._worker.health import WorkerHealth
from ragtrace._worker.monitor import StreamMonitor
from ragtrace._worker.serving import ServiceOptions, evaluating_share, service_config
from ragtrace.evaluators._conversation import CONVERSATION_EVALUATORS

_log = logging.getLogger(__name__)
APP = "ragtrace-worker"
"""The worker's name on its own telemetry."""


@dataclass(frozen=True)
class WorkerOptions(ServiceOptions):
    """How one worker process runs: ``ServiceOptions`` (its ``config`` also gives the reading
    threads, ``workers``, and the processes for evaluator calls, ``processes``; default:
    ``service_config(APP)``) and these.

    Attributes:
        health_stale_s: How old the last read or acknowledgement may be for ``/healthz`` 200.
        queue_overrides: Redis queue options beside those in the URL.
        fleet_cache_mb: Size of the cache the fleet's workers share in the queue's Redis
            (None: ``$RAGTRACE_FLEET_CACHE_MB``, else 256; 0: none).
    """

    config: Config = field(default_factory=partial(service_config, APP))
    health_stale_s: float = 120.0
    queue_overrides: dict[str, Any] = field(default_factory=dict)
    fleet_cache_mb: float | None = None


class DelaySink:
    """Observes each record's delay from its request's end to its scores being published (a
    session's scores, published once it has gone quiet, are no record's delay)."""

    def __init__(self, metrics: QueueMetrics) -> None:
        self._metrics = metrics

    def export(self, record: RagRecord, evaluations: Sequence[Evaluation]) -> None:
        if all(e.evaluator in CONVERSATION_EVALUATORS for e in evaluations):
            return
        self._metrics.observe_delay(record.end_ns)

    def shutdown(self) -> None:
        """Nothing to release."""


class Worker:
    """One ``ragtrace worker`` process: a consumer, a pipeline, sinks, health.

    Args:
        options: How to run.
        registry: Prometheus registry (default: the global one).
        score_sinks: More sinks (a ``ReviewSink`` on PostgreSQL, say).
        client: A ready ``redis.Redis`` (default: one from ``options.config.queue_url``).

    Raises:
        ValueError: No queue, or a bad option, naming it.
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
        self.config = config = options.config
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
        self._own_client = client is None  # closed by ``drain``; a client given stays open
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
            self.runtime = FleetRuntime(
                config.replace(
                    metrics_port=None, queue_url=None, model_cpu_share=evaluating_share(config)
                ),
                registry=self.registry,
                pipeline_options=replace(
                    PipelineOptions.from_config(config), max_batch=self.queue_options.batch
                ),
                score_sinks=[*score_sinks, DelaySink(self.queue_metrics)],
                consumer=self.consumer,
                session_store=_session_store(config, self.consumer, self.queue_options),
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
        self.monitor = StreamMonitor(
            self.consumer.commands,
            self.queue_metrics,
            self._queue_error,
            losses=self.consumer.losses,
        )
        self.server: MetricsServer | None = None

    @property
    def evaluators(self) -> tuple[str, ...]:
        assert self.runtime is not None
        return tuple(e.name for e in self.runtime.pipeline.evaluators)

    def start(self) -> None:
        """Serve metrics and health, and start reading."""
        assert self.runtime is not None
        self.server = serve_configured_metrics(
            self.config, self.registry, self.health.live, self.health.check
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
        """Stop reading, finish and acknowledge the batches in hand, shut down, and close the
        Redis connections this worker opened. True if all the batches in hand were finished
        within ``drain_timeout_s``."""
        self.consumer.close()
        finished = True
        if self.runtime is not None:
            finished = self.runtime.pipeline.flush(self.options.drain_timeout_s)
            self.runtime.shutdown(timeout_s=min(5.0, self.options.drain_timeout_s))
        self.monitor.stop()
        if self._own_client:
            close_client(self.consumer.commands.client)
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


def _session_store(
    config: Config, consumer: RedisConsumer, queue: RedisQueueOptions
) -> RedisSessions | None:
    """The fleet's open conversations, in the queue's Redis (None when sessions are not
    scored: ``session_idle_s`` 0)."""
    if not config.session_idle_s:
        return None
    return RedisSessions(
        consumer.commands.client,
        queue.stream,
        idle_s=config.session_idle_s,
        max_sessions=config.max_open_sessions,
        max_turns=config.max_session_turns,
    )


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
