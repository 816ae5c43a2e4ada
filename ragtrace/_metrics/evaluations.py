"""The evaluation side's families: scores, outcomes, durations, sampling decisions, queue depth.

Label values are bounded (see ``ragtrace._metrics.labels``); trace ids ride along as exemplars
on ``ragtrace_evaluation_score``, never as labels.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from ragtrace._metrics.families import (
    MAX_CACHED_CHILDREN,
    Families,
    GaugeRefresher,
    LabelCaps,
    multiprocess_dir,
)
from ragtrace._metrics.labels import one_of
from ragtrace._metrics.requests import SCORE_BUCKETS
from ragtrace._model import Score

DURATION_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)  # fmt: skip
OUTCOMES = frozenset({"pass", "fail", "error", "skipped"})
QUEUE_DEPTH_REFRESH_S = 1.0  # multiprocess mode: how often each process writes its depth


class EvaluationMetrics(Families):
    """``ragtrace_evaluation_score``, ``ragtrace_evaluations_total``,
    ``ragtrace_evaluation_duration_seconds``, ``ragtrace_sampling_decisions_total`` and
    ``ragtrace_queue_depth``.

    Args:
        registry: Where the families register.
        caps: The shared label caps.
        on_internal_error: Counts a failing queue-depth probe (``metrics.queue_depth``).
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        caps: LabelCaps,
        on_internal_error: Callable[[str], None],
    ) -> None:
        super().__init__(registry)
        self._caps = caps
        self._on_internal_error = on_internal_error
        self.evaluation_score = self.histogram(
            "ragtrace_evaluation_score",
            "Evaluator scores in [0, 1], with trace-id exemplars.",
            ["evaluator", "app"],
            SCORE_BUCKETS,
        )
        self.evaluations = self.counter(
            "ragtrace_evaluations",
            "Evaluator results by outcome (pass, fail, error, skipped).",
            ["evaluator", "app", "outcome"],
        )
        self.evaluation_duration = self.histogram(
            "ragtrace_evaluation_duration_seconds",
            "Wall time of one evaluator call over one record.",
            ["evaluator"],
            DURATION_BUCKETS,
        )
        self.sampling_decisions = self.counter(
            "ragtrace_sampling_decisions", "Sampler decisions by reason.", ["decision", "reason"]
        )
        self.queue_depth = self.gauge(
            "ragtrace_queue_depth", "Records waiting for evaluation.", multiprocess_mode="livesum"
        )
        self._sampling_children: dict[tuple[str, str], Any] = {}
        self._depth_refresher: GaugeRefresher | None = None

    def observe_score(self, score: Score, app: str, trace_id: str | None) -> None:
        """Observe ``score.value`` under ``evaluator=score.name``; the trace id is the exemplar.

        Scores without a finite value (errors, infinities) are not observed.
        """
        value = score.value
        if value is None or not math.isfinite(value):
            return
        caps = self._caps
        child = self.evaluation_score.labels(caps.evaluators(score.name), caps.apps(app))
        # An exemplar's labels may hold at most 128 characters; a trace id has 32.
        if isinstance(trace_id, str) and 0 < len(trace_id) <= 64:
            child.observe(value, {"trace_id": trace_id})
        else:
            child.observe(value)

    def count_evaluation(self, evaluator: str, outcome: str, app: str) -> None:
        """Count one result: ``outcome`` is pass, fail, error or skipped (else ``other``)."""
        caps = self._caps
        self.evaluations.labels(
            caps.evaluators(evaluator), caps.apps(app), one_of(outcome, OUTCOMES)
        ).inc()

    def observe_evaluation_duration(self, evaluator: str, seconds: float) -> None:
        """Observe how long one evaluator call took (negative or non-finite values are skipped)."""
        if math.isfinite(seconds) and seconds >= 0:
            self.evaluation_duration.labels(self._caps.evaluators(evaluator)).observe(seconds)

    def count_sampling(self, decision: str, reason: str, n: int = 1) -> None:
        """Count ``n`` sampler decisions (e.g. ``sampled`` / ``dropped``) and the rule behind
        them. The labelled child is cached per (decision, reason)."""
        key = (decision, reason)
        child = self._sampling_children.get(key)
        if child is None:
            caps = self._caps
            child = self.sampling_decisions.labels(caps.decisions(decision), caps.reasons(reason))
            if len(self._sampling_children) < MAX_CACHED_CHILDREN:
                self._sampling_children[key] = child
        child.inc(n)

    def watch_queue_depth(self, fn: Callable[[], float]) -> None:
        """Report ``fn()`` as ``ragtrace_queue_depth`` at every scrape.

        A failing ``fn`` never breaks the scrape: the gauge reads NaN and the error is counted.
        In multiprocess mode each process writes its depth every ``QUEUE_DEPTH_REFRESH_S``
        instead, and the scrape shows the sum over the live processes.
        """

        def depth() -> float:
            try:
                return float(fn())
            except Exception:
                self._on_internal_error("metrics.queue_depth")
                return math.nan

        if multiprocess_dir() is None:
            self.queue_depth.set_function(depth)
            return
        if self._depth_refresher is not None:
            self._depth_refresher.stop()
        self._depth_refresher = GaugeRefresher(self.queue_depth, depth, QUEUE_DEPTH_REFRESH_S)

    def unregister(self) -> None:
        """Remove the families (idempotent) and stop refreshing the queue depth."""
        if self._depth_refresher is not None:
            self._depth_refresher.stop()
        super().unregister()
