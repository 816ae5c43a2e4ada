"""The shape of the settings: the keys each section allows, and the settings they build.

``EvaluationSettings`` is what ``load_settings`` and ``settings_from_mapping`` return; it can
also be built directly and checks its own values. ``SettingsError`` is the one error that
reading settings raises. The key lists below are what the section readers accept and what
typos are matched against; the top-level keys are the sections of ``ragtrace.settings.reader``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypeAlias

from ragtrace.evaluators.base import Evaluator
from ragtrace.pipeline import PipelineOptions
from ragtrace.pipeline.sampling import Sampler

DEFAULT_PROMETHEUS_PORT = 9464
SAMPLING_KEYS = (
    "rate", "evaluator_rates", "rules", "rate_limits", "burst", "hourly_budget_usd", "cascades"
)  # fmt: skip
RULE_KEYS = (
    "action", "status", "empty_retrieval", "top_score_below", "app", "route", "tenant",
    "metadata", "feedback", "evaluators", "name",
)  # fmt: skip
CASCADE_KEYS = ("evaluator", "after", "low", "high")
PIPELINE_KEYS = (
    "queue_size",
    "workers",
    "batch_wait_s",
    "processes",
    "shared_cache_mb",
    "passage_store",
)
SINKS_KEYS = ("prometheus", "otel", "phoenix")
PROMETHEUS_KEYS = ("port", "addr")
PHOENIX_KEYS = ("endpoint",)
OTEL_RESULTS = ("logs", "spans", "both", "none")
# Options every evaluator takes, matched against a misspelt option of an evaluator entry.
EVALUATOR_OPTIONS = ("threshold", "inline", "batch_size", "timeout_s", "cost_usd")

Fields: TypeAlias = dict[str, Any]
"""Keyword arguments of ``EvaluationSettings``, as one section reads them."""


class SettingsError(ValueError):
    """A settings file or mapping is unreadable or invalid; the message says where and why."""


@dataclass(frozen=True)
class EvaluationSettings:
    """What to evaluate, how to sample, and where results go.

    Attributes:
        evaluators: Built evaluators, in the configured order.
        sampler: Decides which evaluators run on which record.
        queue_size: Most records waiting for workers.
        workers: Worker threads.
        processes: Worker processes the evaluator calls run in (0: threads of this process).
        shared_cache_mb: Size of the cache those processes share (None: the default).
        passage_store: A passage store to open (``PipelineOptions.passage_store``).
        batch_wait_s: How long a worker waits to fill a batch.
        metrics_port: Port of the Prometheus /metrics endpoint; None: no endpoint.
        metrics_addr: Address the endpoint listens on.
        otel: Export evaluation results through OpenTelemetry.
        otel_results: How (``logs``, ``spans``, ``both``); None: ``Config.evaluation_results``.
        phoenix_endpoint: Post every score as a Phoenix span annotation there (None: don't).
        queue_url: Ship sampled records to this Redis stream for ``ragtrace worker`` (None:
            evaluate them in this process).
    """

    evaluators: tuple[Evaluator, ...]
    sampler: Sampler
    queue_size: int = 10000
    workers: int = 2
    batch_wait_s: float = 0.05
    processes: int = 0
    shared_cache_mb: float | None = None
    passage_store: str | None = None
    metrics_port: int | None = None
    metrics_addr: str = "127.0.0.1"
    otel: bool = True
    otel_results: str | None = None
    phoenix_endpoint: str | None = None
    queue_url: str | None = None

    def pipeline_options(self) -> PipelineOptions:
        """The pipeline's sizes and timings as ``PipelineOptions``."""
        return PipelineOptions(
            queue_size=self.queue_size,
            workers=self.workers,
            batch_wait_s=self.batch_wait_s,
            processes=self.processes,
            shared_cache_mb=self.shared_cache_mb,
            passage_store=self.passage_store,
        )

    def __post_init__(self) -> None:
        if not all(isinstance(e, Evaluator) for e in self.evaluators):
            raise SettingsError("EvaluationSettings: evaluators must be Evaluator instances")
        if not isinstance(self.sampler, Sampler):
            raise SettingsError("EvaluationSettings: sampler must be a Sampler")
        if self.queue_size < 1 or self.workers < 1:
            raise SettingsError("EvaluationSettings: queue_size and workers must be >= 1")
        if not self.batch_wait_s >= 0:
            raise SettingsError("EvaluationSettings: batch_wait_s must be >= 0")
        if self.processes < 0:
            raise SettingsError("EvaluationSettings: processes must be >= 0")
        if self.shared_cache_mb is not None and not 0 <= self.shared_cache_mb < math.inf:
            raise SettingsError("EvaluationSettings: shared_cache_mb must be a number >= 0")
        if self.otel_results is not None and self.otel_results not in OTEL_RESULTS:
            raise SettingsError(
                f"EvaluationSettings: otel_results must be one of {', '.join(OTEL_RESULTS)}"
            )
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise SettingsError("EvaluationSettings: metrics_port must be in 0..65535")
