"""ragtrace's Grafana dashboards as code: RAG quality and pipeline operations.

Grafana reads the JSON this writes to ``grafana/dashboards/`` (committed). Edit this file, not
the JSON, then regenerate from the repository root::

    python -m grafana.build_dashboards            # rewrite grafana/dashboards/*.json
    python -m grafana.build_dashboards --check    # exit 1 when the committed JSON is stale

Stdlib only. Both dashboards have the variables ``datasource`` (any Prometheus), ``app`` and
``evaluator`` (multi-value, "All" = ``.*``). Metric names are the ``ragtrace_*`` families of
``ragtrace/_metrics/collection.py`` and the series recorded by ``grafana/prometheus/*.rules.yml``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from grafana.fleet_panels import fleet_panels
from grafana.ingest_panels import ingest_panels
from grafana.operating_points import alert_bound
from grafana.panels import (
    Json,
    above_is_bad,
    alerts_annotation,
    bargauge,
    dashboard,
    datasource_variable,
    drawn_level,
    heatmap,
    query_variable,
    row,
    target,
    timeseries,
)
from grafana.quality_panels import evaluator_panels, evidence_panels, faithfulness_panels

OUT_DIR = Path(__file__).resolve().parent / "dashboards"

APP = 'app=~"$app"'
APP_EVALUATOR = 'app=~"$app", evaluator=~"$evaluator"'
RATE = "[$__rate_interval]"
# Score names of the sensitive-content evaluators (pii_leakage.answer, sensitive_data.context,
# toxicity, ...): hits in the answer vs in the retrieved context. The rules use the same ones.
IN_ANSWERS = r'evaluator=~"(pii|sensitive|secret|toxic)[a-z_]*(\\.answer)?"'
IN_CONTEXT = r'evaluator=~"(pii|sensitive|secret|toxic)[a-z_]*\\.context"'
BOTH = "{{app}} / {{evaluator}}"
DROPPED, INTERNAL = "ragtrace_dropped_records_total", "ragtrace_internal_errors_total"
CACHE_LOOKUPS = "ragtrace_cache_lookups_total"
ALERTS = 'ALERTS{alertname=~"Ragtrace.+", app=~"$app"}'
JUDGE_COST, BUDGET = "ragtrace_judge_cost_usd_total", "ragtrace:judge_budget_usd:1d"
# The operating points the panels draw, read from the alert rules that fire on them.
INTERNAL_ERRORS_15M = alert_bound("RagtraceInternalErrors")
VARIABLES = [
    datasource_variable(),
    query_variable("app", "App", "label_values(ragtrace_evaluations_total, app)"),
    query_variable(
        "evaluator", "Evaluator", 'label_values(ragtrace_evaluations_total{app=~"$app"}, evaluator)'
    ),
]


def evaluations(
    selector: str, window: str = RATE, by: str = "app, evaluator", fn: str = "rate"
) -> str:
    """Evaluations per second (``fn="increase"``: in ``window``) matching ``selector``."""
    return f"sum by ({by}) ({fn}(ragtrace_evaluations_total{{{selector}}}{window}))"


def pass_ratio(selector: str, by: str = "app, evaluator", window: str = RATE) -> str:
    """Share of pass among pass + fail; 0 (not nothing) when no evaluation passed."""
    judged = evaluations(f'{selector}, outcome=~"pass|fail"', window, by)
    passed = evaluations(f'{selector}, outcome="pass"', window, by)
    return f"({passed} or {judged} * 0) / {judged}"


def hit_ratio(selector: str, window: str) -> str:
    """Share of evaluations that failed (found something) among pass + fail."""
    judged = evaluations(f'{selector}, outcome=~"pass|fail"', window, "evaluator", "increase")
    hits = evaluations(f'{selector}, outcome="fail"', window, "evaluator", "increase")
    return f"({hits} or {judged} * 0) / {judged}"


def found_ratio(selector: str, window: str) -> str:
    """Share of the found/not-found scores (value 0 when something was found) that found
    something, from the score histogram: it counts the informational context scores too,
    whose verdict is never a fail (``pii_leakage.context``)."""
    total = f"sum by (evaluator) (increase(ragtrace_evaluation_score_count{{{selector}}}{window}))"
    found = (
        f'sum by (evaluator) (increase(ragtrace_evaluation_score_bucket{{{selector}, le="0.05"}}'
        f"{window}))"
    )
    return f"({found} or {total} * 0) / {total}"


def quantile(q: float, family: str, selector: str, by: str) -> str:
    """The ``q`` quantile of histogram ``family`` per ``by``."""
    matchers = f"{{{selector}}}" if selector else ""
    buckets = f"sum by (le, {by}) (rate({family}_bucket{matchers}{RATE}))"
    return f"histogram_quantile({q}, {buckets})"


def retrieval_share(family: str, le: str) -> str:
    """Share of requests whose ``family`` observation was <= ``le`` (a bucket boundary)."""
    # prometheus_client writes bucket 0 as le="0.0", Prometheus 3 normalises it to "0".
    le_match = f'le=~"{le}(\\\\.0)?"' if "." not in le else f'le="{le}"'
    bucket = f"sum by (app) (rate({family}_bucket{{{APP}, {le_match}}}{RATE}))"
    total = f"sum by (app) (rate({family}_count{{{APP}}}{RATE}))"
    return f"{bucket} / {total}"


def cache_hit_ratio() -> str:
    """Share of hits among the lookups of each cache tier."""
    hits = f'sum by (tier) (rate({CACHE_LOOKUPS}{{result="hit"}}{RATE}))'
    lookups = f"sum by (tier) (rate({CACHE_LOOKUPS}{RATE}))"
    return f"({hits} or {lookups} * 0) / {lookups}"


def per_minute(expr: str) -> str:
    return f"60 * {expr}"


def quality_dashboard() -> Json:
    """Scores, pass rates, sensitive-content hits and retrieval health per app and evaluator."""
    score = "ragtrace_evaluation_score"
    panels = [
        row("Overview"),
        *evidence_panels(),
        timeseries(
            "Pass rate by evaluator",
            "Share of evaluations that passed their evaluator's threshold (pass / (pass + "
            "fail)); errors and skips are left out. At their default operating points the "
            "default suite's scores fail at most 5% of normal answers (docs/evaluators.md), "
            "so on healthy traffic each line sits at 95% or above; faithfulness is a "
            "hallucination detector whose verdict fails more by design (its own panel "
            "below). The quality alerts weigh each app's pass ratio against its own baseline "
            "and the evaluator's floor: the evidence panels above, and per evaluator below.",
            [target(pass_ratio(APP_EVALUATOR), BOTH)],
            unit="percentunit",
            max_=1,
        ),
        timeseries(
            "Failing evaluations per minute",
            "Evaluations that failed their threshold, per minute. One request that fails two "
            "evaluators counts twice.",
            [
                target(
                    per_minute(evaluations(f'{APP_EVALUATOR}, outcome="fail"')),
                    BOTH,
                )
            ],
            stack=True,
        ),
        *faithfulness_panels(),
        row("Scores: $evaluator", repeat="evaluator"),
        timeseries(
            "Score percentiles: $evaluator",
            "10th, 50th and 90th percentile of the score, per app. The dots are exemplars: "
            "click one to open the trace of a request with that score.",
            [
                target(quantile(0.1, score, APP_EVALUATOR, "app"), "p10 {{app}}"),
                target(quantile(0.5, score, APP_EVALUATOR, "app"), "p50 {{app}}", exemplar=True),
                target(quantile(0.9, score, APP_EVALUATOR, "app"), "p90 {{app}}"),
            ],
            unit="percentunit",
            max_=1,
            width=8,
        ),
        heatmap(
            "Score distribution: $evaluator",
            "How many scores fell in each bucket over time; exemplars link to traces.",
            [
                target(
                    f"sum by (le) (increase({score}_bucket{{{APP_EVALUATOR}}}{RATE}))",
                    "{{le}}",
                    exemplar=True,
                    heatmap=True,
                )
            ],
        ),
        *evaluator_panels(),
        row("Sensitive content: answers vs retrieved context"),
        timeseries(
            "PII, secrets and toxicity in answers per minute",
            "Answers in which a PII, sensitive-data or toxicity evaluator found something.",
            [target(per_minute(evaluations(f'{APP}, {IN_ANSWERS}, outcome="fail"')), BOTH)],
            stack=True,
        ),
        timeseries(
            "PII and secrets in the knowledge base (retrieved context) per minute",
            "Retrieved contexts in which those evaluators found something: what the model was "
            "given, whether or not it repeated it. Information about the knowledge base, not "
            "an alarm: pii_leakage.context has no verdict by default (a knowledge base that "
            "holds a support number is normal), so this counts its findings from the score "
            "histogram (a score of 0 means found).",
            [
                target(
                    per_minute(
                        f"sum by (app, evaluator) (rate(ragtrace_evaluation_score_bucket"
                        f'{{{APP}, {IN_CONTEXT}, le="0.05"}}{RATE}))'
                    ),
                    BOTH,
                )
            ],
            stack=True,
        ),
        bargauge(
            "Hit rate over the time range: answers vs context",
            "Share of evaluated answers (.answer) that failed and of retrieved contexts "
            "(.context) in which something was found, over the whole time range. More in the "
            "context than in the answers: the model filters; as many: it passes them on.",
            [
                target(hit_ratio(f"{APP}, {IN_ANSWERS}", "[$__range]"), "{{evaluator}}"),
                target(found_ratio(f"{APP}, {IN_CONTEXT}", "[$__range]"), "{{evaluator}}"),
            ],
            unit="percentunit",
            width=24,
        ),
        row("Retrieval health"),
        timeseries(
            "Chunks per request",
            "Median and 90th percentile of the number of chunks retrieved per request.",
            [
                target(quantile(0.5, "ragtrace_retrieval_chunks", APP, "app"), "p50 {{app}}"),
                target(quantile(0.9, "ragtrace_retrieval_chunks", APP, "app"), "p90 {{app}}"),
            ],
            width=6,
        ),
        timeseries(
            "Top chunk score",
            "10th percentile and median of the best chunk's retrieval score per request: a low "
            "top score means nothing relevant was found.",
            [
                target(quantile(0.1, "ragtrace_retrieval_top_score", APP, "app"), "p10 {{app}}"),
                target(quantile(0.5, "ragtrace_retrieval_top_score", APP, "app"), "p50 {{app}}"),
            ],
            width=6,
        ),
        timeseries(
            "Empty retrievals",
            "Share of requests that retrieved no chunk at all (the le=0 bucket).",
            [target(retrieval_share("ragtrace_retrieval_chunks", "0"), "{{app}}")],
            unit="percentunit",
            max_=1,
            width=6,
        ),
        timeseries(
            "Weak retrievals (top score <= 0.5)",
            "Share of requests whose best chunk scored 0.5 or less.",
            [target(retrieval_share("ragtrace_retrieval_top_score", "0.5"), "{{app}}")],
            unit="percentunit",
            max_=1,
            width=6,
        ),
    ]
    return dashboard(
        "ragtrace-quality",
        "ragtrace / RAG quality",
        "Online evaluation of a RAG assistant: scores, pass rates, sensitive content and "
        "retrieval health per app and evaluator.",
        panels,
        VARIABLES,
        [alerts_annotation(ALERTS)],
    )


def operations_dashboard() -> Json:
    """Throughput, latency, model caches, sampling, queue, drops, internal errors and
    LLM-judge usage."""
    duration = "ragtrace_evaluation_duration_seconds"
    judge_duration = "ragtrace_judge_duration_seconds"
    panels = [
        row("Traffic"),
        timeseries(
            "Requests per second",
            "Finished RAG requests by status (ok, error, abandoned, incomplete).",
            [
                target(
                    f"sum by (app, status) (rate(ragtrace_requests_total{{{APP}}}{RATE}))",
                    "{{app}} {{status}}",
                )
            ],
            unit="reqps",
            width=8,
            stack=True,
        ),
        timeseries(
            "Evaluations per second by outcome",
            "Evaluator results: pass, fail, error (the evaluator failed) and skipped.",
            [target(evaluations(APP_EVALUATOR, by="outcome"), "{{outcome}}")],
            width=8,
            stack=True,
        ),
        timeseries(
            "Evaluation errors per minute",
            "Evaluations that raised, timed out or returned a bad value, per evaluator.",
            [target(per_minute(evaluations(f'{APP_EVALUATOR}, outcome="error"')), BOTH)],
            width=8,
        ),
        row("Evaluation latency"),
        timeseries(
            "Evaluation latency by evaluator",
            "Median and 99th percentile of one evaluator call over one record. The evaluator "
            "label here is the evaluator's name (one evaluator may emit several scores).",
            [
                target(quantile(0.5, duration, "", "evaluator"), "p50 {{evaluator}}"),
                target(quantile(0.99, duration, "", "evaluator"), "p99 {{evaluator}}"),
            ],
            unit="s",
        ),
        timeseries(
            "Evaluator busy time",
            "Seconds spent evaluating per second, by evaluator: how many workers' worth of time "
            "each evaluator takes.",
            [target(f"sum by (evaluator) (rate({duration}_sum{RATE}))", "{{evaluator}}")],
            stack=True,
        ),
        row("Model caches"),
        timeseries(
            "Cache hit ratio by tier",
            "Share of lookups answered, after an embedder's or the NER analyzer's own cache "
            "missed: in the memory a pool's worker processes share (shared_cache), then in the "
            "file `ragtrace index` filled (passage_store), then in the Redis cache a fleet of "
            "workers shares (fleet_cache). A low passage_store ratio: the "
            "traffic's passages are not in the index (index them again), or the store was "
            "built with other models or evaluators.",
            [target(cache_hit_ratio(), "{{tier}}")],
            unit="percentunit",
        ),
        timeseries(
            "Cache lookups per second by result",
            "Lookups per tier: hit, miss, and error (the passage store's file or the fleet's "
            "Redis could not be read; those values are computed instead).",
            [
                target(
                    f"sum by (tier, result) (rate({CACHE_LOOKUPS}{RATE}))",
                    "{{tier}} {{result}}",
                )
            ],
            stack=True,
        ),
        row("Sampling and queue"),
        timeseries(
            "Sampling decisions by reason",
            "Sampler decisions per second: sampled or dropped, and the rule, ratio, rate limit "
            "or budget that decided.",
            [
                target(
                    f"sum by (decision, reason) (rate(ragtrace_sampling_decisions_total{RATE}))",
                    "{{decision}} / {{reason}}",
                )
            ],
            width=6,
            stack=True,
        ),
        timeseries(
            "Queue depth",
            "Records waiting for evaluation, per process.",
            [target("max by (job, instance) (ragtrace_queue_depth)", "{{instance}}")],
            width=6,
        ),
        timeseries(
            "Dropped records per minute",
            "Records not evaluated, by reason (queue_full, worker_error, shutdown, ...).",
            [target(per_minute(f"sum by (reason) (rate({DROPPED}{RATE}))"), "{{reason}}")],
            width=6,
            stack=True,
        ),
        above_is_bad(
            timeseries(
                "Internal errors per minute",
                "Errors inside ragtrace, by where they happened (never raised into the app). "
                f"RagtraceInternalErrors fires above {INTERNAL_ERRORS_15M:g} in 15 minutes at "
                "one site of one instance: the dashed line, per minute.",
                [target(per_minute(f"sum by (site) (rate({INTERNAL}{RATE}))"), "{{site}}")],
                width=6,
                stack=True,
            ),
            INTERNAL_ERRORS_15M / 15,
        ),
        row("LLM judge"),
        timeseries(
            "Judge tokens per second",
            "Tokens sent to (input) and received from (output) LLM judges, by model.",
            [
                target(
                    f"sum by (model, direction) (rate(ragtrace_judge_tokens_total{RATE}))",
                    "{{model}} {{direction}}",
                )
            ],
            width=8,
            stack=True,
        ),
        drawn_level(
            timeseries(
                "Judge spend at the current pace, USD per day",
                "Estimated spend on LLM judges a day would cost at the pace of the last hour, "
                "all models (what RagtraceJudgeSpendRateHigh compares with the budget, for 30 "
                f"minutes) and by model, and the daily budget (the dashed line, {BUDGET}).",
                [
                    target(f"86400 * sum(rate({JUDGE_COST}[1h]))", "all models (last hour)"),
                    target(
                        f"86400 * sum by (model) (rate({JUDGE_COST}{RATE}))",
                        "{{model}}",
                    ),
                    target(BUDGET, "budget"),
                ],
                unit="currencyUSD",
                width=8,
            ),
            "budget",
        ),
        drawn_level(
            timeseries(
                "Judge spend, last 24 hours",
                "Estimated spend on LLM judges over the 24 hours before each point, all "
                "models: RagtraceJudgeSpendOverBudget fires above the daily budget (the dashed "
                f"line, {BUDGET}).",
                [
                    target(f"sum(increase({JUDGE_COST}[1d]))", "spend"),
                    target(BUDGET, "budget"),
                ],
                unit="currencyUSD",
                width=8,
            ),
            "budget",
        ),
        timeseries(
            "Judge latency",
            "Median and 95th percentile of one LLM-judge call, by model.",
            [
                target(quantile(0.5, judge_duration, "", "model"), "p50 {{model}}"),
                target(quantile(0.95, judge_duration, "", "model"), "p95 {{model}}"),
            ],
            unit="s",
        ),
        timeseries(
            "Judge parse failures per minute",
            "Judge answers that could not be parsed into a score (each becomes an evaluation "
            "error), by evaluator and model.",
            [
                target(
                    per_minute(
                        f"sum by (evaluator, model) "
                        f"(rate(ragtrace_judge_parse_failures_total{RATE}))"
                    ),
                    "{{evaluator}} / {{model}}",
                )
            ],
        ),
        *fleet_panels(),
        *ingest_panels(),
    ]
    return dashboard(
        "ragtrace-operations",
        "ragtrace / operations",
        "The ragtrace pipeline itself: requests and evaluations per second, evaluator latency, "
        "the model caches' hit ratios, sampling, queue and drops, internal errors, LLM-judge "
        "tokens, spend and latency, and the worker fleet's queue, and `ragtrace ingest` "
        "receiving other apps' spans.",
        panels,
        VARIABLES,
        [alerts_annotation(ALERTS)],
    )


DASHBOARDS = {
    "ragtrace-quality.json": quality_dashboard,
    "ragtrace-operations.json": operations_dashboard,
}


def render() -> dict[str, str]:
    """File name -> JSON text of every dashboard, exactly as committed."""
    return {name: json.dumps(build(), indent=2) + "\n" for name, build in DASHBOARDS.items()}


def main(argv: list[str] | None = None) -> int:
    """Write the dashboards, or with ``--check`` report the stale ones; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if stale")
    args = parser.parse_args(argv)
    stale = []
    for name, text in render().items():
        path = OUT_DIR / name
        current = path.read_text() if path.exists() else None
        if current == text:
            continue
        stale.append(name)
        if not args.check:
            path.write_text(text)
    if args.check and stale:
        print(f"stale: {', '.join(stale)}; run python -m grafana.build_dashboards", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
