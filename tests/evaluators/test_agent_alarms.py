"""The agent evaluators' alarm table, regenerated on a small sample of scripted agent turns.

``benchmarks/alarms.py --agents`` runs LangChain ``create_agent`` agents on LangChain's fake chat
model with real tools over the demo's help centre, captured by ragtrace's LangChain handler, and
scores ``tool_errors``, ``repeated_tool_calls`` and ``agent_steps`` on healthy turns and on turns
gone wrong. Here a bounded sample of the tuning part: the turns are what they claim to be, and
each evaluator's shipped default keeps the false-alarm budget while catching its kind of failure.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ragtrace.evaluators._agent_steps import call_key

ROOT = Path(__file__).resolve().parents[2]
RUNS_PER_KIND = 60
FALSE_ALARM_BUDGET = 0.05
DETECTION_FLOOR = 0.80


@pytest.fixture(scope="module")
def alarms() -> Any:
    folder = str(ROOT / "benchmarks")
    if folder not in sys.path:
        sys.path.insert(1, folder)
    import alarms

    return alarms


@pytest.fixture(scope="module")
def cases(alarms: Any) -> list[Any]:
    from _alarm_cases import TUNING, agent_cases

    return agent_cases(RUNS_PER_KIND, (TUNING,))


@pytest.fixture(scope="module")
def tuning(alarms: Any, cases: list[Any]) -> Any:
    return alarms.agent_part(alarms.TUNING, cases, grid=True)


def of_kind(cases: list[Any], kind: str) -> list[Any]:
    found = [c.record for c in cases if c.kind == kind]
    assert len(found) == RUNS_PER_KIND, kind
    return found


def test_the_questions_are_split_once_and_every_shape_is_in_both_parts(alarms: Any) -> None:
    from _alarm_cases import LOCKED, TUNING, agent_parts, agent_scenarios

    scenarios = agent_scenarios()
    parts = agent_parts(scenarios)
    assert parts == agent_parts(list(reversed(scenarios)))  # by question, not by position
    assert set(parts) == {s.question for s in scenarios}
    for shape in {s.shape for s in scenarios}:
        shares = Counter(parts[s.question] for s in scenarios if s.shape == shape)
        assert abs(shares[TUNING] - shares[LOCKED]) <= 1, (shape, shares)


def test_healthy_turns_are_varied_and_captured_as_production_would(cases: list[Any]) -> None:
    normal = of_kind(cases, "normal")
    tool_counts = Counter(len(r.tool_calls) for r in normal)
    assert set(tool_counts) >= {0, 1, 2, 3}, tool_counts
    searches = [[c for c in r.tool_calls if c.name == "search_help_centre"] for r in normal]
    assert any(len({c.arguments for c in s}) == 2 for s in searches)  # two different queries
    assert {c.name for r in normal for c in r.tool_calls} == {
        "search_help_centre",
        "lookup_account",
        "calculator",
    }
    made_good = standing = 0
    for r in normal:  # a healthy turn's failure is made good, or is a mistyped account id
        last = {c.name: c.status for c in r.tool_calls}
        for c in r.tool_calls:
            if c.status == "error" and last[c.name] == "ok":
                made_good += 1
            elif c.status == "error":
                standing += 1
                assert c.name == "lookup_account" and "unknown account id" in str(c.error)
    assert made_good and standing, (made_good, standing)
    for r in normal:
        assert r.llm_calls == len(r.tool_calls) + 1 and r.response and r.status == "ok"
        if any(c.name == "search_help_centre" and c.status == "ok" for c in r.tool_calls):
            assert {c.source for c in r.chunks} == {"search_help_centre/CorpusRetriever"}


def test_bad_turns_are_what_their_kind_says(cases: list[Any]) -> None:
    for r in of_kind(cases, "tool_outage"):
        needed = {c.name for c in r.tool_calls if c.status == "error"}
        assert needed and all(c.status == "error" for c in r.tool_calls if c.name in needed)
    for r in of_kind(cases, "repeated_calls"):
        keys = Counter(call_key(c) for c in r.tool_calls)
        assert max(keys.values()) >= 2
    loops = of_kind(cases, "runaway_loop")
    assert min(r.llm_calls for r in loops) >= 7 and max(r.llm_calls for r in loops) <= 41
    for r in of_kind(cases, "wrong_tool"):
        assert [c.name for c in r.tool_calls] != ["search_help_centre"]


def test_each_default_keeps_the_budget_and_catches_its_kind(alarms: Any, tuning: Any) -> None:
    found = {}
    for name, spec in alarms.AGENT_SCORES.items():
        ((label, _),) = alarms._shipped(alarms.AGENT_GRID[name])
        variant = tuning["scores"][name][label]
        (named,) = spec.named
        found[name] = (alarms.agent_rate(variant, "normal"), alarms.agent_rate(variant, named))
        assert variant["summary"]["meets"], (name, found[name])
    for name, (false_alarms, detection) in found.items():
        assert false_alarms <= FALSE_ALARM_BUDGET and detection >= DETECTION_FLOOR, name
    # counting the failures a later call made good fails more healthy turns, not more outages
    counted = tuning["scores"]["tool_errors"]["count_recovered=True"]
    assert alarms.agent_rate(counted, "normal") > found["tool_errors"][0]
    assert alarms.agent_rate(counted, "tool_outage") == found["tool_errors"][1]
    # so does counting a retry of a failed call as a repeat
    retries = tuning["scores"]["repeated_tool_calls"]["count_retries=True"]
    assert alarms.agent_rate(retries, "normal") > found["repeated_tool_calls"][0]
    # a loop is long: the tighter the step limit the more loops are caught
    steps = [alarms.agent_rate(v, "runaway_loop") for v in tuning["scores"]["agent_steps"].values()]
    assert steps == sorted(steps, reverse=True) and steps[0] == 1.0 > steps[-1]


def test_the_markdown_table_has_a_row_per_score_and_a_cell_per_kind(
    alarms: Any, tuning: Any
) -> None:
    table = alarms.agent_markdown(tuning, tuning).splitlines()
    assert len(table) == 2 + len(alarms.AGENT_SCORES)
    for row in table[2:]:
        assert row.count("|") == 2 + len(alarms.AGENT_KINDS) + 1, row
