"""Prometheus metrics of the review queue, read from the store at scrape time.

``ReviewMetrics(store, registry)`` registers a collector on the same ``CollectorRegistry`` as
ragtrace's other families (``rt.metrics.registry``, or the review server's own). The store is
anything with ``stats()`` and the values its labels take (``ReviewStatsSource``: the review
queue's ``ragtrace.review.SqlReviewStore``, which hands itself in). Its values come from the
store, so they are the same whichever process took a label (the web app, the CLI,
another replica) and they survive restarts. The store is read at most every ``max_age_s``
seconds; ``invalidate()`` (called after each label) makes the next scrape read it again.

Families (``app`` and ``evaluator`` values are capped like every ragtrace label):

- ``ragtrace_review_queue_size{app, reason}`` gauge: items waiting for a label, by their most
  urgent reason.
- ``ragtrace_review_labels_total{app, verdict, failure_type}`` counter: labels given
  (``failure_type`` is ``none`` when not set).
- ``ragtrace_review_agreement{evaluator, kind, app}`` gauge: share of labelled records (verdict
  good or bad; unsure excluded) where the evaluator's pass/fail matched the person
  (good = pass, bad = fail); a bad label counts only for the evaluators that measure its failure
  type (``ragtrace.review._agreement``: "bad: pii" is not held against faithfulness). Only
  evaluators that gave a pass or fail on such records appear.
- ``ragtrace_review_agreement_compared{evaluator, kind, app}`` gauge: how many labelled records
  that share rests on (a share over 3 records means little).
- ``ragtrace_review_kind_agreement{kind, app}`` gauge: the same share pooled over every
  evaluator of a kind (``lexical``, ``model``, ``judge``) and over ``cheap`` (lexical and model
  together): whether the team's judges, and its cheap evaluators, can be trusted.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ragtrace._metrics.labels import LabelCap, one_of

logger = logging.getLogger("ragtrace.review")

QUEUE_SIZE = "ragtrace_review_queue_size"
LABELS = "ragtrace_review_labels"  # exposed as ragtrace_review_labels_total
AGREEMENT = "ragtrace_review_agreement"
AGREEMENT_COMPARED = "ragtrace_review_agreement_compared"
KIND_AGREEMENT = "ragtrace_review_kind_agreement"
METRIC_NAMES = (QUEUE_SIZE, LABELS + "_total", AGREEMENT, AGREEMENT_COMPARED, KIND_AGREEMENT)
KINDS = ("lexical", "model", "judge")


@dataclass(frozen=True)
class AgreementRow:
    """How often one evaluator agreed with people on one app.

    ``compared`` counts labelled items (verdict good or bad) where the evaluator gave a pass or
    fail; ``agreed`` those where pass went with good and fail with bad.
    """

    app: str
    evaluator: str
    kind: str
    compared: int
    agreed: int


@dataclass(frozen=True)
class ReviewStats:
    """One reading of the store: waiting items, labels given, agreement rows."""

    waiting: tuple[tuple[str, str, int], ...]  # (app, primary reason, items)
    labels: tuple[tuple[str, str, str, int], ...]  # (app, verdict, failure type, labels)
    agreement: tuple[AgreementRow, ...]


class ReviewStatsSource(Protocol):
    """What ``ReviewMetrics`` reads: a review store's figures, and the values its ``reason``,
    ``verdict`` and ``failure_type`` labels may take (any other is exposed as ``other``).

    Public as ``ragtrace.review.ReviewStatsSource``. Every ``ReviewStore`` is one
    (``SqlReviewStore``, what ``open_store`` returns): give ``ReviewMetrics`` the store.
    """

    reasons: tuple[str, ...]
    verdicts: tuple[str, ...]
    failure_types: tuple[str, ...]

    def stats(self) -> ReviewStats: ...


class ReviewMetrics(Collector):
    """The review families, computed from a store (see the module docstring).

    Args:
        store: Where the queue and labels live.
        registry: Where to register (None: do not register; call ``collect`` yourself).
        max_age_s: How long one reading of the store serves scrapes.
    """

    def __init__(
        self,
        store: ReviewStatsSource,
        registry: CollectorRegistry | None = None,
        *,
        max_age_s: float = 5.0,
    ) -> None:
        self.store = store
        self.registry = registry
        self.max_age_s = max_age_s
        self._lock = threading.Lock()
        self._cached: tuple[float, ReviewStats] | None = None
        self._apps = LabelCap(20)
        self._evaluators = LabelCap(50)
        self.errors = 0
        if registry is not None:
            registry.register(self)

    def invalidate(self) -> None:
        """Read the store again at the next scrape."""
        with self._lock:
            self._cached = None

    def stats(self) -> ReviewStats | None:
        """The figures, from the cache while fresh; None when the store cannot be read."""
        now = time.monotonic()
        with self._lock:
            cached = self._cached
            if cached is not None and now - cached[0] < self.max_age_s:
                return cached[1]
            try:
                stats = self.store.stats()
            except Exception:
                self.errors += 1
                if self.errors & (self.errors - 1) == 0:  # 1st, 2nd, 4th, ... time
                    logger.warning("ragtrace review: cannot read %s", self.store, exc_info=True)
                return None
            self._cached = (now, stats)
            return stats

    def describe(self) -> Iterable[Metric]:
        """The families without samples (so registering does not read the store)."""
        return list(_families())

    def collect(self) -> Iterable[Metric]:
        """The families with their current values."""
        queue, labels, agreement, compared, kinds = _families()
        stats = self.stats()
        if stats is not None:
            self._fill(stats, queue, labels, agreement, compared, kinds)
        return [queue, labels, agreement, compared, kinds]

    def _fill(
        self,
        stats: ReviewStats,
        queue: GaugeMetricFamily,
        labels: CounterMetricFamily,
        agreement: GaugeMetricFamily,
        compared: GaugeMetricFamily,
        kinds: GaugeMetricFamily,
    ) -> None:
        for key, n in _summed(
            ((self._apps(app), one_of(reason, self.store.reasons)), n)
            for app, reason, n in stats.waiting
        ):
            queue.add_metric(list(key), n)
        for key, n in _summed(
            (
                (
                    self._apps(app),
                    one_of(verdict, self.store.verdicts),
                    one_of(ft, self.store.failure_types) if ft else "none",
                ),
                n,
            )
            for app, verdict, ft, n in stats.labels
        ):
            labels.add_metric(list(key), n)
        per: dict[tuple[str, str, str], list[int]] = {}
        pooled: dict[tuple[str, str], list[int]] = {}
        for row in stats.agreement:
            kind = one_of(row.kind, KINDS)
            app = self._apps(row.app)
            _add(per, (self._evaluators(row.evaluator), kind, app), row)
            _add(pooled, (kind, app), row)
            if kind in ("lexical", "model"):
                _add(pooled, ("cheap", app), row)
        for key, (n, agreed) in sorted(per.items()):
            agreement.add_metric(list(key), agreed / n)
            compared.add_metric(list(key), n)
        for key, (n, agreed) in sorted(pooled.items()):
            kinds.add_metric(list(key), agreed / n)

    def unregister(self) -> None:
        """Remove the collector from its registry (idempotent)."""
        if self.registry is not None:
            with contextlib.suppress(KeyError):
                self.registry.unregister(self)


def _families() -> tuple[
    GaugeMetricFamily, CounterMetricFamily, GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily
]:
    return (
        GaugeMetricFamily(
            QUEUE_SIZE,
            "Review items waiting for a label, by most urgent reason.",
            labels=["app", "reason"],
        ),
        CounterMetricFamily(
            LABELS,
            "Human review labels given, by verdict and failure type.",
            labels=["app", "verdict", "failure_type"],
        ),
        GaugeMetricFamily(
            AGREEMENT,
            "Share of human-labelled records (good/bad) where the evaluator's pass/fail agreed.",
            labels=["evaluator", "kind", "app"],
        ),
        GaugeMetricFamily(
            AGREEMENT_COMPARED,
            "Human-labelled records the evaluator's agreement share is computed on.",
            labels=["evaluator", "kind", "app"],
        ),
        GaugeMetricFamily(
            KIND_AGREEMENT,
            "Agreement with people pooled by evaluator kind (lexical, model, judge, cheap).",
            labels=["kind", "app"],
        ),
    )


def _summed(rows: Iterable[tuple[tuple[str, ...], int]]) -> Iterator[tuple[tuple[str, ...], int]]:
    """Rows whose capped labels collide (``other``) are added up."""
    total: dict[tuple[str, ...], int] = {}
    for key, n in rows:
        total[key] = total.get(key, 0) + n
    return iter(sorted(total.items()))


def _add(into: dict[Any, list[int]], key: Any, row: Any) -> None:
    counts = into.setdefault(key, [0, 0])
    counts[0] += row.compared
    counts[1] += row.agreed
