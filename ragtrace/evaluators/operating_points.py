"""Named operating points: thresholds chosen for a measured false-alarm and detection rate.

An alarm is only as useful as its false alarms are rare. Each evaluator of the default online
suite offers its thresholds as named operating points, each chosen on the tuning part of public
labelled data for two numbers: the share of normal answers it fails (false alarms) and the share
of bad answers it catches (detection)::

    create("looping", threshold="lenient")      # fewer alarms, fewer loops caught
    create("groundedness", threshold="strict")  # more caught, more false alarms
    create("groundedness", threshold=0.4)       # a number, as before (a custom point)

- ``"default"``: the shipped thresholds; at most 5% of the normal answers of every data set
  measured fail (chosen at about 3% on the tuning part, for a margin).
- ``"strict"``: catches more, at up to about 10% false alarms.
- ``"lenient"``: about 1% false alarms or fewer, for pages that must never cry wolf.

An evaluator's ``operating_points`` maps each name to its thresholds, by score name (an
evaluator with several scores sets each). What each point measured (false alarms per data set,
detection per kind of bad answer, on the tuning and on the locked part) is read from
``data/alarm_rates.json``, which ``benchmarks/alarms.py --record`` writes; ``rates(name)`` gives
it, ``describe(name)`` a few lines of it for ``ragtrace eval --list`` and the docs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

POINT_NAMES = ("strict", "default", "lenient")
DEFAULT_POINT = "default"
RATES_FILE = Path(__file__).with_name("data") / "alarm_rates.json"
MEASURE_COMMAND = "python benchmarks/alarms.py --part locked"

Thresholds = Mapping[str, "float | None"]

_lock = threading.Lock()
_rates: dict[str, Any] | None = None


def choose(owner: str, points: Mapping[str, Thresholds], choice: str) -> Thresholds:
    """The thresholds of operating point ``choice`` of evaluator ``owner``.

    Raises:
        ValueError: ``owner`` has no named points, or none called ``choice`` (the message lists
            the names it has).
    """
    if not points:
        raise ValueError(
            f"{owner}: threshold={choice!r}: this evaluator has no named operating points; "
            "pass a number"
        )
    if choice not in points:
        raise ValueError(
            f"{owner}: unknown operating point {choice!r}; use one of "
            f"{', '.join(repr(n) for n in points)} or a number"
        )
    return points[choice]


def all_rates() -> dict[str, Any]:
    """Every evaluator's measured rates (``data/alarm_rates.json``), read once."""
    global _rates
    with _lock:
        if _rates is None:
            try:
                _rates = json.loads(RATES_FILE.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                _rates = {}
        return _rates


def rates(evaluator: str) -> dict[str, Any]:
    """What each operating point of ``evaluator`` measured (empty when nothing was)."""
    found = all_rates().get("evaluators", {}).get(evaluator)
    return dict(found) if isinstance(found, dict) else {}


def describe(evaluator: str) -> list[str]:
    """Lines saying each operating point's thresholds and measured rates, locked part first."""
    measured = rates(evaluator)
    lines = []
    for point, info in measured.get("points", {}).items():
        thresholds = ", ".join(
            f"{score}={'off' if t is None else t}"
            for score, t in info.get("thresholds", {}).items()
        )
        lines.append(f"{point}: {thresholds}")
        for part in ("locked", "tuning"):
            figures = info.get(part)
            if not figures:
                continue
            for score, cell in figures.items():
                fa = _percent(cell.get("false_alarms"))
                det = _percent(cell.get("detection"))
                lines.append(
                    f"    {part:6} {score}: fails {fa} of normal answers (worst data set), "
                    f"catches {det} of bad ones (worst kind)"
                )
    if lines:
        lines.append(f"    measured by: {all_rates().get('command', MEASURE_COMMAND)}")
    return lines


def _percent(value: object) -> str:
    return "-" if not isinstance(value, int | float) else f"{value:.1%}"
