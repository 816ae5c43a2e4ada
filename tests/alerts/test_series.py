"""Verdicts as the exporter's counters, sampled every step, in promtool's series notation; and
promtool expanding that notation to exactly the values meant."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ragtrace._alerts.series import notation, sample
from ragtrace._alerts.verdicts import Verdict
from tests.components import promtool

T0 = 1_700_000_040  # a multiple of 60


def v(offset: float, value: float | None, passed: bool | None, evaluator: str = "e") -> Verdict:
    return Verdict(T0 + offset, "a", evaluator, value, passed)


def by_text(verdicts: list[Verdict], step: int = 60) -> dict[str, str]:
    sampled = sample(verdicts, step)
    return {s.text: s.values for s in sampled.series}


def labels(**extra: str) -> str:
    every = {"app": "a", "evaluator": "e", "instance": "backtest", "job": "ragtrace", **extra}
    return "{" + ", ".join(f'{k}="{val}"' for k, val in sorted(every.items())) + "}"


def test_counters_read_as_the_exporter_serves_them_at_each_step() -> None:
    verdicts = [
        v(0, 0.5, True),  # counted at the step of 0 s
        v(30, 0.1, False),  # counted from 60 s
        v(60, 1.0, True),
        v(200, None, None),  # an error: no value, no verdict; counted from 240 s
        v(250, 0.96, True),  # after the last whole step (240 s): left out
    ]
    sampled = sample(verdicts, 60)
    assert (sampled.start, sampled.samples, sampled.end) == (T0, 5, T0 + 240)
    assert sampled.replayed == 4
    series = {s.text: s.values for s in sampled.series}
    total = "ragtrace_evaluations_total"
    assert series.pop(total + labels(outcome="pass")) == "1 2x3"
    assert series.pop(total + labels(outcome="fail")) == "_ 1x3"
    assert series.pop(total + labels(outcome="error")) == "_x4 1"
    score = "ragtrace_evaluation_score"
    assert series.pop(f"{score}_count{labels()}") == "1 3x3"
    assert series.pop(f"{score}_sum{labels()}") == "0.5 1.6x3"
    assert series.pop(f"{score}_squares_total{labels()}") == "0.25 1.26x3"
    buckets = {le: series.pop(f"{score}_bucket{labels(le=le)}") for le in
               ("0.05", "0.1", "0.45", "0.5", "0.95", "1.0", "+Inf")}  # fmt: skip
    assert buckets == {"0.05": "0x4", "0.1": "0 1x3", "0.45": "0 1x3", "0.5": "1 2x3",
                       "0.95": "1 2x3", "1.0": "1 3x3", "+Inf": "1 3x3"}  # fmt: skip
    left = sorted(series)
    assert len(left) == 14 and all("_bucket{" in s for s in left)  # the other buckets


def test_the_order_of_the_verdicts_changes_no_value() -> None:
    values = [0.1, 0.2, 0.7, 1e-9, 0.3333333333, 0.9999]
    verdicts = [v(i % 7 * 13.7, x, x > 0.5) for i, x in enumerate(values * 50)]
    assert by_text(verdicts) == by_text(list(reversed(verdicts)))
    assert by_text(verdicts) == by_text(sorted(verdicts, key=lambda x: x.value or 0))


def test_a_series_starts_at_its_first_verdict_and_scores_above_one_go_to_inf_only() -> None:
    verdicts = [v(0, None, True), v(600, 1.5, True, "late"), v(660, None, True)]
    series = by_text(verdicts)
    late = labels(evaluator="late")
    assert series["ragtrace_evaluation_score_count" + late] == "_x10 1 1"
    assert series["ragtrace_evaluation_score_bucket" + late[:-1] + ', le="1.0"}'] == "_x10 0 0"
    assert series["ragtrace_evaluation_score_bucket" + late[:-1] + ', le="+Inf"}'] == "_x10 1 1"


@pytest.mark.parametrize(
    ("values", "written"),
    [
        ([0, 60, 120, 180], "0+60x3"),
        ([5, 5, 5], "5x2"),
        ([1, 2], "1 2"),
        ([3, 2, 1, 0], "3-1x3"),
        ([0.1, 0.2, 0.30000000000000004], "0.1+0.1x2"),  # what adding 0.1 twice gives
        ([0.1, 0.2, 0.3], "0.1 0.2 0.3"),  # not what adding 0.1 gives: one by one
        ([1.5, 2.75, 4.0, 4.0, 4.0, 7], "1.5+1.25x2 4.0 4.0 7"),
    ],
)
def test_runs_take_one_item_only_when_adding_gives_exactly_the_values(
    values: list[float], written: str
) -> None:
    assert notation(values) == written


@pytest.mark.integration
def test_promtool_expands_the_notation_to_exactly_the_values(tmp_path: Path) -> None:
    """The runs' values, floats included, read back from promtool one by one (exp_samples are
    compared exactly)."""
    values = [0.1 * i for i in range(1, 6)] + [0.7, 0.7, 0.7, 1e-05, 123456.789]
    running: list[float] = []
    for x in values:
        running.append((running[-1] if running else 0.0) + x)
    written = notation(running)
    assert "x" in written  # some runs were taken
    test = {
        "tests": [{
            "interval": "1m",
            "input_series": [{"series": "m", "values": written}],
            "promql_expr_test": [
                {"expr": "m", "eval_time": f"{i}m", "exp_samples": [{"labels": "m", "value": x}]}
                for i, x in enumerate(running)
            ],
        }]
    }  # fmt: skip
    path = tmp_path / "expand.test.yml"
    path.write_text(json.dumps(test))
    done: subprocess.CompletedProcess[str] = promtool("test", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
