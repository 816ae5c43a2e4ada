"""The error settings raise, the keys of the sampling entries, and the file's view as settings.

The keys of the file's sections come from ``Config``'s declarations (``ragtrace.settings.reader``);
the keys listed here are those of the structured values the declarations cannot describe (a
sampling rule, a cascade, the options every evaluator takes).

``EvaluationSettings`` is what ``load_settings`` and ``settings_from_mapping`` return: what one
file says about evaluation (built evaluators, a ``Sampler``, pipeline sizes, sinks), with the
defaults for what it does not say. ``ragtrace.init`` does not use it: it reads the same file
into a ``Config`` (``Config.resolve``), where code and the environment come first.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from ragtrace.config import DEFAULT_PROMETHEUS_PORT, EVALUATION_RESULTS
from ragtrace.evaluators.base import Evaluator
from ragtrace.pipeline import PipelineOptions
from ragtrace.pipeline.sampling import Sampler

__all__ = ["DEFAULT_PROMETHEUS_PORT"]

SAMPLING_KEYS = (
    "rate", "evaluator_rates", "rules", "rate_limits", "burst", "hourly_budget_usd", "cascades"
)  # fmt: skip
RULE_KEYS = (
    "action", "status", "empty_retrieval", "top_score_below", "app", "route", "tenant",
    "metadata", "feedback", "evaluators", "name",
)  # fmt: skip
CASCADE_KEYS = ("evaluator", "after", "low", "high")
# Options every evaluator takes, matched against a misspelt option of an evaluator entry.
EVALUATOR_OPTIONS = ("threshold", "inline", "batch_size", "timeout_s", "cost_usd")

Fields: TypeAlias = dict[str, Any]
"""Keyword arguments of ``EvaluationSettings``."""


class SettingsError(ValueError):
    """A settings file or mapping is unreadable or invalid; the message says where and why,
    one line per mistake (``errors`` lists them)."""

    def __init__(self, errors: str | Sequence[str]) -> None:
        self.errors = (errors,) if isinstance(errors, str) else tuple(errors)
        super().__init__("\n".join(self.errors))


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
        otel_results: How (``logs``, ``spans``, ``both``, ``none``: ``evaluation_results``);
            None: the file does not say.
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
        if not self.batch_wait_s > 0:
            raise SettingsError("EvaluationSettings: batch_wait_s must be > 0")
        if self.processes < 0:
            raise SettingsError("EvaluationSettings: processes must be >= 0")
        if self.shared_cache_mb is not None and not 0 <= self.shared_cache_mb < math.inf:
            raise SettingsError("EvaluationSettings: shared_cache_mb must be a number >= 0")
        if self.otel_results is not None and self.otel_results not in EVALUATION_RESULTS:
            raise SettingsError(
                f"EvaluationSettings: otel_results must be one of {', '.join(EVALUATION_RESULTS)}"
            )
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise SettingsError("EvaluationSettings: metrics_port must be in 0..65535")

    @classmethod
    def from_file_values(cls, values: dict[str, Any]) -> EvaluationSettings:
        """The settings a file's values give (``FileLayer.values``), defaults for the rest."""
        own = {f.name for f in dataclasses.fields(cls)} - {"evaluators", "sampler", "otel"}
        fields = {k: v for k, v in values.items() if k in own}
        if "evaluation_results" in values:
            fields["otel"] = values["evaluation_results"] != "none"
            fields["otel_results"] = values["evaluation_results"]
        sampler = values.get("sampler")
        return cls(
            evaluators=tuple(values.get("evaluators", ())),
            sampler=sampler if sampler is not None else Sampler(),
            **fields,
        )
