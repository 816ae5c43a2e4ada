"""Reading promtool's report back (Go-quoted labels, durations, errors), the rule files' groups
and ranges, and alert episodes from changes of state."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragtrace._alerts.backtest import episodes
from ragtrace._alerts.promtool import (
    Change,
    PromtoolError,
    RulesError,
    SampleLimit,
    changes_expr,
    duration_s,
    go_unquote,
    parse_report,
)
from ragtrace._alerts.rules import group_order, ranges, rule_files

EXPR = changes_expr(60)
QUOTED = '"(ALERTS unless ALERTS offset 60s) or -(ALERTS offset 60s unless ALERTS)"'
# promtool 2.42's report of two failing expression tests (the blank line between them too)
REPORT = f"""Unit Testing:  /tmp/x/backtest.test.yml
  FAILED:
    expr: {QUOTED}, time: 4m,
        exp: nil
        got: {{__name__="ALERTS", alertname="A", alertstate="pending", app="x\\"y, z}}"}} 1E+00

    expr: {QUOTED}, time: 1w1d1h,
        exp: nil
        got: {{__name__="ALERTS", alertname="A", alertstate="firing", app="\\x01ü"}} 1E+00, {{alertname="A", alertstate="pending", app="\\x01ü"}} -1E+00
"""  # noqa: E501


def test_the_report_gives_each_change_with_its_time_and_labels() -> None:
    changes = list(parse_report(REPORT.splitlines(keepends=True), EXPR, "/tmp/x/t.yml"))
    later = 8 * 86400 + 3600
    assert changes == [
        Change(240, {"alertname": "A", "alertstate": "pending", "app": 'x"y, z}'}, True),
        Change(later, {"alertname": "A", "alertstate": "firing", "app": "\x01ü"}, True),
        Change(later, {"alertname": "A", "alertstate": "pending", "app": "\x01ü"}, False),
    ]


@pytest.mark.parametrize(
    ("line", "error", "said"),
    [
        ("    rule: Twice, time: 0s, err: vector contains metrics with the same labelset",
         RulesError, "rule: Twice"),
        ("    rule: x:avg7d, time: 166h39m0s, err: query processing would load too many samples "
         "into memory in query execution", SampleLimit, "a longer --step"),
        (f"    expr: {QUOTED}, time: 4m, err: something", PromtoolError, "promtool said"),
        ('    expr: "ALERTS", time: 4m,', PromtoolError, "unknown query"),
        ("panic: runtime error", PromtoolError, "panic"),
    ],
)  # fmt: skip
def test_a_line_it_does_not_expect_stops_it_quoting_the_line(
    line: str, error: type[Exception], said: str
) -> None:
    with pytest.raises(error, match=said.replace("-", r"\-")):
        list(parse_report(["  FAILED:\n", line + "\n"], EXPR, "/tmp/x/t.yml"))


def test_a_sample_it_cannot_read_stops_it() -> None:
    bad = [f"    expr: {QUOTED}, time: 4m,\n", "        got: {alertname=A} 1E+00\n"]
    with pytest.raises(PromtoolError, match="cannot read"):
        list(parse_report(bad, EXPR, "t"))
    odd_value = [f"    expr: {QUOTED}, time: 4m,\n", '        got: {alertname="A"} 2E+00\n']
    with pytest.raises(PromtoolError, match="unexpected sample value"):
        list(parse_report(odd_value, EXPR, "t"))


@pytest.mark.parametrize(
    ("quoted", "text"),
    [
        (r'"plain"', "plain"),
        (r'"a\"b\\c"', 'a"b\\c'),
        (r'"\a\b\f\n\r\t\v"', "\a\b\f\n\r\t\v"),
        (r'"\x01\x7f"', "\x01\x7f"),
        (r'"\u00a0\U0001f600"', "\u00a0\U0001f600"),
        ('"ü😀"', "ü😀"),
        (r'"\303\274"', "ü"),  # octal bytes of UTF-8
    ],
)
def test_go_quoted_values_read_back(quoted: str, text: str) -> None:
    assert go_unquote(quoted) == text


def test_an_escape_go_never_writes_is_refused() -> None:
    for quoted in (r'"\q"', r'"\U00110000"'):
        with pytest.raises(PromtoolError, match="unknown escape"):
            go_unquote(quoted)


@pytest.mark.parametrize(
    ("printed", "seconds"), [("0s", 0), ("4m", 240), ("1h30m", 5400), ("1w1d", 691200),
                             ("166h39m0s", 599940), ("1y", 31536000)]
)  # fmt: skip
def test_durations_promtool_prints(printed: str, seconds: int) -> None:
    assert duration_s(printed) == seconds


@pytest.mark.parametrize("printed", ["", "4", "4x", "1500ms", "m4"])
def test_what_is_not_a_whole_second_duration_is_refused(printed: str) -> None:
    with pytest.raises(PromtoolError):
        duration_s(printed)


def c(at: int, state: str, appeared: bool, name: str = "A", **labels: str) -> Change:
    return Change(at, {"alertname": name, "alertstate": state, **labels}, appeared)


def test_changes_make_episodes() -> None:
    changes = [
        c(60, "pending", True, app="x"),
        c(60, "firing", True, name="B"),  # no `for`: pending and firing at once
        c(180, "pending", False, app="x"),
        c(180, "firing", True, app="x"),
        c(240, "pending", True, app="y"),
        c(300, "firing", False, app="x"),
        c(360, "pending", False, app="y"),  # never fired
        c(420, "pending", True, app="x"),  # a second episode
    ]
    found = [e.as_json() for e in episodes(changes, 1000)]
    assert found == [
        {"alertname": "A", "labels": {"app": "x"}, "pending_at": 1060, "firing_at": 1180,
         "resolved_at": 1300},
        {"alertname": "B", "labels": {}, "pending_at": 1060, "firing_at": 1060,
         "resolved_at": None},
        {"alertname": "A", "labels": {"app": "y"}, "pending_at": 1240, "firing_at": None,
         "resolved_at": 1360},
        {"alertname": "A", "labels": {"app": "x"}, "pending_at": 1420, "firing_at": None,
         "resolved_at": None},
    ]  # fmt: skip


@pytest.mark.parametrize(
    "changes",
    [
        [c(60, "firing", False)],
        [c(60, "pending", True), c(60, "firing", True)],
        [c(60, "pending", True), c(120, "pending", True)],
        [Change(60, {"alertname": "A", "alertstate": "inactive"}, True)],
    ],
)
def test_changes_that_contradict_each_other_are_refused(changes: list[Change]) -> None:
    with pytest.raises(PromtoolError, match="inconsistent"):
        episodes(changes, 0)


def test_recording_groups_come_first_in_file_order(tmp_path: Path) -> None:
    (tmp_path / "a.rules.yml").write_text(
        "groups:\n- name: alerts1\n  rules: [{alert: X, expr: up == 0}]\n"
        "- name: rec1\n  rules: [{record: 'a:b:c', expr: up}]\n"
    )
    (tmp_path / "b.rules.yml").write_text(
        "groups:\n- name: mixed\n  rules: [{record: 'a:b:d', expr: up}, {alert: Y, expr: up}]\n"
        "- name: rec2\n  rules: [{record: 'a:b:e', expr: 'avg_over_time(up[7d:5m])'}]\n"
    )
    files = rule_files(tmp_path)
    assert group_order(files) == ["rec1", "rec2", "alerts1", "mixed"]
    found = [(r.rule, r.text, r.range_ms, r.resolution_ms) for r in ranges(files)]
    assert found == [("a:b:e", "[7d:5m]", 604_800_000, 300_000)]
