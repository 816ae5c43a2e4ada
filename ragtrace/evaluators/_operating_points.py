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
            f"threshold must be a real number, got {choice!r} ({owner} has no named "
            "operating points)"
        )
    if choice not in points:
        raise ValueError(
            f"{owner}: unknown operating point {choice!r}; use one of "
            f"{', '.join(repr(n) for n in points)} or a number"
        )
    return points[choice]


def failed_at(points: Mapping[str, Thresholds], point: str, score: Any) -> bool | None:
    """Whether ``score`` fails at operating point ``point`` of its evaluator (``points``).

    The point's threshold is looked up by the score's name, then by what its details say it
    was judged as (``calibration`` for faithfulness, whose cut applies to
    ``hallucination_probability``; ``task`` for groundedness; ``signal_model`` for
    answer_relevance). None: no verdict (an error, no value, or nothing to judge it by), in
    which case callers keep the score's own ``passed``.
    """
    if getattr(score, "error", None) is not None or point not in points:
        return None
    chosen = points[point]
    details = getattr(score, "details", None) or {}
    calibration = details.get("calibration")
    if calibration is not None and "hallucination_probability" in details:
        cut = chosen.get(calibration)
        if cut is None:  # the shipped verdict of that calibration
            return None if score.passed is None else not score.passed
        return float(details["hallucination_probability"]) > cut
    key = next(
        (k for k in (score.name, details.get("task"), details.get("signal_model")) if k in chosen),
        None,
    )
    if key is None or score.value is None:
        return None
    threshold = chosen[key]
    if threshold is None:
        return None
    if score.direction == "higher_is_better":
        return bool(score.value < threshold)
    return bool(score.value > threshold)


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
    """Lines saying each operating point's thresholds and, per score, its measured false
    alarms (worst data set) and detection (worst kind of bad answer), locked part first."""
    measured = rates(evaluator)
    lines = []
    for point, info in measured.get("points", {}).items():
        thresholds = ", ".join(
            f"{score}={'off' if t is None else t}"
            for score, t in info.get("thresholds", {}).items()
        )
        lines.append(f"{point}: {thresholds}")
        scores = dict.fromkeys([*info.get("locked", {}), *info.get("tuning", {})])
        for score in scores:
            parts = []
            informational = (
                score in info.get("thresholds", {}) and info["thresholds"][score] is None
            )
            for part in ("locked", "tuning"):
                cell = info.get(part, {}).get(score)
                if cell and informational:
                    parts.append(
                        f"{part}: no alarm; finds something in "
                        f"{_percent(cell.get('false_alarms'))} of normal records"
                    )
                elif cell:
                    parts.append(
                        f"{part}: fails {_percent(cell.get('false_alarms'))} of normal answers, "
                        f"catches {_percent(cell.get('detection'))} of bad ones"
                    )
            lines.append(f"    {score}  " + "; ".join(parts))
    if lines:
        lines.append(f"measured by: {all_rates().get('command', MEASURE_COMMAND)}")
    return lines


def _percent(value: object) -> str:
    return "-" if not isinstance(value, int | float) else f"{value:.1%}"
