"""The shipped Prometheus rules, time-lapsed: the same rules, ``scale`` times faster.

The quality alerts read windows of 15 minutes to a day against the app's own 7 days and
hold for 5 minutes: in real time a demo that goes bad pages after 10 minutes or more.
``ragtrace demo --prometheus --alert-time-scale N`` loads
the shipped rule files rewritten by ``time_lapse(text, N)`` instead: every duration of every
rule divided by N, the volume guards too, nothing else changed::

    time_lapse_duration("15m", 60)    # "15s"
    time_lapse_expr("increase(x[15m]) >= 900", 60)   # "increase(x[15s]) >= 15"

What is rewritten, read from the YAML and the PromQL (never from a second copy of the rules):

- in each expression (outside its string literals), range selectors ``[15m]``, subquery
  ranges and steps ``[1d:5m]`` and ``offset 10m``;
- each rule's ``for`` (and ``keep_firing_for``) and each group's ``interval``;
- volume guards: a comparison ``>= N`` or ``> N`` with a number, in a clause (the text after
  the last ``and``/``or``/``unless``) that counts with ``increase`` (``increase(...)`` or a
  recorded ``...:increase15m``) and divides nothing (a ratio of counts is no count). A guard
  counts over a window N times shorter, so it needs as many verdicts a second as the real one:
  900 in 15 minutes is 15 in 15 s at scale 60.

Names of recorded series keep their real-time suffixes (``:increase15m`` holds 15 s of counts
at scale 60). Rates stay rates: a threshold on a per-second rate or on a ratio is not a count and
stays as shipped. The judge budget (``RagtraceJudgeSpend*``) stays a daily budget: the demo has
no LLM judge.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_UNITS_MS = {"y": 365 * 86_400_000, "w": 7 * 86_400_000, "d": 86_400_000, "h": 3_600_000}
_UNITS_MS |= {"m": 60_000, "s": 1_000, "ms": 1}
_SHOWN_UNITS = ("d", "h", "m", "s", "ms")  # the largest that divides a rewritten duration
DURATION = r"(?:\d+(?:ms|[smhdwy]))+"
_DURATION_PART = re.compile(r"(\d+)(ms|[smhdwy])")
_STRING = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`|#[^\n]*")
_RANGE = re.compile(rf"\[\s*({DURATION})\s*(?::\s*({DURATION})?\s*)?\]")
_OFFSET = re.compile(rf"\boffset\s+-?\s*({DURATION})")
_GUARD = re.compile(r"(?<![=!<>])(>=|>)\s*(\d+(?:\.\d+)?)(?![\w.])")
_SET_OPERATOR = re.compile(r"\b(?:and|or|unless)\b")
_COUNTS = re.compile(r"\bincrease\s*\(|:increase")
DURATION_KEYS = ("for", "keep_firing_for")
"""Keys of a rule whose value is a duration."""


def parse_duration(text: str) -> int:
    """Milliseconds of a Prometheus duration (``90s``, ``1h30m``, ``500ms``).

    Raises:
        ValueError: Not a duration.
    """
    text = text.strip()
    if not re.fullmatch(DURATION, text) and text != "0":
        raise ValueError(f"not a Prometheus duration: {text!r}")
    return sum(int(n) * _UNITS_MS[unit] for n, unit in _DURATION_PART.findall(text))


def format_duration(ms: int) -> str:
    """A Prometheus duration for ``ms`` milliseconds in its largest exact unit (``24m``)."""
    for unit in _SHOWN_UNITS:
        size = _UNITS_MS[unit]
        if ms % size == 0 and ms >= size:
            return f"{ms // size}{unit}"
    return "0s"


def time_lapse_duration(text: str, scale: float) -> str:
    """``text`` divided by ``scale``, to the millisecond (at least 1 ms unless it was 0)."""
    ms = parse_duration(text)
    return format_duration(max(1, round(ms / scale)) if ms else 0)


def _masked(expr: str) -> str:
    """``expr`` with the insides of its string literals and comments blanked (same length)."""
    return _STRING.sub(lambda m: m[0][0] + "_" * (len(m[0]) - 2) + m[0][-1:], expr)


def _guard_number(text: str, scale: float) -> str:
    value = float(text) / scale
    return str(int(value)) if value == int(value) else format(value, ".12g")


def time_lapse_expr(expr: str, scale: float) -> str:
    """A PromQL expression with its ranges, offsets and volume guards divided by ``scale``."""
    masked = _masked(expr)
    edits: list[tuple[int, int, str]] = []
    for match in _RANGE.finditer(masked):
        for group in (1, 2):
            if match[group] is not None:
                edits.append(
                    (match.start(group), match.end(group), time_lapse_duration(match[group], scale))
                )
    for match in _OFFSET.finditer(masked):
        edits.append((match.start(1), match.end(1), time_lapse_duration(match[1], scale)))
    for match in _GUARD.finditer(masked):
        before = masked[: match.start()]
        operators = list(_SET_OPERATOR.finditer(before))
        clause = before[operators[-1].end() :] if operators else before
        if _COUNTS.search(clause) and "/" not in clause:  # a count, not a ratio of counts
            edits.append((match.start(2), match.end(2), _guard_number(match[2], scale)))
    out = expr
    for start, end, text in sorted(edits, reverse=True):
        out = out[:start] + text + out[end:]
    return out


def time_lapse_rules(groups: dict[str, Any], scale: float) -> dict[str, Any]:
    """A parsed rule file (``{"groups": [...]}``) with every duration and guard divided."""
    out: dict[str, Any] = {**groups, "groups": []}
    for group in groups.get("groups") or ():
        new_group = dict(group)
        if "interval" in group:
            new_group["interval"] = time_lapse_duration(str(group["interval"]), scale)
        new_group["rules"] = []
        for rule in group.get("rules") or ():
            new_rule = dict(rule)
            new_rule["expr"] = time_lapse_expr(str(rule["expr"]), scale)
            for key in DURATION_KEYS:
                if key in rule:
                    new_rule[key] = time_lapse_duration(str(rule[key]), scale)
            new_group["rules"].append(new_rule)
        out["groups"].append(new_group)
    return out


def time_lapse(text: str, scale: float) -> str:
    """A rule file's YAML text, time-lapsed by ``scale`` (as YAML, with a header saying so)."""
    import yaml

    rewritten = time_lapse_rules(yaml.safe_load(text) or {}, scale)
    header = (
        f"# Time-lapsed x{scale:g} by ragtrace demo --alert-time-scale: the shipped rules with "
        "every window, `for`, offset and volume guard divided by the scale.\n"
    )
    return header + yaml.safe_dump(rewritten, sort_keys=False, width=100)


def write_time_lapsed(rules: Sequence[Path], scale: float, folder: Path) -> list[Path]:
    """Write each rule file of ``rules``, time-lapsed, into ``folder``; the new paths."""
    written = []
    for path in rules:
        target = folder / path.name
        target.write_text(time_lapse(path.read_text(encoding="utf-8"), scale), encoding="utf-8")
        written.append(target)
    return written


def scrape_interval_ms(scale: float, demo_interval_ms: int) -> int:
    """The scrape and evaluation interval for rules time-lapsed by ``scale``: the minute the
    rules were measured at (evaluated every minute), divided by ``scale``, or the demo's own
    interval when that is shorter; at least 100 ms."""
    return max(100, min(demo_interval_ms, round(60_000 / scale)))
