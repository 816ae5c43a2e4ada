"""The time-lapsed rules of ``ragtrace demo --alert-time-scale``: the shipped rule files with
every duration and volume guard divided by the scale, and nothing else changed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from ragtrace.demo._prometheus_stack import time_lapse_note
from ragtrace.demo._time_lapse import (
    format_duration,
    parse_duration,
    scrape_interval_ms,
    time_lapse,
    time_lapse_duration,
    time_lapse_expr,
    write_time_lapsed,
)
from tests.components import promtool
from tests.grafana.artifacts import RULE_FILES

SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
# A token of PromQL as this test reads it: a string, a duration, a number, a word, a character.
TOKEN = re.compile(r"\"(?:[^\"\\]|\\.)*\"|(\d+)(ms|[smhdwy])\b|\d+(?:\.\d+)?(?:e-?\d+)?|[\w:]+|\S")


def seconds(duration: str) -> float:
    return sum(int(n) * SECONDS[u] for n, u in re.findall(r"(\d+)(ms|[smhdwy])", duration))


def tokens(expr: str) -> list[str]:
    return [m[0] for m in TOKEN.finditer(expr)]


def is_duration(token: str) -> bool:
    return re.fullmatch(r"(\d+(ms|[smhdwy]))+", token) is not None


@pytest.mark.parametrize(
    ("text", "scale", "expected"),
    [("15m", 60, "15s"), ("1d", 60, "24m"), ("7d", 60, "168m"), ("5m", 20, "15s"),
     ("1h30m", 90, "1m"), ("15m", 7, "128571ms"), ("0s", 60, "0s"), ("10m", 120, "5s")],
)  # fmt: skip
def test_durations_are_divided_to_the_millisecond(text: str, scale: float, expected: str) -> None:
    assert time_lapse_duration(text, scale) == expected
    assert parse_duration(expected) == round(parse_duration(text) / scale)


def test_duration_parsing_and_formatting() -> None:
    assert parse_duration("1h30m") == 5_400_000
    assert parse_duration("500ms") == 500
    assert format_duration(90_000) == "90s"
    assert format_duration(86_400_000) == "1d"
    with pytest.raises(ValueError, match="not a Prometheus duration"):
        parse_duration("15 minutes")


def test_only_code_is_rewritten_never_strings_and_only_counts_are_guards() -> None:
    expr = (
        'sum(increase(x{e=~"a[15m]|offset 5m"}[15m] offset 1h)) >= 900 '
        "and on (app) sum(rate(y[1h])) > 0.5 "
        "and on (app) sum(increase(z[1h])) / sum(increase(w[1h])) > 0.05 "
        "or max(q) > 1000 unless count_over_time(r[1d:5m]) > 3"
    )
    assert time_lapse_expr(expr, 60) == (
        'sum(increase(x{e=~"a[15m]|offset 5m"}[15s] offset 1m)) >= 15 '
        "and on (app) sum(rate(y[1m])) > 0.5 "
        "and on (app) sum(increase(z[1m])) / sum(increase(w[1m])) > 0.05 "
        "or max(q) > 1000 unless count_over_time(r[24m:5s]) > 3"
    )
    assert time_lapse_expr("a:increase15m >= 50", 60) == "a:increase15m >= 0.833333333333"


@pytest.mark.parametrize("scale", [60.0, 7.0])
def test_the_shipped_rules_time_lapsed_differ_only_in_durations_and_guards(scale: float) -> None:
    for path in RULE_FILES:
        original = yaml.safe_load(path.read_text())
        lapsed = yaml.safe_load(time_lapse(path.read_text(), scale))
        assert [g["name"] for g in lapsed["groups"]] == [g["name"] for g in original["groups"]]
        for group, new_group in zip(original["groups"], lapsed["groups"], strict=True):
            assert set(new_group) == set(group)
            for rule, new in zip(group["rules"], new_group["rules"], strict=True):
                name = rule.get("alert") or rule["record"]
                assert {k: v for k, v in new.items() if k not in ("expr", "for")} == {
                    k: v for k, v in rule.items() if k not in ("expr", "for")
                }, name
                assert ("for" in new) == ("for" in rule), name
                if "for" in rule:
                    assert seconds(new["for"]) == pytest.approx(
                        seconds(rule["for"]) / scale, abs=1e-3
                    )
                old_tokens, new_tokens = tokens(rule["expr"]), tokens(new["expr"])
                assert len(new_tokens) == len(old_tokens), name
                guards = []
                for i, (old, now) in enumerate(zip(old_tokens, new_tokens, strict=True)):
                    if old == now:
                        continue
                    if is_duration(old):
                        assert seconds(now) == pytest.approx(seconds(old) / scale, abs=1e-3)
                    else:  # a volume guard: a count compared with a number
                        assert old_tokens[i - 1] in (">", "=") and float(now) == pytest.approx(
                            float(old) / scale
                        ), (name, old, now)
                        guards.append(old)
                # the quality rules count verdicts against ragtrace:quality_min_verdicts, a
                # number of verdicts the statistic needs whatever the time: never divided
                if group["name"].startswith("ragtrace.quality"):
                    assert guards == [], (name, guards)
                assert all(
                    seconds(old) / scale == pytest.approx(seconds(now), abs=1e-3)
                    for old, now in zip(old_tokens, new_tokens, strict=True)
                    if is_duration(old)
                ), name


@pytest.mark.integration
@pytest.mark.parametrize("scale", [60.0, 7.0, 120.0])
def test_promtool_accepts_the_time_lapsed_rules(scale: float, tmp_path: Path) -> None:
    written = write_time_lapsed(RULE_FILES, scale, tmp_path)
    assert [p.name for p in written] == [p.name for p in RULE_FILES]
    result = promtool("check", "rules", *map(str, written))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(RULE_FILES)


def test_scrape_interval_follows_the_scale() -> None:
    assert scrape_interval_ms(1, 2000) == 2000
    assert scrape_interval_ms(20, 2000) == 2000
    assert scrape_interval_ms(60, 2000) == 1000
    assert scrape_interval_ms(120, 2000) == 500
    assert time_lapse_note(1) == ""
    assert time_lapse_note(60) == (
        ", time-lapsed x60: 15m windows last 15s, `for: 5m` 5s, 7d baselines 168m"
    )
