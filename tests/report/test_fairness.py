"""Fair comparisons: a system that skips cases never ranks higher for it.

Hand-built scores files where one system leaves the hardest cases unanswered (it timed out):
the leaderboard, the "best system" insight, the hardest case, the heatmap and the counts of
unanswered cases, in both treatments (``fail``: an unanswered case is a failure; ``paired``:
left out for every system).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragtrace._report.html import render_page
from tests.report.lines import line, report_of, score, section, unanswered_line

CASES = [f"q{i:02d}" for i in range(30)]
# The retrieval is the same for every system, so a retrieval score is the same for all: only a
# system's skipping could set them apart. The three hardest cases score lowest.
PRECISION = {case: 0.1 if i < 3 else 0.6 + (i % 5) * 0.08 for i, case in enumerate(CASES)}
SCORE = "context_relevance.precision"


def retrieval_rows() -> list[dict[str, Any]]:
    rows = []
    for system in ("steady", "careful", "skipper"):
        for case in CASES:
            if system == "skipper" and PRECISION[case] < 0.5:
                rows.append(unanswered_line(system, case, ["context_relevance"]))
            else:
                rows.append(line(system, case, [score(SCORE, PRECISION[case], 0.5)]))
    return rows


def test_skipping_the_hardest_cases_ranks_last_when_they_count_as_failures(
    tmp_path: Path,
) -> None:
    report = report_of(tmp_path, retrieval_rows())
    part = section(report, SCORE)
    board = {e["system"]: e for e in part["leaderboard"]}
    # Over its own answers the skipper looks best (what the report used to rank on) ...
    assert board["skipper"]["own_mean"] > board["steady"]["own_mean"]
    # ... but every system is taken over the same 30 cases, an unanswered one scoring 0.
    assert part["basis"] == {
        "mode": "fail", "shared": True, "cases": 30, "left_out": 0, "worst": 0.0, "note": None,
    }  # fmt: skip
    assert {e["n"] for e in part["leaderboard"]} == {30}
    assert [e["system"] for e in part["leaderboard"]] == ["careful", "steady", "skipper"]
    assert [e["rank"] for e in part["leaderboard"]] == [1, 1, 3]  # the two others tie
    assert board["skipper"]["mean"] < board["steady"]["mean"] == board["careful"]["mean"]
    assert (board["skipper"]["unanswered"], board["steady"]["unanswered"]) == (3, 0)
    assert board["skipper"]["pass_rate"] == 0.9 and board["steady"]["pass_rate"] == 0.9
    # "Best" is named only when clear: the two that answered everything are identical.
    kinds = [i["kind"] for i in part["insights"]]
    assert "best_system" not in kinds and "no_clear_best" in kinds
    (tied,) = [c for c in part["comparisons"] if {c["system"], c["vs"]} == {"careful", "steady"}]
    assert (tied["diff"], tied["low"], tied["high"], tied["clear"]) == (0.0, 0.0, 0.0, False)
    # The unanswered cases are counted per system in the JSON and the summary ...
    assert report["answers"]["skipper"]["unanswered"] == 3
    assert report["answers"]["skipper"]["reasons"] == [
        {"error": "TimeoutError: no answer in 30 s", "count": 3}
    ]
    assert report["summary"]["unanswered"] == 3
    least = [i for i in report["insights"] if i["kind"] == "least_reliable"]
    assert [i["system"] for i in least] == ["skipper"]
    # ... and the hardest case is one the skipper dodged, marked unanswered in the heatmap.
    hardest = next(i for i in part["insights"] if i["kind"] == "hardest_case")
    assert hardest["case"] in {"q00", "q01", "q02"} and hardest["failing"] == 3
    top = part["heatmap"]["cases"][:3]
    assert {c["case"] for c in top} == {"q00", "q01", "q02"}
    assert all(c["unanswered"] == {"skipper": "TimeoutError: no answer in 30 s"} for c in top)


def test_skipping_the_hardest_cases_gains_nothing_when_compared_on_answered_cases(
    tmp_path: Path,
) -> None:
    report = report_of(tmp_path, retrieval_rows(), unanswered="paired")
    part = section(report, SCORE)
    assert part["basis"]["mode"] == "paired" and part["basis"]["cases"] == 27
    assert part["basis"]["left_out"] == 3
    board = part["leaderboard"]
    # The 27 cases every system answered: all three are equal; the skipper comes last of the
    # three equals and never ranks above one that answered everything.
    assert {e["n"] for e in board} == {27} and len({e["mean"] for e in board}) == 1
    assert [e["system"] for e in board] == ["careful", "steady", "skipper"]
    assert [e["rank"] for e in board] == [1, 1, 1]
    assert [e["unanswered"] for e in board] == [0, 0, 3]
    assert "best_system" not in [i["kind"] for i in part["insights"]]
    # Every difference is paired over the same 27 cases and none is clear.
    assert all(c["paired"] and c["n"] == 27 and not c["clear"] for c in part["comparisons"])
    page = render_page(report)
    assert "cases a system left unanswered are left out for every system" in page


def test_a_clearly_better_system_is_named_best(tmp_path: Path) -> None:
    rows = [
        line(system, case, [score("faithfulness", value + (0.3 if system == "good" else 0.0))])
        for system in ("good", "plain")
        for case, value in zip(CASES, [0.2, 0.4, 0.5, 0.6] * 8, strict=False)
    ]
    part = section(report_of(tmp_path, rows), "faithfulness")
    (best,) = [i for i in part["insights"] if i["kind"] == "best_system"]
    assert best["system"] == "good" and "clearly ahead of plain" in best["text"]


def test_unanswered_cases_show_in_the_overview_leaderboard_and_heatmap(tmp_path: Path) -> None:
    page = render_page(report_of(tmp_path, retrieval_rows()))
    assert page.count('class="cell unanswered"') == 3
    assert '<td class="num unanswered some">3</td>' in page  # leaderboard
    assert "3 of 30" in page  # the overview's unanswered row
    assert "not answered (TimeoutError: no answer in 30 s)" in page


def test_a_question_without_a_reference_is_no_failure_of_the_system(tmp_path: Path) -> None:
    """A case skipped for lack of a reference (the test set's gap, not the system's) is not
    counted against the system that could not answer it."""
    rows = [line("a", c, [score("answer_similarity", 0.8)]) for c in ("q1", "q2")]
    gap = unanswered_line("b", "q3", ["answer_similarity"])
    gap["skipped"] = [{"evaluator": "answer_similarity", "missing": ["reference", "response"]}]
    rows += [line("b", c, [score("answer_similarity", 0.8)]) for c in ("q1", "q2")] + [gap]
    part = section(report_of(tmp_path, rows), "answer_similarity")
    assert {e["system"]: e["unanswered"] for e in part["leaderboard"]} == {"a": 0, "b": 0}
    assert part["basis"]["cases"] == 2


@pytest.mark.parametrize("mode", ["fail", "paired"])
def test_an_unbounded_score_compares_means_on_answered_cases(tmp_path: Path, mode: str) -> None:
    """Perplexity has no worst value: its means stay over the cases every system answered, and
    in ``fail`` the pass rate still counts the unanswered case as failed."""
    rows = [
        line(s, c, [score("perplexity", v, 250.0, "lower_is_better")])
        for s, c, v in [("a", "q1", 40.0), ("a", "q2", 60.0), ("b", "q1", 50.0)]
    ] + [unanswered_line("b", "q2", ["perplexity"])]
    part = section(report_of(tmp_path, rows, unanswered=mode), "perplexity")
    board = {e["system"]: e for e in part["leaderboard"]}
    assert (board["a"]["mean"], board["b"]["mean"]) == (40.0, 50.0)
    assert part["basis"]["worst"] is None
    if mode == "fail":
        assert part["basis"]["note"] and board["b"]["pass_rate"] == 0.5
    else:
        assert part["basis"]["note"] is None and board["b"]["pass_rate"] == 1.0
