"""Every Prometheus family of ragtrace, its registration and the ``/metrics`` endpoint.

``Metrics`` (``collection``) is the one object a process passes around: it registers the family
groups on an injected registry: ``requests`` (the capture side), ``evaluations`` (scores,
outcomes, sampling, queue depth), ``judges`` (LLM-judge usage), ``caches`` (the model caches'
tiers) and ``exports`` (evaluation results not delivered). ``ingest`` and ``queues`` are the
families of ``ragtrace ingest`` and of a worker fleet on Redis; ``review`` the review queue's,
read from its store at scrape time (the store hands itself in). ``families`` holds what every
group shares (registry, removal, bounded labels: ``labels``), ``deferred`` takes the per-request
updates off the request path. ``endpoint`` serves a registry on ``/metrics`` (and health probes)
for the application, ``ragtrace worker``, ``ragtrace ingest`` (``serve_configured_metrics``)
and the review server; ``multiprocess`` serves all the worker processes of a web server as one.
The sink that turns evaluations into these families is ``ragtrace._exporters.prometheus``.
"""

from __future__ import annotations

from ragtrace._metrics.collection import Metrics
from ragtrace._metrics.endpoint import MetricsServer, start_metrics_server

__all__ = ["Metrics", "MetricsServer", "start_metrics_server"]
