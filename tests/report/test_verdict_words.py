"""The report's words follow its numbers: "clear" only for an interval that keeps off 0 as
printed, the hardest case and the heatmap on the leaderboard's cases and rule, a headline that
names whom the best system clearly beats, and a classification board where skipping a case
costs precision.

Hand-built scores files in the shared schema (``tests.report.lines``), read by the real loader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtrace._report.build import ReportOptions, build_report
from ragtrace._report.html import render_page
from ragtrace._report.load import load_scores
from tests.report.lines import line, score, unanswered_line, write_lines

CASES = [f"q{i:02d}" for i in range(30)]


def report_of(tmp_path: Path, rows: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    loaded = load_scores([write_lines(tmp_path / "scores.jsonl", rows)])
    return build_report(loaded, ReportOptions(resamples=300, **options))


def section(report: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [s for s in report["scores"] if s["name"] == name]
    return found


def test_an_interval_that_touches_0_as_printed_is_never_clear(tmp_path: Path) -> None:
    """"b" beats "a" by a hair on 28 cases and by 0.3 on two: the lower end of the interval is
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
