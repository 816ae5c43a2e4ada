"""The operating points the dashboards draw, read from the rules that define them.

A panel's levels must say what the alerts say, not a number someone typed twice. Two kinds:

* A level an alert compares with a number (``RagtraceQueueBacklogGrowing``: ``... > 1000``) is a
  panel threshold: ``alert_bound(name)`` reads the bound of the alert's condition (the number its
  first ``<``/``>`` comparison is against) from ``grafana/prometheus/ragtrace-alerts.rules.yml``,
  so editing the rule moves the panel on the next ``python -m grafana.build_dashboards``.
* A level the rules keep in a recorded series (``ragtrace:quality_evidence_threshold``,
  ``evaluator:ragtrace_quality_floor:pass_ratio``, ``ragtrace:judge_budget_usd:1d``) is drawn by
  querying that series, so the line moves with the rules Prometheus loaded. ``recorded_constant``
  reads such a constant's shipped value, for the panels' descriptions; ``watched_evaluators``
  the evaluator matcher of an alert, so a panel draws only the scores that alert watches.

Stdlib only (the rules files' layout is fixed: each ``- alert:`` and ``- record:`` has an
``expr:`` right after it); ``tests/grafana`` checks every panel level against the rules parsed
as YAML.
"""

from __future__ import annotations

import re
from pathlib import Path

RULES_DIR = Path(__file__).resolve().parent / "prometheus"
RULES = RULES_DIR / "ragtrace-alerts.rules.yml"
RECORDING_RULES = RULES_DIR / "ragtrace-recording.rules.yml"
_COMPARISON = re.compile(r"(?<![=!<>~])([<>]=?)\s*(\d+(?:\.\d+)?)\b")
_EVALUATOR_MATCHER = re.compile(r'evaluator\s*(!~|=~|!=|=)\s*"((?:[^"\\]|\\.)*)"')


def alert_expr(name: str, rules: Path = RULES) -> str:
    """The PromQL condition of the alert ``name``.

    Raises:
        KeyError: No alert of that name.
    """
    text = rules.read_text(encoding="utf-8")
    found = re.search(
        rf"^\s*- alert: {re.escape(name)}\n\s*expr: \|\n(.*?)(?=^\s*(?:for|labels):)",
        text,
        re.M | re.S,
    )
    if found is None:
        raise KeyError(f"no alert {name!r} in {rules}")
    return found.group(1)


def alert_bound(name: str, rules: Path = RULES) -> float:
    """The number the alert's condition compares with (``... > 1000``: 1000).

    Raises:
        KeyError: No alert of that name.
        ValueError: Its condition compares with no number.
    """
    expr = alert_expr(name, rules)
    for match in _COMPARISON.finditer(re.sub(r'"[^"]*"', '""', expr)):
        return float(match.group(2))
    raise ValueError(f"alert {name!r} compares with no number: {expr.strip()!r}")


def watched_evaluators(name: str, rules: Path = RULES) -> str:
    """The alert's evaluator matcher as PromQL (``evaluator!~"(pii|...).*"``), or ``""`` when
    its condition selects every evaluator.

    Raises:
        KeyError: No alert of that name.
    """
    found = _EVALUATOR_MATCHER.search(alert_expr(name, rules))
    return "" if found is None else f'evaluator{found.group(1)}"{found.group(2)}"'


def recorded_constant(name: str, rules: Path = RECORDING_RULES) -> float:
    """The value of a recorded constant (``- record: name`` with ``expr: vector(5)``: 5).

    Raises:
        KeyError: No recorded constant of that name.
    """
    text = rules.read_text(encoding="utf-8")
    found = re.search(
        rf"^\s*- record: {re.escape(name)}\n\s*expr: vector\((\d+(?:\.\d+)?)\)\s*$",
        text,
        re.M,
    )
    if found is None:
        raise KeyError(f"no recorded constant {name!r} in {rules}")
    return float(found.group(1))
