"""The LLM judges' families: calls by outcome, tokens, estimated spend, latency, parse failures."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

from ragtrace._metrics.evaluations import DURATION_BUCKETS
from ragtrace._metrics.families import Families, LabelCaps
from ragtrace._metrics.labels import one_of

if TYPE_CHECKING:
    from ragtrace._judges.usage import JudgeCall


class JudgeMetrics(Families):
    """``ragtrace_judge_tokens_total``, ``ragtrace_judge_cost_usd_total``,
    ``ragtrace_judge_duration_seconds``, ``ragtrace_judge_parse_failures_total`` and
    ``ragtrace_judge_calls_total``.

    Args:
        registry: Where the families register.
        caps: The shared label caps (evaluators, models).
    """

    def __init__(self, registry: CollectorRegistry, caps: LabelCaps) -> None:
        super().__init__(registry)
        self._caps = caps
        self.judge_tokens = self.counter(
            "ragtrace_judge_tokens",
            "Tokens sent to and received from LLM judges.",
            ["evaluator", "model", "direction"],
        )
        self.judge_cost = self.counter(
            "ragtrace_judge_cost_usd", "Estimated spend on LLM judges, USD.", ["evaluator", "model"]
        )
        self.judge_duration = self.histogram(
            "ragtrace_judge_duration_seconds",
            "Wall time of one LLM-judge call (request to parsed answer).",
            ["evaluator", "model"],
            DURATION_BUCKETS,
        )
        self.judge_parse_failures = self.counter(
            "ragtrace_judge_parse_failures",
            "LLM-judge answers that could not be parsed into a score.",
            ["evaluator", "model"],
        )
        self.judge_calls = self.counter(
            "ragtrace_judge_calls",
            "LLM-judge calls by outcome (ok, cached, timeout, rate_limited, server_error, "
            "unavailable, parse_failure, error).",
            ["evaluator", "model", "outcome"],
        )

    def _labels(self, evaluator: str, model: str) -> tuple[str, str]:
        return self._caps.evaluators(evaluator), self._caps.models(model)

    def count_judge_usage(
        self,
        evaluator: str,
        model: str,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost_usd: float | None = None,
    ) -> None:
        """Count the tokens and estimated cost of one LLM-judge call."""
        name, model_label = self._labels(evaluator, model)
        for direction, tokens in (("input", input_tokens), ("output", output_tokens)):
            if tokens > 0:
                self.judge_tokens.labels(name, model_label, direction).inc(tokens)
        if cost_usd is not None and math.isfinite(cost_usd) and cost_usd > 0:
            self.judge_cost.labels(name, model_label).inc(cost_usd)

    def record_judge_call(self, call: JudgeCall) -> None:
        """Count one judge call reported by a ``JudgeClient``: outcome, tokens, cost, time."""
        from ragtrace._judges.usage import CALL_OUTCOMES, PARSE_FAILURE

        name, model_label = self._labels(call.evaluator, call.model)
        self.judge_calls.labels(name, model_label, one_of(call.outcome, CALL_OUTCOMES)).inc()
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
        name, model_label = self._labels(evaluator, model)
        if math.isfinite(seconds) and seconds >= 0:
            self.judge_duration.labels(name, model_label).observe(seconds)
        if not parsed:
            self.judge_parse_failures.labels(name, model_label).inc()
