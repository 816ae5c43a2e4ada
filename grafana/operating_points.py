"""The operating points the dashboards draw, read from the alert rules that fire on them.

A panel's thresholds must say what the alerts say: a pass-rate line turns red where
``RagtracePassRateBelowFloor`` fires, not at a number someone typed twice. ``alert_bound(name)``
reads the bound of an alert's condition (the number its first ``<``/``>`` comparison is against)
from ``grafana/prometheus/ragtrace-alerts.rules.yml``, so editing the rule moves the panel on the
next ``python -m grafana.build_dashboards``. Stdlib only (the rules file's layout is fixed: each
``- alert:`` has an ``expr: |`` block); ``tests/grafana`` checks every panel threshold against
the rules parsed as YAML.
"""

from __future__ import annotations

import re
from pathlib import Path

RULES = Path(__file__).resolve().parent / "prometheus" / "ragtrace-alerts.rules.yml"
_COMPARISON = re.compile(r"(?<![=!<>~])([<>]=?)\s*(\d+(?:\.\d+)?)\b")


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
    """The number the alert's condition compares with (``... < 0.85``: 0.85).

    Raises:
        KeyError: No alert of that name.
        ValueError: Its condition compares with no number.
    """
    expr = alert_expr(name, rules)
    for match in _COMPARISON.finditer(re.sub(r'"[^"]*"', '""', expr)):
        return float(match.group(2))
    raise ValueError(f"alert {name!r} compares with no number: {expr.strip()!r}")
