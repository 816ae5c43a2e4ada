"""Problems, insights, flips and the report's tables on hand-made score lines (``lines.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragtrace._report.build import ReportOptions
from ragtrace._report.html import render_page
from tests.report.lines import (
    line,
    report_of,
    score,
    section,
    two_systems,
    unanswered_line,
)


def by_system(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["system"]: e for e in entries}


def test_leaderboard_means_and_pass_rates(tmp_path: Path) -> None:
    faith = section(report_of(tmp_path, two_systems()), "faithfulness")
    board = by_system(faith["leaderboard"])
    # model-a: (0.9 + 0.6 + 0.5 + 0.7) / 4; passes 1 of 4. model-b: (0.95+0.8+0.7+0.85) / 4, 3/4.
    assert board["model-a"]["mean"] == 0.675 and board["model-a"]["pass_rate"] == 0.25
    assert board["model-b"]["mean"] == 0.825 and board["model-b"]["pass_rate"] == 0.75
    assert [e["system"] for e in faith["leaderboard"]] == ["model-b", "model-a"]
    assert board["model-b"]["perturbed"] == 2 and board["model-b"]["n"] == 4  # typos not in n
    for e in faith["leaderboard"]:
        assert e["mean_low"] <= e["mean"] <= e["mean_high"]


def test_difference_is_paired_by_case(tmp_path: Path) -> None:
    (comparison,) = section(report_of(tmp_path, two_systems()), "faithfulness")["comparisons"]
    assert (comparison["system"], comparison["vs"]) == ("model-b", "model-a")
    assert comparison["diff"] == 0.15 and comparison["paired"] and comparison["n"] == 4
    assert comparison["low"] > 0 and comparison["clear"]  # b is better on every case
    assert comparison["text"].startswith("model-b is better than model-a on faithfulness by +0.150")


def test_paired_on_the_common_cases_when_one_system_missed_a_few(tmp_path: Path) -> None:
    rows = [r for r in two_systems() if (r["system"], r["case"]) != ("model-a", "q4")]
    (comparison,) = section(report_of(tmp_path, rows), "faithfulness")["comparisons"]
    assert comparison["paired"] and comparison["n"] == 3 and comparison["left_out"] == 1
    # q1-q3 only: model-b (0.95 + 0.8 + 0.7) / 3 against model-a (0.9 + 0.6 + 0.5) / 3
    assert comparison["diff"] == round((0.95 + 0.8 + 0.7 - 0.9 - 0.6 - 0.5) / 3, 3)
    assert comparison["clear"]  # b is better on each of the three
    page = render_page(report_of(tmp_path, rows))
    assert "paired, n=3 (1 case not every system has, left out)" in page


def test_unpaired_when_the_systems_answered_different_cases(tmp_path: Path) -> None:
    # model-a answered q1 and q2, model-b q2, q3 and q4: one common case of three
    keep = {("model-a", "q1"), ("model-a", "q2"), ("model-b", "q2"), ("model-b", "q3")}
    keep |= {("model-b", "q4")}
    rows = [r for r in two_systems() if (r["system"], r["case"]) in keep]
    (comparison,) = section(report_of(tmp_path, rows), "faithfulness")["comparisons"]
    assert not comparison["paired"] and comparison["n"] == 2 and comparison["left_out"] == 0
    assert comparison["diff"] == round((0.8 + 0.7 + 0.85) / 3 - (0.9 + 0.6) / 2, 3)


def test_a_system_past_the_threshold_is_a_problem(tmp_path: Path) -> None:
    problems = section(report_of(tmp_path, two_systems()), "faithfulness")["problems"]
    below = [p for p in problems if p["kind"] == "below_threshold"]
    assert [(p["system"], p["mean"], p["threshold"]) for p in below] == [("model-a", 0.675, 0.75)]


def test_lower_is_better_is_a_problem_above_the_threshold(tmp_path: Path) -> None:
    rows = [
        line(s, c, [score("hallucination", v, 0.5, "lower_is_better")])
        for s, c, v in [("a", "q1", 0.7), ("a", "q2", 0.5), ("b", "q1", 0.2), ("b", "q2", 0.4)]
    ]
    problems = section(report_of(tmp_path, rows), "hallucination")["problems"]
    assert [(p["kind"], p["system"]) for p in problems] == [("below_threshold", "a")]
    assert "above the threshold 0.5" in problems[0]["text"]


def test_a_flipped_verdict_under_perturbation_is_reported(tmp_path: Path) -> None:
    faith = section(report_of(tmp_path, two_systems()), "faithfulness")
    # q2: 0.80 pass -> 0.40 fail under typos; q1: 0.95 pass -> 0.92 pass (no flip).
    (flip,) = faith["flips"]
    assert {k: flip[k] for k in ("system", "case", "perturbation", "before", "after")} == {
        "system": "model-b", "case": "q2", "perturbation": "typos",
        "before": "pass", "after": "fail",
    }  # fmt: skip
    assert (flip["value_before"], flip["value_after"]) == (0.8, 0.4)
    flipped = [p for p in faith["problems"] if p["kind"] == "flipped"]
    assert [(p["system"], p["case"], p["perturbation"]) for p in flipped] == [
        ("model-b", "q2", "typos")
    ]
    assert by_system(faith["leaderboard"])["model-b"]["flips"] == 1


def test_the_most_difficult_case_is_the_one_most_systems_fail(tmp_path: Path) -> None:
    faith = section(report_of(tmp_path, two_systems()), "faithfulness")
    (hardest,) = [i for i in faith["insights"] if i["kind"] == "hardest_case"]
    assert (hardest["case"], hardest["failing"], hardest["judged"]) == ("q3", 2, 2)
    # The heatmap orders the same way: q3 (2 fail), q2 and q4 (1 fail: a's 0.6 before 0.7), q1.
    assert [c["case"] for c in faith["heatmap"]["cases"]] == ["q3", "q2", "q4", "q1"]


def test_the_best_system_is_direction_aware(tmp_path: Path) -> None:
    report = report_of(tmp_path, two_systems())
    best = {
        s["name"]: [i["system"] for i in s["insights"] if i["kind"] == "best_system"]
        for s in report["scores"]
    }
    # hallucination: model-a has the larger mean (0.375 vs 0.2375) and is the worse system.
    assert best == {"faithfulness": ["model-b"], "hallucination": ["model-b"]}
    halluc = section(report, "hallucination")
    (comparison,) = halluc["comparisons"]
    assert comparison["diff"] < 0 and "(lower is better)" in comparison["text"]
    assert [h["score"] for h in report["headline"]] == ["faithfulness", "hallucination"]


def test_one_system_has_no_best_system_insight(tmp_path: Path) -> None:
    rows = [r for r in two_systems() if r["system"] == "model-a"]
    faith = section(report_of(tmp_path, rows), "faithfulness")
    assert [i["kind"] for i in faith["insights"]] == ["hardest_case"]
    assert faith["comparisons"] == []


def test_worst_examples_carry_texts_and_claims(tmp_path: Path) -> None:
    worst = section(report_of(tmp_path, two_systems(), worst=3), "faithfulness")["worst"]
    assert [(w["system"], w["case"], w["perturbation"], w["value"]) for w in worst] == [
        ("model-b", "q2", "typos", 0.4),
        ("model-a", "q3", None, 0.5),
        ("model-a", "q2", None, 0.6),
    ]
    assert worst[1]["response"].startswith("Answer <script>")
    assert worst[1]["claims"] == [
        {"text": "Aurora opened in Lyon in 2019.", "supported": False, "support": 0.08},
        {"text": "It sells.", "supported": True, "support": 0.9},
    ]


def test_errors_are_counted_not_averaged(tmp_path: Path) -> None:
    rows = [
        line("a", "q1", [score("faithfulness", 0.8)]),
        line("a", "q2", [score("faithfulness", None, error="judge timed out")]),
    ]
    (entry,) = section(report_of(tmp_path, rows), "faithfulness")["leaderboard"]
    assert (entry["n"], entry["errors"], entry["mean"], entry["pass_rate"]) == (1, 1, 0.8, 1.0)


def test_many_cases_heatmap_shows_the_hardest_with_a_note(tmp_path: Path) -> None:
    rows = [
        line(s, f"c{i:03d}", [score("faithfulness", (i % 100) / 100)])
        for i in range(300)
        for s in ("a", "b")
    ]
    report = report_of(tmp_path, rows, max_cases=25)
    heat = section(report, "faithfulness")["heatmap"]
    assert (heat["shown"], heat["total_cases"]) == (25, 300)
    assert all(c["values"] == {"a": 0.0, "b": 0.0} for c in heat["cases"][:3])  # c000, c100...
    page = render_page(report)
    assert page.count('class="cell"') == 50
    assert "showing the 25 hardest of the 300 compared test cases" in page


@pytest.mark.parametrize("bad", [{"max_cases": 0}, {"worst": -1}, {"bins": 0}])
def test_bad_options_are_refused(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        ReportOptions(**bad)


def test_rows_with_different_thresholds_are_each_judged_on_their_own(tmp_path: Path) -> None:
    """A calibrated evaluator writes a threshold per row (per task): a row without a verdict
    is judged on its own threshold, a mean past a threshold is checked on the rows carrying it,
    and the page lists every threshold."""
    qa, summary = 0.5745, 0.7532

    def row(system: str, case: str, value: float, threshold: float) -> dict[str, Any]:
        found = score("faithfulness", value, threshold)
        found["passed"] = None  # judged by the report on the row's own threshold
        return line(system, case, [found])

    rows = [
        row("a", "q1", 0.70, qa), row("a", "q2", 0.72, summary),
        row("a", "q3", 0.60, qa), row("a", "q4", 0.80, summary),
        row("b", "q1", 0.65, qa), row("b", "q2", 0.70, summary),
        row("b", "q3", 0.90, qa), row("b", "q4", 0.70, summary),
    ]  # fmt: skip
    report = report_of(tmp_path, rows)
    faith = section(report, "faithfulness")
    assert faith["thresholds"] == [{"threshold": qa, "rows": 4}, {"threshold": summary, "rows": 4}]
    board = by_system(faith["leaderboard"])
    # a: q1 0.70 >= 0.5745, q2 0.72 < 0.7532, q3 0.60 >= 0.5745, q4 0.80 >= 0.7532: 3 of 4
    assert board["a"]["pass_rate"] == 0.75
    # b: 0.65 pass, 0.70 fail, 0.90 pass, 0.70 fail: 2 of 4
    assert board["b"]["pass_rate"] == 0.5
    below = [p for p in faith["problems"] if p["kind"] == "below_threshold"]
    # Only b's summary rows (mean 0.70) fall below their threshold; a's (0.76) do not, and
    # neither system's QA rows do.
    assert [(p["system"], p["threshold"], p["mean"], p["n"]) for p in below] == [
        ("b", summary, 0.7, 2)
    ]
    assert "over the 2 compared case(s) with that threshold" in below[0]["text"]
    page = render_page(report)
    assert "thresholds differ by row: 0.5745 (4 rows), 0.7532 (4 rows)" in page
    assert page.count('class="threshold"') == 2 * 2  # both thresholds on each histogram


def test_regressions_and_improvements_are_told_apart(tmp_path: Path) -> None:
    rows = [
        line("a", "q1", [score("faithfulness", 0.9)]),
        line("a", "q1", [score("faithfulness", 0.5)], perturbation="typos"),
        line("a", "q2", [score("faithfulness", 0.5)]),
        line("a", "q2", [score("faithfulness", 0.9)], perturbation="typos"),
        line("a", "q3", [score("faithfulness", 0.4)]),
        line("a", "q3", [score("faithfulness", 0.8)], perturbation="typos"),
    ]
    report = report_of(tmp_path, rows)
    faith = section(report, "faithfulness")
    assert [(f["case"], f["kind"]) for f in faith["flips"]] == [
        ("q1", "regression"), ("q2", "improvement"), ("q3", "improvement")
    ]  # fmt: skip
    page = render_page(report)
    # One folded item per direction, each case named once; the table rows carry the kind.
    assert page.count('<li class="flip-regression"') == 1
    assert page.count('<li class="flip-improvement"') == 1
    assert "a: 2 improvement(s) under 'typos' (fail to pass)" in page
    assert "cases: q2, q3" in page
    assert page.count('<tr class="flip-improvement">') == 2


def test_a_mean_past_a_threshold_says_how_many_of_its_cases_went_unanswered(
    tmp_path: Path,
) -> None:
    """b answered 2 of the 3 cases that take the QA threshold and left one unanswered: the
    problem names 3 compared cases, 1 of them unanswered (not "its 3 cases")."""
    qa, summary = 0.5745, 0.7532

    def row(system: str, case: str, value: float, threshold: float) -> dict[str, Any]:
        return line(system, case, [score("faithfulness", value, threshold)])

    rows = [
        row("a", "q1", 0.9, qa), row("a", "q2", 0.9, qa), row("a", "q3", 0.9, qa),
        row("a", "q4", 0.9, summary), row("b", "q1", 0.5, qa), row("b", "q2", 0.5, qa),
        unanswered_line("b", "q3", ["faithfulness"]), row("b", "q4", 0.9, summary),
    ]  # fmt: skip
    faith = section(report_of(tmp_path, rows), "faithfulness")
    (below,) = [p for p in faith["problems"] if p["kind"] == "below_threshold"]
    assert (below["system"], below["threshold"], below["n"]) == ("b", qa, 3)
    assert below["mean"] == round((0.5 + 0.5 + 0.0) / 3, 3)
    assert "over the 3 compared case(s) with that threshold (1 of them unanswered)" in below["text"]
