"""``ragtrace alerts backtest`` with a real promtool: the shipped rules page on a bad hour and
stay silent on good ones, a tiny rule of our own fires exactly when it should, and bad input or
bad rules stop the command with one line.

A missing promtool skips these tests, and fails them under ``CI=true`` (``require_binary``).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from ragtrace._cli import main
from tests.components import require_binary

T0 = 1_700_000_040  # a multiple of 60: at --step 60 the first step is the first verdict's time
HOUR = 3600
SWITCH = 3 * HOUR  # the bad release, after 3 hours of good answers
GROUNDING = "groundedness"
PASS_RATE = "answer_relevance"
STEP = 65  # the default --step
QUALITY_ALERTS = {"RagtraceQualityDrop", "RagtraceQualityBelowFloor"}


def write_lines(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    return path


def traffic(hours: int, bad_from: int | None, seed: int = 7) -> list[dict[str, Any]]:
    """1 verdict a second per score for ``hours``: 97% good answers, 30% bad from ``bad_from``
    seconds on; times spread within each second."""
    rng = random.Random(seed)
    rows = []
    for second in range(hours * HOUR):
        bad_share = 0.3 if bad_from is not None and second >= bad_from else 0.03
        for evaluator in (GROUNDING, PASS_RATE):
            bad = rng.random() < bad_share
            value = rng.uniform(0.0, 0.4) if bad else rng.uniform(0.6, 1.0)
            time = T0 + second + rng.random()
            rows.append({"time": time, "app": "shop", "evaluator": evaluator, "value": value,
                         "passed": not bad})  # fmt: skip
    return rows


def backtest(
    verdicts: Path, out: Path, capsys: pytest.CaptureFixture[str], *args: str
) -> dict[str, Any]:
    """``ragtrace alerts backtest VERDICTS --json OUT ARGS`` (with the promtool found on PATH);
    the JSON it wrote."""
    promtool = require_binary("promtool")
    status = main(["alerts", "backtest", str(verdicts), "--json", str(out), "--promtool",
                   promtool, "--quiet", *args])  # fmt: skip
    assert status == 0, capsys.readouterr().err
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


def refused(argv: list[str], capsys: pytest.CaptureFixture[str], status: int = 2) -> str:
    """Run the command, expect ``status`` and exactly one line on stderr; that line."""
    assert main(argv) == status
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("ragtrace alerts backtest: ")
    return lines[0]


@pytest.fixture(scope="module")
def good_then_bad(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return traffic(4, bad_from=SWITCH)


@pytest.fixture(scope="module")
def shipped_result(
    good_then_bad: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The shipped rules over 3 good hours then 1 bad one, in time order."""
    tmp = tmp_path_factory.mktemp("shipped")
    rows = sorted(good_then_bad, key=lambda r: r["time"])
    verdicts = write_lines(tmp / "verdicts.jsonl", rows)
    promtool = require_binary("promtool")
    out = tmp / "alerts.json"
    assert main(["alerts", "backtest", str(verdicts), "--json", str(out), "--promtool", promtool,
                 "--quiet"]) == 0  # fmt: skip
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


@pytest.mark.integration
def test_the_shipped_quality_alerts_page_within_30_minutes_of_a_bad_release(
    shipped_result: dict[str, Any],
) -> None:
    """3 good hours make the baseline; the bad hour drops under it, for both scores."""
    result = shipped_result
    start = T0 // STEP * STEP  # the first verdict's time, rounded down to the default step
    assert result["evaluated_from"] == start
    assert result["evaluated_to"] == start + (T0 + 4 * HOUR - 1 - start) // STEP * STEP
    assert result["step_s"] == STEP
    switch = T0 + SWITCH
    fired = {(a["alertname"], a["labels"]["evaluator"]): a for a in result["alerts"]}
    for alert in result["alerts"]:
        assert alert["alertname"] in QUALITY_ALERTS, alert
        assert alert["pending_at"] > switch, alert  # nothing in the good hours
        assert alert["labels"]["app"] == "shop"
        assert alert["labels"]["component"] == "quality"
        assert alert["labels"]["severity"] == "critical"
        assert alert["resolved_at"] is None  # still bad at the end
    for evaluator in (GROUNDING, PASS_RATE):
        alert = fired[("RagtraceQualityDrop", evaluator)]
        # `for: 5m` after going pending (5 whole steps of 65 s); paged within 30 minutes
        assert alert["firing_at"] == alert["pending_at"] + 5 * STEP
        assert switch + 5 * 60 < alert["firing_at"] <= switch + 30 * 60, alert


@pytest.mark.integration
def test_an_app_bad_from_the_start_pages_on_the_floor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No good history, so no baseline to drop under: the floor pages, within 15 minutes."""
    verdicts = write_lines(tmp_path / "bad.jsonl", traffic(2, bad_from=0))
    result = backtest(verdicts, tmp_path / "alerts.json", capsys)
    fired = {(a["alertname"], a["labels"]["evaluator"]): a for a in result["alerts"]}
    assert set(fired) == {("RagtraceQualityBelowFloor", GROUNDING),
                          ("RagtraceQualityBelowFloor", PASS_RATE)}, fired  # fmt: skip
    for alert in fired.values():
        assert alert["labels"]["severity"] == "critical" and alert["resolved_at"] is None
        assert alert["firing_at"] is not None and alert["firing_at"] <= T0 + 15 * 60, alert


@pytest.mark.integration
def test_good_answers_alone_page_nobody(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verdicts = write_lines(tmp_path / "good.jsonl", traffic(4, bad_from=None))
    result = backtest(verdicts, tmp_path / "alerts.json", capsys)
    assert result["alerts"] == []
    assert result["verdicts"]["read"] == 4 * HOUR * 2


@pytest.mark.integration
def test_unsorted_verdicts_give_the_same_episodes(
    good_then_bad: list[dict[str, Any]],
    shipped_result: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shuffled = list(good_then_bad)
    random.Random(3).shuffle(shuffled)
    verdicts = write_lines(tmp_path / "shuffled.jsonl", shuffled)
    assert backtest(verdicts, tmp_path / "alerts.json", capsys) == shipped_result
    assert shipped_result["alerts"]  # the comparison compared something


TINY_RULES = """\
groups:
  - name: tiny
    rules:
      - alert: AnyFail
        expr: increase(ragtrace_evaluations_total{outcome="fail"}[5m]) > 0
        for: 2m
        labels:
          severity: warning
      - alert: AnyFailNow
        expr: increase(ragtrace_evaluations_total{outcome="fail"}[5m]) > 0
      - alert: AnyFailLong
        expr: increase(ragtrace_evaluations_total{outcome="fail"}[5m]) > 0
        for: 10m
"""
ODD_NAME = 'tone "v2" \\ ü\x01\x7f\x85\u2028\u00a0😀,}'


@pytest.mark.integration
def test_a_rule_of_our_own_fires_exactly_when_it_should(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A verdict every 10 s for an hour; 7 fail, from 1200 s to 1260 s. The fail counter
    appears at the step of 1200 s (1), reads 7 from 1260 s: ``increase`` needs two samples, so
    the alerts go pending at 1260 s; with ``for: 2m`` fire at 1380 s; the 5-minute window
    (closed at both ends) holds the 1 of 1200 s until 1500 s, so they resolve at 1560 s.
    ``for: 10m`` never fires; no ``for`` fires at once."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "tiny.rules.yml").write_text(TINY_RULES)
    rows = [
        {"time": T0 + s, "app": "shop", "evaluator": ODD_NAME,
         "value": 0.2 if 1200 <= s <= 1260 else 0.9, "passed": not 1200 <= s <= 1260}
        for s in range(0, HOUR + 1, 10)
    ]  # fmt: skip
    verdicts = write_lines(tmp_path / "verdicts.jsonl", rows)
    result = backtest(verdicts, tmp_path / "alerts.json", capsys, "--rules", str(rules),
                      "--step", "60")  # fmt: skip
    assert (result["evaluated_from"], result["evaluated_to"]) == (T0, T0 + HOUR)
    assert result["rule_files"] == [str(rules / "tiny.rules.yml")]
    labels = {"app": "shop", "evaluator": ODD_NAME, "instance": "backtest", "job": "ragtrace",
              "outcome": "fail"}  # fmt: skip
    assert result["alerts"] == [
        {"alertname": "AnyFail", "labels": {**labels, "severity": "warning"},
         "pending_at": T0 + 1260, "firing_at": T0 + 1380, "resolved_at": T0 + 1560},
        {"alertname": "AnyFailLong", "labels": labels,
         "pending_at": T0 + 1260, "firing_at": None, "resolved_at": T0 + 1560},
        {"alertname": "AnyFailNow", "labels": labels,
         "pending_at": T0 + 1260, "firing_at": T0 + 1260, "resolved_at": T0 + 1560},
    ]  # fmt: skip


@pytest.mark.integration
def test_a_longer_step_moves_the_times_to_its_grid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """At --step 120, verdicts every 10 s from 60 s, failing from 1260 s to 1560 s: the fail
    counter appears at 1320 s (7), grows at 1440 s (pending: two samples) and 1560 s; the
    5-minute window holds only the last value from 1800 s."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "tiny.rules.yml").write_text(TINY_RULES)
    rows = [{"time": T0 + 60 + s, "app": "a", "evaluator": "e", "value": None,
             "passed": not 1200 <= s <= 1500} for s in range(0, HOUR, 10)]  # fmt: skip
    verdicts = write_lines(tmp_path / "verdicts.jsonl", rows)
    result = backtest(verdicts, tmp_path / "out.json", capsys, "--rules", str(rules),
                      "--step", "120")  # fmt: skip
    start = (T0 + 60) // 120 * 120
    assert start == T0 and result["evaluated_from"] == start and result["step_s"] == 120
    now = next(a for a in result["alerts"] if a["alertname"] == "AnyFailNow")
    assert (now["pending_at"], now["resolved_at"]) == (start + 1440, start + 1800)
    later = next(a for a in result["alerts"] if a["alertname"] == "AnyFail")
    assert later["firing_at"] == start + 1560  # `for: 2m`: one evaluation later


def test_bad_lines_stop_it_with_one_line_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = {"time": T0, "app": "a", "evaluator": "e", "value": 0.5, "passed": True}
    no_value = {k: v for k, v in good.items() if k != "value"}
    cases = {
        "not json": ("not JSON", "{nope"),
        "no value": ("missing 'value'", json.dumps(no_value)),
        "text time": ("'time' must be unix seconds", json.dumps({**good, "time": "today"})),
        "nan value": ("not a number JSON allows", json.dumps(good).replace("0.5", "NaN")),
        "empty app": ("'app' must be a non-empty string", json.dumps({**good, "app": ""})),
        "passed 1": ("'passed' must be true, false or null", json.dumps({**good, "passed": 1})),
    }  # fmt: skip
    for name, (said, line) in cases.items():
        path = tmp_path / "verdicts.jsonl"
        path.write_text(json.dumps(good) + "\n\n" + line + "\n" + json.dumps(good) + "\n")
        message = refused(["alerts", "backtest", str(path)], capsys)
        assert f"{path}:3: " in message and said in message, (name, message)


def test_an_empty_file_and_a_missing_file_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert "no verdicts in" in refused(["alerts", "backtest", str(empty)], capsys)
    missing = tmp_path / "missing.jsonl"
    said = refused(["alerts", "backtest", str(missing)], capsys)
    assert str(missing) in said and "No such file" in said
    no_rules = refused(["alerts", "backtest", str(empty), "--rules", str(tmp_path)], capsys)
    assert f"no rule files (*.rules.yml) in {tmp_path}" in no_rules


def test_a_missing_promtool_is_named_with_how_to_install_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    verdicts = write_lines(tmp_path / "v.jsonl", traffic(1, None)[:10])
    said = refused(["alerts", "backtest", str(verdicts), "--promtool", str(tmp_path / "none")],
                   capsys, status=1)  # fmt: skip
    assert "is not an executable" in said and "apt-get install prometheus" in said


@pytest.mark.integration
def test_a_rule_file_that_does_not_parse_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "ok.rules.yml").write_text(TINY_RULES)
    broken = TINY_RULES.replace("[5m]) > 0\n        for: 2m", "[5m] > 0\n        for: 2m")
    (rules / "broken.rules.yml").write_text(broken.replace("name: tiny", "name: broken"))
    verdicts = write_lines(tmp_path / "v.jsonl", traffic(1, None)[:10])
    said = refused(["alerts", "backtest", str(verdicts), "--rules", str(rules), "--promtool",
                    require_binary("promtool")], capsys)  # fmt: skip
    assert "broken.rules.yml" in said and "parse error" in said and "AnyFail" in said, said


@pytest.mark.integration
def test_a_rule_that_fails_to_evaluate_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "dup.rules.yml").write_text(
        "groups:\n  - name: dup\n    rules:\n      - alert: Twice\n"
        "        expr: label_replace(vector(1), 'x', 'a', '', '') "
        "or label_replace(vector(2), 'y', 'b', '', '')\n"
        "        labels: {x: '1', y: '1'}\n"
    )
    verdicts = write_lines(tmp_path / "v.jsonl", traffic(1, None)[:10])
    said = refused(["alerts", "backtest", str(verdicts), "--rules", str(rules), "--promtool",
                    require_binary("promtool")], capsys)  # fmt: skip
    assert "rule: Twice" in said and "same labelset" in said, said


@pytest.mark.integration
def test_a_range_over_promtools_sample_limit_is_refused_with_the_step_that_would_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """promtool's rule tests load at most 10,000 samples in one query: a 3-hour range of a
    series sampled every second holds 10,801 once 3 hours have passed (a 7-day range sampled
    every minute, as the shipped baselines read, 10,081: hence the default step of 65 s)."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "long.rules.yml").write_text(
        "groups:\n  - name: long\n    rules:\n      - record: app:count:avg3h\n"
        "        expr: avg_over_time(ragtrace_evaluations_total[3h])\n"
    )
    rows = [{"time": T0 + s, "app": "a", "evaluator": "e", "value": None, "passed": True}
            for s in (0, 3 * HOUR)]  # fmt: skip
    verdicts = write_lines(tmp_path / "v.jsonl", rows)
    argv = ["alerts", "backtest", str(verdicts), "--rules", str(rules), "--step", "1",
            "--promtool", require_binary("promtool")]  # fmt: skip
    said = refused(argv, capsys)
    assert "[3h] of app:count:avg3h (long.rules.yml)" in said
    assert "10,801 samples" in said and "use --step 2 or more" in said, said
    result = backtest(verdicts, tmp_path / "out.json", capsys, "--rules", str(rules), "--step", "2")
    assert result["alerts"] == [] and result["step_s"] == 2
