"""The summary: counts, means and pass rates per score name, by hand; the table; progress."""

from __future__ import annotations

import io
import re

import pytest

from ragtrace._engine.outcomes import Outcome, Skip
from ragtrace._model import Score
from ragtrace._offline.progress import Progress
from ragtrace._offline.summary import Summary, markdown_table


def score(name: str, value: float | None, passed: bool | None = None, **kw: object) -> Score:
    return Score(name, value, passed=passed, threshold=kw.pop("threshold", 0.5), **kw)  # type: ignore[arg-type]


def test_counts_by_hand() -> None:
    s = Summary(["a", "multi", "never"])
    s.add(Outcome((("a", score("a", 0.9, True)), ("multi", score("multi.x", 0.2, False))), ()))
    s.add(Outcome((("a", score("a", 0.4, False)), ("multi", score("multi.x", 0.6, True))), ()))
    s.add(
        Outcome(
            (("a", score("a", None, error="boom")), ("multi", score("multi", None, error="x"))),
            (Skip("never", ("chunks",)),),
        )
    )
    s.add(Outcome((("a", score("a", 0.5, None, threshold=None)),), (Skip("multi", ("query",)),
                  Skip("never", ("chunks",)))))  # fmt: skip
    s.add(Outcome((("a", score("a", None)),), (Skip("never", ("chunks",)),)))
    rows = {r["name"]: r for r in s.rows()}
    assert list(rows) == ["a", "multi.x", "multi", "never"]
    assert rows["a"] == {
        "system": "default",
        "name": "a",
        "evaluator": "a",
        "count": 3,  # 0.9, 0.4, 0.5 (the error and the value-less score not counted)
        "unanswered": 0,
        "n": 3,
        "mean": pytest.approx((0.9 + 0.4 + 0.5) / 3),
        "answered_mean": pytest.approx((0.9 + 0.4 + 0.5) / 3),
        "passed": 1,
        "pass_rate": 0.5,  # 1 of the 2 with a verdict
        "thresholds": [0.5],
        "errors": 1,
        "skipped": 0,
        "no_value": 1,
    }
    assert rows["multi.x"]["count"] == 2
    assert rows["multi.x"]["mean"] == pytest.approx(0.4)
    assert (rows["multi.x"]["pass_rate"], rows["multi.x"]["errors"]) == (0.5, 0)
    assert (rows["multi"]["count"], rows["multi"]["mean"], rows["multi"]["errors"]) == (0, None, 1)
    assert rows["multi.x"]["skipped"] == rows["multi"]["skipped"] == 1
    assert rows["never"] == {
        "system": "default", "name": "never", "evaluator": "never", "count": 0, "unanswered": 0,
        "n": 0, "mean": None, "answered_mean": None, "passed": 0, "pass_rate": None,
        "thresholds": [], "errors": 0, "skipped": 3, "no_value": 0,
    }  # fmt: skip
    assert s.errors == 2
    assert s.input.records == 5
    assert s.to_json(duration_s=1.5)["duration_s"] == 1.5
    assert s.to_json()["input"] == {
        "lines": 0, "records": 5, "bad_lines": 0, "duplicate_ids": 0, "blank_lines": 0
    }  # fmt: skip


def test_unanswered_cases_count_as_failures_as_the_report_counts_them() -> None:
    """A system that skips the hard questions does not look best: its unanswered cases are
    failures at the worst value (0 here, 1 for lower-is-better), as ``ragtrace report`` counts
    them by default; a skip for what the test case lacks is not the system's doing."""
    s = Summary(["a", "low"])
    for value in (0.9, 0.9, 0.6, 0.6):
        s.add(Outcome((("a", score("a", value, value >= 0.75)),), ()), "careful")
    for value in (0.95, 0.95):
        s.add(Outcome((("a", score("a", value, True)),), ()), "skipper")
    for _ in range(2):  # timed out: the record's error, every evaluator skipped
        skips = (Skip("a", ("response",)), Skip("low", ("chunks", "response")))
        s.add(Outcome((), skips), "skipper", error="TimeoutError: no answer in 30 s")
    s.add(Outcome((("low", score("low", 0.2, True, direction="lower_is_better")),), ()), "skipper")
    s.add(Outcome((), (Skip("a", ("reference",)),)), "skipper")  # the case lacks a reference
    rows = {(r["system"], r["name"]): r for r in s.rows()}
    careful, skipper = rows["careful", "a"], rows["skipper", "a"]
    assert (careful["n"], careful["mean"], careful["pass_rate"]) == (4, pytest.approx(0.75), 0.5)
    assert (skipper["count"], skipper["unanswered"], skipper["n"], skipper["skipped"]) == (
        2, 2, 4, 1
    )  # fmt: skip
    assert skipper["mean"] == pytest.approx(0.95 / 2) and skipper["pass_rate"] == 0.5
    assert skipper["answered_mean"] == pytest.approx(0.95)
    low = rows["skipper", "low"]
    assert (low["n"], low["mean"], low["pass_rate"]) == (3, pytest.approx(2.2 / 3), 1 / 3)
    table = s.table()
    assert "| skipper | a     | a         | 4 |          2 | 0.475 |     50.0% |" in table


def test_table() -> None:
    s = Summary(["a"])
    s.add(Outcome((("a", score("a", 0.25, False)),), ()))
    s.add(Outcome((("a", score("a", 1.0, True)),), ()))
    assert s.table() == (
        "| score | evaluator | n | unanswered |  mean | pass rate | threshold | errors "
        "| skipped |\n"
        "|-------|-----------|--:|-----------:|------:|----------:|----------:|-------:"
        "|--------:|\n"
        "| a     | a         | 2 |          0 | 0.625 |     50.0% |       0.5 |      0 "
        "|       0 |"
    )


def test_markdown_table_keeps_text_columns_left() -> None:
    assert markdown_table(("k", "v"), [("x", "abc"), ("yy", "-")]) == (
        "| k  | v   |\n|----|-----|\n| x  | abc |\n| yy | -   |"
    )


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_plain_lines_and_bar() -> None:
    plain = io.StringIO()
    p = Progress(plain, 10, every_s=0)
    p.update(4, 3)
    p.note("something happened")
    p.close(10, 9)
    lines = plain.getvalue().splitlines()
    assert [re.sub(r", [\d,.]+ rec/s$", "", ln) for ln in lines] == [
        "ragtrace eval: 4/10 lines, 3 records",
        "something happened",
        "ragtrace eval: 10/10 lines, 9 records",
    ]
    tty = Terminal()
    bar = Progress(tty, 10)
    bar.close(5, 5)
    out = tty.getvalue()
    assert out.startswith("\rragtrace eval [##########..........]  50%  5/10 lines  ")
    assert out.endswith("\x1b[K\n")
    quiet = io.StringIO()
    off = Progress(quiet, None, every_s=0, enabled=False)
    off.update(1, 1)
    off.close(1, 1)
    assert quiet.getvalue() == ""
