"""The quality dashboard's faithfulness panel: how many answers the detector judges hallucinated.

``faithfulness`` (the online suite's) scores each answer with one probability, that it holds no
unsupported claim; its verdict fails when that is below 0.5 (docs/evaluators.md). The panel
draws, per app, the share of answers whose verdict failed beside ``1 - mean score``, the share
the probabilities themselves expect: both come from the same detector, so they move together,
and a gap between them means many answers near the 0.5 line. The seeds' claim ratio is in each
evaluation's details (traces, review queue), not in Prometheus.
"""

from __future__ import annotations

from collections.abc import Callable

from grafana.panels import Json, target, timeseries

RATE = "[$__rate_interval]"
FAITHFULNESS = 'app=~"$app", evaluator="faithfulness"'


def _rate(family: str, matchers: str) -> str:
    return f"sum by (app) (rate({family}{{{matchers}}}{RATE}))"


def faithfulness_panels(mark: Callable[[Json, float], Json], bound: float) -> list[Json]:
    """Hallucinated answers per app: failed verdicts and the probabilities' expectation, with
    ``mark(panel, bound)`` drawing the alerts' operating point."""
    verdicts = _rate("ragtrace_evaluations_total", f'{FAITHFULNESS}, outcome=~"pass|fail"')
    failed = _rate("ragtrace_evaluations_total", f'{FAITHFULNESS}, outcome="fail"')
    mean = (
        f"{_rate('ragtrace_evaluation_score_sum', FAITHFULNESS)}"
        f" / {_rate('ragtrace_evaluation_score_count', FAITHFULNESS)}"
    )
    return [
        mark(
            timeseries(
                "Hallucinated answers (faithfulness)",
                "Share of evaluated answers whose faithfulness verdict failed: the detector's "
                "probability that the answer holds an unsupported claim is above 0.5. The second "
                "line is 1 - the mean faithfulness score, the share its probabilities expect. "
                "Alerts read the mean score (RagtraceGroundednessDrop, ...BelowFloor: the dashed "
                f"line, where the second line crosses {bound:g}).",
                [
                    target(f"({failed} or {verdicts} * 0) / {verdicts}", "{{app}} (verdicts)"),
                    target(f"1 - ({mean})", "{{app}} (expected from the probabilities)"),
                ],
                unit="percentunit",
                max_=1,
                width=24,
            ),
            bound,
        ),
    ]
