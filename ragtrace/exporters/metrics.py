"""Prometheus metric families of ragtrace, registered on an injected registry.

Nothing registers at import. ``Metrics(registry, app)`` creates the families; ``unregister()``
removes them again (so ``ragtrace.init`` can be called twice in one process)::

    metrics = Metrics(CollectorRegistry(), app="support-bot")
    metrics.observe_score(score, app="support-bot", trace_id=record.trace_id)
    metrics.count_evaluation("groundedness", "pass", app="support-bot")

Label values are bounded (see ``ragtrace.exporters.labels``): each label keeps the first values it
sees up to a cap, later ones become ``other``; ids never become labels (trace ids ride along as
exemplars on ``ragtrace_evaluation_score``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from ragtrace.exporters.labels import LabelCap, one_of
from ragtrace.model import RagRecord, Score

if TYPE_CHECKING:
    from ragtrace.judges.usage import JudgeCall

CHUNK_BUCKETS = (0, 1, 2, 3, 5, 8, 10, 20, 50, 100)
SCORE_BUCKETS = tuple(round(0.05 * i, 2) for i in range(1, 21))
DURATION_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)  # fmt: skip
OUTCOMES = frozenset({"pass", "fail", "error", "skipped"})
MAX_CACHED_CHILDREN = 256  # labelled children kept per family for the request path
REQUEST_STATUSES = ("ok", "error", "abandoned", "incomplete")


class Metrics:
    """All ragtrace metric families: capture side (requests, retrieval health, errors, drops)
    and evaluation side (scores, outcomes, durations, sampling, queue, judge usage).

    Args:
        registry: Where the families register (a fresh ``CollectorRegistry`` in tests).
        app: The application name; the ``app`` label of the capture-side families.
    """

    def __init__(self, registry: CollectorRegistry, app: str) -> None:
        self.registry = registry
        self._evaluators = LabelCap(50)
        self._apps = LabelCap(20)
        self._reasons = LabelCap(100)
        self._sites = LabelCap(100)
        self._decisions = LabelCap(10)
        self._models = LabelCap(20)
        self.app = self._apps(app)
        self._collectors: list[Counter | Gauge | Histogram] = []
        counter, histogram = self._counter, self._histogram
        self.requests = counter(
            "ragtrace_requests",
            "Finished RAG requests by status (ok, error, abandoned, incomplete).",
            ["app", "status"],
        )
        self.retrieval_chunks = histogram(
            "ragtrace_retrieval_chunks", "Chunks retrieved per request.", ["app"], CHUNK_BUCKETS
        )
        self.retrieval_top_score = histogram(
            "ragtrace_retrieval_top_score",
            "Score of the best retrieved chunk per request.",
            ["app"],
            SCORE_BUCKETS,
        )
        self.internal_errors = counter(
            "ragtrace_internal_errors",
            "Errors inside ragtrace, by the place they happened.",
            ["site"],
        )
        self.dropped_records = counter(
            "ragtrace_dropped_records", "Records not handed on, by reason.", ["reason"]
        )
        self.evaluation_score = histogram(
            "ragtrace_evaluation_score",
            "Evaluator scores in [0, 1], with trace-id exemplars.",
            ["evaluator", "app"],
            SCORE_BUCKETS,
        )
        self.evaluations = counter(
            "ragtrace_evaluations",
            "Evaluator results by outcome (pass, fail, error, skipped).",
            ["evaluator", "app", "outcome"],
        )
        self.evaluation_duration = histogram(
            "ragtrace_evaluation_duration_seconds",
            "Wall time of one evaluator call over one record.",
            ["evaluator"],
            DURATION_BUCKETS,
        )
        self.sampling_decisions = counter(
            "ragtrace_sampling_decisions", "Sampler decisions by reason.", ["decision", "reason"]
        )
        self.queue_depth = Gauge(
            "ragtrace_queue_depth", "Records waiting for evaluation.", registry=registry
        )
        self._collectors.append(self.queue_depth)
        self.judge_tokens = counter(
            "ragtrace_judge_tokens",
            "Tokens sent to and received from LLM judges.",
            ["evaluator", "model", "direction"],
        )
        self.judge_cost = counter(
            "ragtrace_judge_cost_usd", "Estimated spend on LLM judges, USD.", ["evaluator", "model"]
        )
        self.judge_duration = self._histogram(
            "ragtrace_judge_duration_seconds",
            "Wall time of one LLM-judge call (request to parsed answer).",
            ["evaluator", "model"],
            DURATION_BUCKETS,
        )
        self.judge_parse_failures = counter(
            "ragtrace_judge_parse_failures",
            "LLM-judge answers that could not be parsed into a score.",
            ["evaluator", "model"],
        )
        self.judge_calls = counter(
            "ragtrace_judge_calls",
            "LLM-judge calls by outcome (ok, cached, timeout, rate_limited, server_error, "
            "unavailable, parse_failure, error).",
            ["evaluator", "model", "outcome"],
        )
        self._requests_by_status = {s: self.requests.labels(self.app, s) for s in REQUEST_STATUSES}
        self._chunks = self.retrieval_chunks.labels(self.app)
        self._top_score = self.retrieval_top_score.labels(self.app)
        self._sampling_children: dict[tuple[str, str], Any] = {}
        self._drop_children: dict[str, Any] = {}

    def _counter(self, name: str, doc: str, labels: list[str]) -> Counter:
        metric = Counter(name, doc, labels, registry=self.registry)
        self._collectors.append(metric)
        return metric

    def _histogram(
        self, name: str, doc: str, labels: list[str], buckets: tuple[float, ...]
    ) -> Histogram:
        metric = Histogram(name, doc, labels, buckets=buckets, registry=self.registry)
        self._collectors.append(metric)
        return metric

    # --- capture side ---------------------------------------------------------------------

    def observe_record(self, record: RagRecord) -> None:
        """Count one finished request and its retrieval health."""
        self._requests_by_status[record.status].inc()
        if record.chunks or record.query is not None:
            self._chunks.observe(len(record.chunks))
        scores = [c.score for c in record.chunks if c.score is not None]
        if scores:
            self._top_score.observe(max(scores))

    def count_internal_error(self, site: str) -> None:
        self.internal_errors.labels(self._sites(site)).inc()

    def count_drop(self, reason: str) -> None:
        child = self._drop_children.get(reason)
        if child is None:
            child = self.dropped_records.labels(self._reasons(reason))
            if len(self._drop_children) < MAX_CACHED_CHILDREN:
                self._drop_children[reason] = child
        child.inc()

    # --- evaluation side ------------------------------------------------------------------

    def observe_score(self, score: Score, app: str, trace_id: str | None) -> None:
        """Observe ``score.value`` under ``evaluator=score.name``; the trace id is the exemplar.

        Scores without a finite value (errors, infinities) are not observed.
        """
        value = score.value
        if value is None or not math.isfinite(value):
            return
        child = self.evaluation_score.labels(self._evaluators(score.name), self._apps(app))
        # An exemplar's labels may hold at most 128 characters; a trace id has 32.
        if isinstance(trace_id, str) and 0 < len(trace_id) <= 64:
            child.observe(value, {"trace_id": trace_id})
        else:
            child.observe(value)

    def count_evaluation(self, evaluator: str, outcome: str, app: str) -> None:
        """Count one result: ``outcome`` is pass, fail, error or skipped (else ``other``)."""
        self.evaluations.labels(
            self._evaluators(evaluator), self._apps(app), one_of(outcome, OUTCOMES)
        ).inc()

    def observe_evaluation_duration(self, evaluator: str, seconds: float) -> None:
        """Observe how long one evaluator call took (negative or non-finite values are skipped)."""
        if math.isfinite(seconds) and seconds >= 0:
            self.evaluation_duration.labels(self._evaluators(evaluator)).observe(seconds)

    def count_sampling(self, decision: str, reason: str) -> None:
        """Count one sampler decision (e.g. ``sampled`` / ``dropped``) and the rule behind it.

        On the request path: the labelled child is cached per (decision, reason).
        """
        key = (decision, reason)
        child = self._sampling_children.get(key)
        if child is None:
            child = self.sampling_decisions.labels(self._decisions(decision), self._reasons(reason))
            if len(self._sampling_children) < MAX_CACHED_CHILDREN:
                self._sampling_children[key] = child
        child.inc()

    def watch_queue_depth(self, fn: Callable[[], float]) -> None:
        """Report ``fn()`` as ``ragtrace_queue_depth`` at every scrape.

        A failing ``fn`` never breaks the scrape: the gauge reads NaN and the error is counted.
        """

        def depth() -> float:
            try:
                return float(fn())
            except Exception:
                self.count_internal_error("metrics.queue_depth")
                return math.nan

        self.queue_depth.set_function(depth)

    def count_judge_usage(
        self,
        evaluator: str,
        model: str,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost_usd: float | None = None,
    ) -> None:
        """Count the tokens and estimated cost of one LLM-judge call."""
        name, model_label = self._evaluators(evaluator), self._models(model)
        for direction, tokens in (("input", input_tokens), ("output", output_tokens)):
            if tokens > 0:
                self.judge_tokens.labels(name, model_label, direction).inc(tokens)
        if cost_usd is not None and math.isfinite(cost_usd) and cost_usd > 0:
            self.judge_cost.labels(name, model_label).inc(cost_usd)

    def record_judge_call(self, call: JudgeCall) -> None:
        """Count one judge call reported by a ``JudgeClient``: outcome, tokens, cost, time."""
        from ragtrace.judges.usage import CALL_OUTCOMES, PARSE_FAILURE

        name, model_label = self._evaluators(call.evaluator), self._models(call.model)
        outcome = one_of(call.outcome, CALL_OUTCOMES)
        self.judge_calls.labels(name, model_label, outcome).inc()
        self.count_judge_usage(
            call.evaluator, call.model, call.input_tokens, call.output_tokens, call.cost_usd
        )
        self.observe_judge_call(
            call.evaluator, call.model, call.seconds, parsed=call.outcome != PARSE_FAILURE
        )

    def observe_judge_call(
        self, evaluator: str, model: str, seconds: float, *, parsed: bool = True
    ) -> None:
        """Record one LLM-judge call's wall time, and whether its answer could be parsed."""
        name, model_label = self._evaluators(evaluator), self._models(model)
        if math.isfinite(seconds) and seconds >= 0:
            self.judge_duration.labels(name, model_label).observe(seconds)
        if not parsed:
            self.judge_parse_failures.labels(name, model_label).inc()

    def unregister(self) -> None:
        """Remove the families from the registry (idempotent)."""
        for collector in self._collectors:
            with contextlib.suppress(KeyError):
                self.registry.unregister(collector)
