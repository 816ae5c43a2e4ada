"""The quality dashboard's alert panels: the evidence the quality alerts weigh, and its threshold.

``RagtraceQualityDrop`` and ``RagtraceQualityBelowFloor`` read, per app and evaluator, the drop
and floor evidence recorded by ``grafana/prometheus/ragtrace-alerts.rules.yml`` (group
``ragtrace.quality``): how many standard errors a window's pass ratio lies under its 7-day
baseline past the tolerance, or under the evaluator's floor. The panels draw that evidence
with the threshold it must pass, queried from ``ragtrace:quality_evidence_threshold`` (a
series, so the line moves with the rules Prometheus loaded); per evaluator, each window's pass
ratio against its baseline and the evaluator's floor, and the verdicts each window holds. Only
the evaluators the alerts watch are drawn (the alerts' own evaluator matcher): a
sensitive-content score, where a low pass ratio is what finding things looks like, gets no
threshold.

``faithfulness`` (the online suite's) scores each answer with one probability, that it holds no
unsupported claim; its verdict fails when that is below 0.5 (docs/evaluators.md). Its panel
draws, per app, the share of answers whose verdict failed beside ``1 - mean score``, the share
the probabilities themselves expect, and the share over which its floor pages.
"""

from __future__ import annotations

from grafana.operating_points import recorded_constant, watched_evaluators
from grafana.panels import Json, drawn_level, target, timeseries

RATE = "[$__rate_interval]"
DROP, FLOOR = "RagtraceQualityDrop", "RagtraceQualityBelowFloor"
THRESHOLD = "ragtrace:quality_evidence_threshold"
MIN_VERDICTS = "ragtrace:quality_min_verdicts"
FLOOR_RATIO = "app_evaluator:ragtrace_quality_floor:pass_ratio"
THRESHOLD_LEGEND = "threshold"
BOTH = "{{app}} / {{evaluator}}"
BY_WINDOW = "{{app}} {{window}}"


def _watched(alert: str, evaluator: str) -> str:
    """Matchers for the app and evaluator variables and the evaluators ``alert`` watches."""
    matchers = ['app=~"$app"', f'evaluator=~"{evaluator}"', watched_evaluators(alert)]
    return ", ".join(m for m in matchers if m)


def _evidence(title: str, what: str, alert: str, series: str, legend: str, width: int) -> Json:
    threshold = recorded_constant(THRESHOLD)
    return drawn_level(
        timeseries(
            title,
            f"{what} {alert} fires when it stays above the threshold (the dashed line, "
            f"{THRESHOLD}: {threshold:g} as shipped) for 5 minutes. Under 0: no evidence at "
            "all; no line: too few verdicts to count. Only the evaluators the alert watches "
            "are drawn.",
            [
                target(f"{series}{{{_watched(alert, '$evaluator')}}}", legend),
                target(THRESHOLD, THRESHOLD_LEGEND),
            ],
            min_=None,
            width=width,
        ),
        THRESHOLD_LEGEND,
    )


def evidence_panels() -> list[Json]:
    """The overview's drop and floor evidence per app and evaluator (what the alerts read)."""
    return [
        _evidence(
            "Drop evidence",
            "How many standard errors the pass ratio of the worst window (15 minutes to a day) "
            "lies under the app's 7-day baseline, past the tolerance "
            f"({recorded_constant('ragtrace:quality_drop_tolerance_sd'):g} standard deviations "
            "of the baseline's verdicts).",
            DROP,
            "app_evaluator:ragtrace_quality_drop:evidence",
            BOTH,
            12,
        ),
        _evidence(
            "Floor evidence",
            "How many standard errors the pass ratio of the worst window lies under the "
            f"app's floor ({FLOOR_RATIO}: the evaluator's, or the app's own where one is "
            "declared), whatever the app's history.",
            FLOOR,
            "app_evaluator:ragtrace_quality_floor:evidence",
            BOTH,
            12,
        ),
    ]


def evaluator_panels() -> list[Json]:
    """The repeated evaluator row's alert panels: per window, pass ratio against baseline and
    floor, the evidence, and the verdicts each window holds."""
    watched = _watched(DROP, "$evaluator")
    floor_legend = "{{app}} floor"
    min_legend = "minimum to count"
    return [
        drawn_level(
            timeseries(
                "Pass ratio by window vs baseline: $evaluator",
                "Per app, the pass ratio (pass / (pass + fail)) of each window the quality "
                "alerts weigh (15 minutes, 1 hour, 6 hours, 1 day) and its baseline (the 7 days "
                "before that window). RagtraceQualityDrop weighs how far a window lies under "
                "its baseline; RagtraceQualityBelowFloor how far under the app's floor "
                f"(the dashed line, {FLOOR_RATIO}).",
                [
                    target(
                        f"app_evaluator_window:ragtrace_pass_ratio:ratio{{{watched}}}", BY_WINDOW
                    ),
                    target(
                        f"app_evaluator_window:ragtrace_baseline_pass_ratio:ratio{{{watched}}}",
                        "{{app}} {{window}} baseline",
                    ),
                    target(
                        f"{FLOOR_RATIO}{{{_watched(FLOOR, '$evaluator')}}}",
                        floor_legend,
                    ),
                ],
                unit="percentunit",
                max_=1,
                width=8,
            ),
            floor_legend,
        ),
        _evidence(
            "Drop evidence by window: $evaluator",
            "Per app and window, how many standard errors the window's pass ratio lies under "
            "its baseline, past the tolerance; the alert reads the largest.",
            DROP,
            "app_evaluator_window:ragtrace_quality_drop:evidence",
            BY_WINDOW,
            8,
        ),
        _evidence(
            "Floor evidence by window: $evaluator",
            "Per app and window, how many standard errors the window's pass ratio lies under "
            "the evaluator's floor; the alert reads the largest.",
            FLOOR,
            "app_evaluator_window:ragtrace_quality_floor:evidence",
            BY_WINDOW,
            8,
        ),
        drawn_level(
            timeseries(
                "Verdicts by window: $evaluator",
                "Per app, the verdicts (pass + fail) each window holds. A window's evidence "
                f"counts from the dashed line on ({MIN_VERDICTS}: "
                f"{recorded_constant(MIN_VERDICTS):g} as shipped), with a baseline at least as "
                "large: at a low sampled rate only the longer windows decide.",
                [
                    target(
                        f"app_evaluator_window:ragtrace_verdicts:increase{{{watched}}}", BY_WINDOW
                    ),
                    target(MIN_VERDICTS, min_legend),
                ],
                width=8,
            ),
            min_legend,
            color="orange",
        ),
    ]


def _rate(family: str, matchers: str) -> str:
    return f"sum by (app) (rate({family}{{{matchers}}}{RATE}))"


def faithfulness_panels() -> list[Json]:
    """Hallucinated answers per app: failed verdicts, the probabilities' expectation, and the
    share over which the faithfulness floor pages."""
    faithfulness = 'app=~"$app", evaluator="faithfulness"'
    verdicts = _rate("ragtrace_evaluations_total", f'{faithfulness}, outcome=~"pass|fail"')
    failed = _rate("ragtrace_evaluations_total", f'{faithfulness}, outcome="fail"')
    mean = (
        f"{_rate('ragtrace_evaluation_score_sum', faithfulness)}"
        f" / {_rate('ragtrace_evaluation_score_count', faithfulness)}"
    )
    floor_legend = "{{app}} floor (1 - its faithfulness floor)"
    return [
        drawn_level(
            timeseries(
                "Hallucinated answers (faithfulness)",
                "Share of evaluated answers whose faithfulness verdict failed: the detector's "
                "probability that the answer holds an unsupported claim is above 0.5. The second "
                "line is 1 - the mean faithfulness score, the share its probabilities expect. "
                "RagtraceQualityBelowFloor weighs the verdicts against the dashed line (1 - "
                f'{FLOOR_RATIO}{{evaluator="faithfulness"}}); RagtraceQualityDrop against the '
                "app's own baseline (the panels of the faithfulness row).",
                [
                    target(f"({failed} or {verdicts} * 0) / {verdicts}", "{{app}} (verdicts)"),
                    target(f"1 - ({mean})", "{{app}} (expected from the probabilities)"),
                    target(f"1 - {FLOOR_RATIO}{{{_watched(FLOOR, 'faithfulness')}}}", floor_legend),
                ],
                unit="percentunit",
                max_=1,
                width=24,
            ),
            floor_legend,
        ),
    ]
