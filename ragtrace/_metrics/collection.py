"""Prometheus metric families of ragtrace, registered on an injected registry.

Nothing registers at import. ``Metrics(registry, app)`` creates the families; ``unregister()``
removes them again (so ``ragtrace.init`` can be called twice in one process)::

    metrics = Metrics(CollectorRegistry(), app="support-bot")
    metrics.observe_score(score, app="support-bot", trace_id=record.trace_id)
    metrics.count_evaluation("groundedness", "pass", app="support-bot")

``Metrics`` is the one object the runtime passes around; the families live in five groups:
``RequestMetrics`` (the capture side), ``EvaluationMetrics`` (scores, outcomes, sampling,
queue), ``JudgeMetrics`` (LLM-judge usage), ``CacheMetrics`` (the model caches' tiers) and
``ExportMetrics`` (evaluation log records and annotations not delivered).
Label values are bounded (see ``ragtrace._metrics.labels``): each label keeps the first
values it sees up to a cap, later ones become ``other``; ids never become labels (trace ids
ride along as exemplars on ``ragtrace_evaluation_score``).

The two updates made for every request, ``observe_record`` and ``count_sampling``, are queued
and applied in a batch (``DeferredUpdates``): off the request path, and always before a scrape
of this process reads the families. ``flush()`` applies them at once. The cache lookups are
copied in with each batch.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from ragtrace._metrics.caches import CacheMetrics
from ragtrace._metrics.deferred import DeferredUpdates
from ragtrace._metrics.evaluations import DURATION_BUCKETS, OUTCOMES, EvaluationMetrics
from ragtrace._metrics.exports import ExportMetrics
from ragtrace._metrics.families import (
    DEFAULT_MAX_APPS,
    MAX_CACHED_CHILDREN,
    Families,
    LabelCaps,
)
from ragtrace._metrics.judges import JudgeMetrics
from ragtrace._metrics.labels import LabelCap
from ragtrace._metrics.requests import (
    CHUNK_BUCKETS,
    REQUEST_STATUSES,
    SCORE_BUCKETS,
    RequestMetrics,
)
from ragtrace._model import RagRecord

__all__ = [
    "CHUNK_BUCKETS",
    "DURATION_BUCKETS",
    "MAX_CACHED_CHILDREN",
    "OUTCOMES",
    "REQUEST_STATUSES",
    "SCORE_BUCKETS",
    "Metrics",
]


class Metrics:
    """All ragtrace metric families: capture side (requests, retrieval health, errors, drops),
    evaluation side (scores, outcomes, durations, sampling, queue), judge usage and the model
    caches' lookups.

    Args:
        registry: Where the families register (a fresh ``CollectorRegistry`` in tests).
        app: The application name; the ``app`` label of the capture-side families.
        max_apps: Distinct ``app`` label values kept; later ones read ``other`` (counted in
            ``ragtrace_app_labels_folded``).

    Raises:
        ValueError: A family's name is taken in ``registry`` (prometheus_client's "Duplicated
            timeseries"); nothing stays registered then.
    """

    def __init__(
        self, registry: CollectorRegistry, app: str, max_apps: int = DEFAULT_MAX_APPS
    ) -> None:
        self.registry = registry
        caps = LabelCaps(apps=LabelCap(max_apps))
        self.app = caps.apps(app)
        made: list[Families] = []
        # Registered first, so that collecting the registry applies the queue before it reads
        # the families.
        self.deferred = DeferredUpdates(registry, on_error=self._deferred_failed)
        try:
            self.requests = RequestMetrics(registry, self.app, caps)
            made.append(self.requests)
            self.evaluation = EvaluationMetrics(registry, caps, self.requests.count_internal_error)
            made.append(self.evaluation)
            self.judges = JudgeMetrics(registry, caps)
            made.append(self.judges)
            self.caches = CacheMetrics(registry)
            made.append(self.caches)
            self.exports = ExportMetrics(registry)
        except BaseException:  # leave the registry as it was (a name taken already, say)
            for group in made:
                group.unregister()
            self.deferred.close()
            raise
        self.deferred.poll(self.caches.update)
        # The methods callers use, bound once (the request path calls some of them).
        self.count_internal_error = self.requests.count_internal_error
        self.count_drop = self.requests.count_drop
        self.count_dropped_spans = self.requests.count_dropped_spans
        self.count_dropped_log_records = self.exports.count_dropped_log_records
        self.count_shipped = self.requests.count_shipped
        self.observe_score = self.evaluation.observe_score
        self.count_evaluation = self.evaluation.count_evaluation
        self.observe_evaluation_duration = self.evaluation.observe_evaluation_duration
        self.watch_queue_depth = self.evaluation.watch_queue_depth
        self.count_judge_usage = self.judges.count_judge_usage
        self.record_judge_call = self.judges.record_judge_call
        self.observe_judge_call = self.judges.observe_judge_call

    def observe_record(self, record: RagRecord) -> None:
        """Count one finished request and its retrieval health (applied in the next batch)."""
        self.deferred.defer(self.requests.observe_summary, *self.requests.summarize(record))

    def count_sampling(self, decision: str, reason: str, n: int = 1) -> None:
        """Count ``n`` sampler decisions (applied in the next batch)."""
        self.deferred.defer(self.evaluation.count_sampling, decision, reason, n)

    def flush(self) -> None:
        """Apply the queued updates now."""
        self.deferred.drain()

    def unregister(self) -> None:
        """Remove every family from the registry (idempotent); queued updates apply first."""
        self.deferred.close()
        for group in (self.requests, self.evaluation, self.judges, self.caches, self.exports):
            group.unregister()

    def _deferred_failed(self, exc: BaseException) -> None:
        self.count_internal_error("metrics.deferred")
