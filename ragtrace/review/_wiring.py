"""Putting the review app together: store, metrics, human-Score sinks, web app.

Standalone (``ragtrace review serve``): the app gets its own registry, served at ``/metrics``,
holding the review families and ragtrace's evaluation families for the ``human`` evaluator,
and, with an OTLP endpoint, its own tracer for the human evaluation spans::

    with standalone_app(open_store("review.db"), "http://127.0.0.1:4318") as app:
        ...

In the application's process (next to a running ragtrace): ``app_for_runtime(rt, store)``
reuses the runtime's registry, metric families, tracer and redaction.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from ragtrace._config import Redactor
from ragtrace._exporters.base import ScoreSink
from ragtrace._metrics.collection import Metrics
from ragtrace._metrics.review import ReviewMetrics
from ragtrace._redaction import Redaction
from ragtrace.review._labels import HumanPrometheusSink, LabelService
from ragtrace.review._pages import TraceLinks
from ragtrace.review._server import ReviewApp
from ragtrace.review._sql_store import SqlReviewStore

SERVICE_NAME = "ragtrace-review"
# Capture-side families a review server has no data for: left out of its /metrics.
_NOT_OURS = (
    "requests",
    "retrieval_chunks",
    "retrieval_top_score",
    "dropped_records",
    "evaluation_duration",
    "sampling_decisions",
    "queue_depth",
    "judge_tokens",
    "judge_cost",
)


def evaluation_metrics(registry: CollectorRegistry) -> Metrics:
    """ragtrace's metric families with only the evaluation side registered."""
    metrics = Metrics(registry, app=SERVICE_NAME)
    groups = (metrics.requests, metrics.evaluation, metrics.judges)
    for name in _NOT_OURS:
        for family in (getattr(group, name, None) for group in groups):
            if family is not None:
                with contextlib.suppress(KeyError):
                    registry.unregister(family)
    return metrics


def otlp_tracer(endpoint: str) -> tuple[Any, Any]:
    """A tracer exporting to ``endpoint`` with OTLP/HTTP, and its provider (to shut down).

    Raises:
        ImportError: The OTLP exporter is missing, naming the extra.
    """
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise ImportError("--otlp-endpoint needs: pip install 'ragtrace[otlp]'") from exc
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from ragtrace._runtime.tracing import otlp_signal_url

    url = otlp_signal_url(endpoint, "traces")
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    return provider.get_tracer("ragtrace"), provider


def build_app(
    store: SqlReviewStore,
    *,
    registry: CollectorRegistry | None = None,
    tracer: Any = None,
    links: TraceLinks | None = None,
    token: str | None = None,
    redact: str | Redactor | Redaction | None = None,
    extra_sinks: Sequence[ScoreSink] = (),
) -> ReviewApp:
    """A review app whose labels go to Prometheus (and OpenTelemetry when ``tracer`` is set).

    Args:
        store: The review store.
        registry: Where the metrics live (default: a new one); ragtrace's evaluation families
            are registered there to count human verdicts in.
        tracer: An OpenTelemetry tracer for human evaluation spans.
        links: Trace links of the record page.
        token: Access token (required when serving beyond loopback).
        redact: The redaction policy applied to notes and corrected answers.
        extra_sinks: More places for human Scores.
    """
    registry = registry if registry is not None else CollectorRegistry()
    return _app(store, evaluation_metrics(registry), tracer, links, token, redact, extra_sinks)


def _app(
    store: SqlReviewStore,
    metrics: Metrics,
    tracer: Any,
    links: TraceLinks | None,
    token: str | None,
    redact: str | Redactor | Redaction | None,
    extra_sinks: Sequence[ScoreSink],
) -> ReviewApp:
    """``build_app`` counting human verdicts in ``metrics`` (a running ragtrace's families)."""
    registry = metrics.registry
    sinks: list[ScoreSink] = [HumanPrometheusSink(metrics)]
    if tracer is not None:
        from ragtrace._exporters.otel import OtelEvaluationSink

        sinks.append(OtelEvaluationSink(tracer))
    sinks.extend(extra_sinks)
    review_metrics = ReviewMetrics(store, registry)
    labels = LabelService(store, sinks, review_metrics=review_metrics, redact=redact)
    return ReviewApp(store, labels, links=links, token=token, registry=registry)


@contextlib.contextmanager
def standalone_app(
    store: SqlReviewStore, otlp_endpoint: str | None, **options: Any
) -> Iterator[ReviewApp]:
    """``build_app(store, **options)`` with its own OTLP tracer when ``otlp_endpoint`` is set;
    on leaving, the app and the tracer are closed (the store stays open)."""
    tracer, provider = otlp_tracer(otlp_endpoint) if otlp_endpoint else (None, None)
    app = build_app(store, tracer=tracer, **options)
    try:
        yield app
    finally:
        app.close()
        if provider is not None:
            provider.shutdown()


def app_for_runtime(
    rt: Any,
    store: SqlReviewStore,
    *,
    links: TraceLinks | None = None,
    token: str | None = None,
    extra_sinks: Sequence[ScoreSink] = (),
) -> ReviewApp:
    """A review app that publishes through a running ragtrace (``ragtrace.init``'s result):
    its metric families, its tracer and its redaction policy; the other arguments are
    ``build_app``'s."""
    from ragtrace._runtime import TRACER_NAME

    tracer = rt.tracer_provider.get_tracer(TRACER_NAME)
    return _app(store, rt.metrics, tracer, links, token, rt.redaction, extra_sinks)
