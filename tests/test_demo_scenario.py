"""``ragtrace demo --scenario`` and ``--degrade-after``: which generator weights answer, and the
switch to the sloppy ones mid-run, labelled on every request and said in the summary."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import pytest

from ragtrace.demo._app import DemoChatModel
from ragtrace.demo._generator import WEIGHTS, Schedule
from ragtrace.demo._run import DemoError, run_demo
from ragtrace.demo._scenario import DEGRADED, SCENARIOS, ScenarioPlan
from ragtrace.demo.systems import SETTINGS
from tests.test_demo import Terminal, quick


def test_scenarios_are_the_generator_settings_themselves() -> None:
    assert SCENARIOS["good"] is SETTINGS["aurora-careful"]
    assert SCENARIOS["sloppy"] is SETTINGS["aurora-sloppy"]
    assert SCENARIOS["default"] is WEIGHTS
    for weights in SCENARIOS.values():
        assert sum(weights.values()) == pytest.approx(1.0)
    assert SCENARIOS["good"]["grounded"] > WEIGHTS["grounded"] > SCENARIOS["sloppy"]["grounded"]


def test_a_plan_degrades_to_sloppy_at_its_time() -> None:
    plan = ScenarioPlan("good", degrade_after_s=120)
    assert [plan.current(t) for t in (0.0, 119.9, 120.0, 500.0)] == [
        "good",
        "good",
        DEGRADED,
        DEGRADED,
    ]
    assert plan.describe() == "good, then sloppy after 120 s"
    assert ScenarioPlan("good").current(1e9) == "good"
    assert ScenarioPlan().describe() == "default"
    with pytest.raises(ValueError, match="unknown scenario 'great'"):
        ScenarioPlan("great")
    with pytest.raises(ValueError, match="cannot degrade"):
        ScenarioPlan("sloppy", degrade_after_s=10)
    with pytest.raises(ValueError, match=">= 0"):
        ScenarioPlan("good", degrade_after_s=-1)


def test_the_default_scenario_draws_what_the_demo_always_drew() -> None:
    before = Schedule(seed=5)
    now = DemoChatModel(seed=5, weights=SCENARIOS["default"])._schedule
    assert [before.draw()[0] for _ in range(300)] == [now.draw()[0] for _ in range(300)]


def test_switching_weights_keeps_the_seeded_sequence_going() -> None:
    plain, switched = Schedule(seed=1), Schedule(seed=1)
    assert [plain.draw()[0] for _ in range(50)] == [switched.draw()[0] for _ in range(50)]
    switched.set_weights({"looping": 1.0})
    assert {switched.draw()[0] for _ in range(50)} == {"looping"}
    with pytest.raises(ValueError, match="non-negative"):
        switched.set_weights({"looping": -1.0})


def test_a_degrading_run_labels_each_request_and_says_when_it_switched() -> None:
    out, err = io.StringIO(), io.StringIO()
    options = quick(duration_s=2.0, rate=40.0, as_json=True, scenario="good", degrade_after_s=1.0)
    result = run_demo(options, out, err)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    scenarios = [line["scenario"] for line in lines]
    switch = re.search(
        r"switched good -> sloppy at (1\.\d) s \(from request (\d+)\)", err.getvalue()
    )
    assert switch is not None, err.getvalue()
    first_sloppy = int(switch[2])
    assert scenarios == ["good"] * (first_sloppy - 1) + ["sloppy"] * (len(lines) - first_sloppy + 1)
    assert 20 <= first_sloppy <= 60 and len(lines) > first_sloppy
    assert [e.scenario for e in result.entries] == scenarios
    summary = result.summary.scenario
    assert summary.startswith("good, then sloppy after 1 s: switched good -> sloppy at 1.")
    assert f"  scenario         {summary}" in err.getvalue()


def test_a_run_without_a_switch_says_its_scenario() -> None:
    out, err = io.StringIO(), io.StringIO()
    result = run_demo(quick(requests=10, as_json=True, scenario="sloppy"), out, err)
    assert {json.loads(line)["scenario"] for line in out.getvalue().splitlines()} == {"sloppy"}
    assert result.summary.scenario == "sloppy"
    assert "scenario sloppy" in err.getvalue()  # the banner


def test_a_run_that_ends_before_its_switch_says_so() -> None:
    result = run_demo(quick(requests=5, scenario="good", degrade_after_s=600), io.StringIO())
    assert result.summary.scenario == "good, then sloppy after 600 s: ended before it degraded"
    assert {e.scenario for e in result.entries} == {"good"}


def test_a_bad_plan_is_a_demo_error() -> None:
    with pytest.raises(DemoError, match="cannot degrade"):
        run_demo(quick(requests=1, scenario="sloppy", degrade_after_s=1), io.StringIO())


def test_cli_scenario_arguments() -> None:
    for args, code, message in (
        (["--scenario", "great"], 2, "invalid choice: 'great'"),
        (["--degrade-after", "-1"], 2, "must be >= 0"),
        (["--alert-time-scale", "60"], 2, "--alert-time-scale needs --prometheus"),
        (["--prometheus", "--alert-time-scale", "0.5"], 2, "must be >= 1"),
        (["--prometheus", "--alert-time-scale", "1000"], 2, "<= 120"),
        (["--scenario", "sloppy", "--degrade-after", "5"], 1, "cannot degrade to sloppy"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "ragtrace", "demo", "--evaluators", "looping", *args],
            capture_output=True,
            check=False,
            text=True,
            timeout=120,
        )
        assert proc.returncode == code and message in proc.stderr, (args, proc.stderr)


def test_the_live_view_shows_the_scenario_and_the_switch() -> None:
    out = Terminal()
    options = quick(duration_s=1.5, rate=40.0, live=None, scenario="good", degrade_after_s=0.5)
    run_demo(options, out, io.StringIO())
    frames = out.getvalue().split("\x1b[H")
    assert any("scenario good   degrades at 0.5 s" in frame for frame in frames)
    assert "scenario sloppy   switched good -> sloppy at 0." in frames[-1]
