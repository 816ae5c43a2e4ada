"""The report's words follow its numbers: "clear" only for an interval that keeps off 0 as
printed, the hardest case and the heatmap on the leaderboard's cases and rule, a headline that
names whom the best system clearly beats, and a classification board where skipping a case
costs precision.

Hand-built scores files in the shared schema (``tests.report.lines``), read by the real loader.
"""

from __future__ import annotations

from pathlib import Path

from ragtrace._report.html import render_page
from tests.report.lines import line, report_of, score, section, unanswered_line

CASES = [f"q{i:02d}" for i in range(30)]


def test_an_interval_that_touches_0_as_printed_is_never_clear(tmp_path: Path) -> None:
    """ "b" beats "a" by a hair on 28 cases and by 0.3 on two: the lower end of the interval is
    a hair above 0, printed (and written) as +0.000, so the difference is not clear."""
    rows = []
    for i, case in enumerate(CASES):
        base = 0.5 + (i % 5) * 0.05
        lift = 0.3 if i < 2 else 0.0001
        rows.append(line("a", case, [score("groundedness", base, 0.5)]))
        rows.append(line("b", case, [score("groundedness", base + lift, 0.5)]))
    report = report_of(tmp_path, rows)
    (versus,) = section(report, "groundedness")["comparisons"]
    assert versus["low"] == 0.0 and versus["high"] > 0.0
    assert versus["clear"] is False
    assert "no clear difference (the interval includes 0)" in versus["text"]
    (headline,) = report["headline"]
    assert headline["clear"] is False and "is better than" not in headline["text"]
    kinds = [i["kind"] for i in section(report, "groundedness")["insights"]]
    assert "best_system" not in kinds and "no_clear_best" in kinds
    assert "<td>not clear</td>" in render_page(report)


def test_the_hardest_case_and_the_heatmap_use_the_leaderboard_cases_and_rule(
    tmp_path: Path,
) -> None:
    """Three of four systems left q00 unanswered; the one that answered scored 0.984 but still
    failed its threshold. Counted as the leaderboard counts it, the case's mean is 0.246. A case
    not every system was asked is not compared, so neither the insight nor the heatmap shows
    it."""
    systems = ["a", "b", "c", "d"]
    rows = []
    for system in systems:
        for i, case in enumerate(CASES[:10]):
            if case == "q00" and system != "a":
                rows.append(unanswered_line(system, case, ["faithfulness"]))
            elif case == "q00":
                rows.append(line(system, case, [score("faithfulness", 0.984, 0.99)]))
            else:
                rows.append(line(system, case, [score("faithfulness", 0.995 - i * 0.0001, 0.99)]))
    rows.append(line("a", "extra", [score("faithfulness", 0.1, 0.99)]))  # only "a" was asked
    part = section(report_of(tmp_path, rows), "faithfulness")
    assert part["basis"]["cases"] == 10 and part["basis"]["left_out"] == 1
    (hardest,) = [i for i in part["insights"] if i["kind"] == "hardest_case"]
    assert hardest["case"] == "q00" and hardest["failing"] == 4
    assert hardest["mean"] == 0.246
    assert "(mean 0.246)" in hardest["text"]
    heatmap = part["heatmap"]
    shown = [c["case"] for c in heatmap["cases"]]
    assert shown[0] == "q00" and "extra" not in shown
    assert heatmap["total_cases"] == 10 and heatmap["left_out"] == 1
    assert heatmap["cases"][0]["mean"] == 0.246
    assert heatmap["cases"][0]["values"] == {"a": 0.984}  # what was scored, shown as is
    page = render_page(report_of(tmp_path, rows))
    assert "1 case not every system has is left out" in page


def test_the_headline_names_whom_the_best_clearly_beats_and_whom_it_does_not(
    tmp_path: Path,
) -> None:
    """ "top" and "close" are level (close is 0.05 below or 0.04 above, case by case); both
    are far above "weak" and "weaker"."""
    lift = {"top": 0.40, "weak": 0.0, "weaker": -0.05}
    rows = [
        line(system, case, [score("faithfulness", 0.3 + (i % 4) * 0.1 + up)])
        for system, up in lift.items()
        for i, case in enumerate(CASES)
    ]
    rows += [
        line("close", case, [score("faithfulness", 0.7 + (i % 4) * 0.1 - (0.05, -0.04)[i % 2])])
        for i, case in enumerate(CASES)
    ]
    report = report_of(tmp_path, rows)
    (headline,) = report["headline"]
    assert headline["system"] == "top"
    assert headline["beats"] == ["weak", "weaker"]
    assert headline["not_clearly"] == ["close"]
    assert headline["clear"] is False
    assert headline["text"].startswith(
        "top leads on faithfulness: clearly better than weak by +0.400 ["
    )
    assert "and weaker by +0.450 [" in headline["text"]
    assert "not clearly better than close: +0.005 [" in headline["text"]
    assert "no system is clearly best" not in headline["text"]
    part = section(report, "faithfulness")
    (lead,) = [i for i in part["insights"] if i["kind"] == "no_clear_best"]
    assert lead["beats"] == ["weak", "weaker"] and "clearly ahead of weak, weaker" in lead["text"]
    page = render_page(report)
    assert "clearly better than weak" in page


def test_a_clear_best_over_every_other_system_says_so(tmp_path: Path) -> None:
    lift = {"top": 0.40, "mid": 0.2, "low": 0.0}
    rows = [
        line(system, case, [score("faithfulness", 0.3 + (i % 4) * 0.1 + up)])
        for system, up in lift.items()
        for i, case in enumerate(CASES)
    ]
    (headline,) = report_of(tmp_path, rows)["headline"]
    assert headline["clear"] is True and headline["not_clearly"] == []
    assert headline["beats"] == ["mid", "low"]
    assert headline["text"].startswith(
        "top is better than mid by +0.200 [+0.200, +0.200] and low by +0.400 [+0.400, +0.400] "
        "on faithfulness"
    )


def test_skipping_cases_costs_a_classifier_precision(tmp_path: Path) -> None:
    """ "honest" answers all eight cases and gets one hard case wrong; "skipper" leaves both hard
    cases unanswered. Unanswered cases are wrong predictions, so the skipper's precision is not
    the perfect one of a system that only answered what it knew."""
    expected = {"e1": "yes", "e2": "yes", "e3": "yes", "h1": "yes",
                "e4": "no", "e5": "no", "e6": "no", "h2": "no"}  # fmt: skip
    predicted = {
        "honest": {**expected, "h1": "no"},
        "skipper": {c: label for c, label in expected.items() if not c.startswith("h")},
    }
    rows = []
    for system, answers in predicted.items():
        for case, truth in expected.items():
            if case not in answers:
                rows.append(unanswered_line(system, case, ["classification"]))
                continue
            guess = answers[case]
            details = {"predicted": guess, "expected": truth}
            verdict = score("classification", float(guess == truth), 0.5, details=details)
            rows.append(line(system, case, [verdict]))
    (board,) = report_of(tmp_path, rows)["classification"]
    by_system = {e["system"]: e for e in board["systems"]}
    honest, skipper = by_system["honest"], by_system["skipper"]
    assert (honest["accuracy"], skipper["accuracy"]) == (0.875, 0.75)
    # As if the skipper had answered the other class on each case it skipped.
    assert skipper["macro"] == {"precision": 0.75, "recall": 0.75, "f1": 0.75}
    assert honest["macro"]["precision"] == 0.9
    assert skipper["macro"]["precision"] < honest["macro"]["precision"]
    assert skipper["micro"]["precision"] == skipper["accuracy"]
    # Its own column still says which cases went unanswered.
    assert skipper["labels"] == ["no", "yes"] and skipper["no_answer"] == [1, 1]
    assert skipper["unanswered"] == 2
    assert [e["system"] for e in board["systems"]] == ["honest", "skipper"]
