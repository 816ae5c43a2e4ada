"""benchmarks/alert_traffic.py evaluates the quality alerts with a numpy copy of their PromQL
(the months of simulated traffic would take promtool hours). The copy is only worth its figures
if it fires when promtool fires: on series drawn the way the simulation draws them (verdicts of
measured pass probabilities, a daily cycle in rate, a change to bad answers), every minute's
firing quality alerts per app are the ones promtool's own engine gives."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from tests.components import promtool
from tests.grafana.artifacts import RULE_FILES

BENCHMARKS = str(Path(__file__).resolve().parents[2] / "benchmarks")
sys.path.insert(0, BENCHMARKS)
try:
    import alert_traffic as at
finally:
    sys.path.remove(BENCHMARKS)

HISTORY_MIN = 240
AFTER_MIN = 120
CHECKED_EVERY_MIN = 3
# Pass probabilities of normal and bad answers measured on the tuning part (BENCHMARKS.md,
# "Alarms"): an app per (score, data set), at shares of bad answers that stay quiet, page late
# and page at once, and one app bad from its first minute.
SOURCES = {
    "context_relevance.precision": at.Source("ares", 0.993, 0.007),
    "faithfulness": at.Source("halueval", 0.913, 0.027),
    "groundedness": at.Source("ragtruth/Data2txt", 0.97, 0.06),
}
SHARES = (0.03, 0.10, 0.30)
RATE = 0.5  # sampled requests a second: the 15-minute window holds about 450 verdicts


def _apps() -> list[tuple[str, at.App, list[tuple[int, float]]]]:
    out = []
    for score, source in SOURCES.items():
        app = at.App(score, source.dataset, (source, source), mix=False)
        for share in SHARES:
            name = f"{score}-{round(share * 100)}".replace(".", "-").replace("_", "-")
            out.append((name, app, [(HISTORY_MIN, 0.0), (AFTER_MIN, share)]))
        launch = f"{score}-launch".replace(".", "-").replace("_", "-")
        out.append((launch, app, [(HISTORY_MIN + AFTER_MIN, 0.25)]))
    return out


def _counter(per_minute: Any) -> str:
    return " ".join(str(int(v)) for v in np.concatenate([[0], np.cumsum(per_minute)]))


@pytest.mark.integration
def test_the_numpy_statistics_fire_when_promtool_fires(tmp_path: Path) -> None:
    constants = at.shipped_constants()
    series: list[dict[str, str]] = []
    expected: dict[int, set[tuple[str, str]]] = {}
    minutes = HISTORY_MIN + AFTER_MIN
    for index, (name, app, shares) in enumerate(_apps()):
        counts = at.per_minute(app, RATE, shares, np.random.default_rng([17, index]))
        labels = f'app="{name}", evaluator="{app.score}"'
        passes, fails = counts[1], counts[0] - counts[1]
        series.append(
            {
                "series": f'ragtrace_evaluations_total{{{labels}, outcome="pass"}}',
                "values": _counter(passes),
            }
        )
        series.append(
            {
                "series": f'ragtrace_evaluations_total{{{labels}, outcome="fail"}}',
                "values": _counter(fails),
            }
        )
        stats = at.Statistics(counts, constants)
        floor = constants.floors[app.score]
        for alert, fired in (
            ("RagtraceQualityDrop", at.firing(stats.drop(), constants)),
            ("RagtraceQualityBelowFloor", at.firing(stats.floor(floor), constants)),
        ):
            for minute in np.flatnonzero(fired):
                expected.setdefault(int(minute), set()).add((name, alert))
    checked = range(CHECKED_EVERY_MIN, minutes + 1, CHECKED_EVERY_MIN)
    tests = {
        "rule_files": [str(path) for path in RULE_FILES],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": 'count by (app, alertname) (ALERTS{alertstate="firing", '
                        'component="quality"})',
                        "eval_time": f"{minute}m",
                        "exp_samples": [
                            {"labels": f'{{alertname="{alert}", app="{app}"}}', "value": 1}
                            for app, alert in sorted(expected.get(minute, set()))
                        ],
                    }
                    for minute in checked
                ],
            }
        ],
    }
    # the draws exercise both sides: quiet apps, apps paging on a drop, apps under the floor
    fired = set().union(*expected.values())
    assert {alert for _, alert in fired} == {"RagtraceQualityDrop", "RagtraceQualityBelowFloor"}
    assert not any(app.endswith("-3") for app, _ in fired)
    drops = [m for m, found in expected.items() for app, _ in found if app.endswith("-30")]
    assert drops and min(drops) > HISTORY_MIN  # the 30% apps page, after the change only
    path = tmp_path / "drawn.test.yml"
    path.write_text(yaml.safe_dump(tests, sort_keys=False, width=1_000_000))
    result = promtool("test", "rules", str(path), timeout_s=600)
    assert result.returncode == 0, result.stderr[-3000:]
