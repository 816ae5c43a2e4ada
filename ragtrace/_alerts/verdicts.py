"""The verdicts file: timestamped scores, one JSON object a line, that a backtest replays.

Each line is one verdict of one score on one answer::

    {"time": 1718000000.25, "app": "support-bot", "evaluator": "faithfulness",
     "value": 0.92, "passed": true}

- ``time``: when the answer was scored, in unix seconds (a number);
- ``app``: the ``app`` label; ``evaluator``: the score's name as in the ``evaluator`` label
  (``faithfulness``, ``context_relevance.precision``), both non-empty strings;
- ``value``: the score (a finite number), or null when there is none;
- ``passed``: the verdict against the score's threshold (true or false), or null.

They count as the Prometheus exporter counts a Score (``ragtrace._exporters.prometheus``):
outcome ``error`` when both ``value`` and ``passed`` are null, ``fail`` when ``passed`` is
false, else ``pass`` (a score without a threshold counts as a pass there too); a ``value``
is observed in ``ragtrace_evaluation_score``. Lines may come in any order; blank lines are
ignored; any other line that is not such an object stops the reading with a ``VerdictError``
naming its number. Other keys are ignored.

``ragtrace eval --verdicts OUT`` writes this file from its scores (``verdict_lines``), at each
answer's time (``answer_time``): when a ``--system-callable`` was called, else the input
record's ``metadata.time`` (unix seconds), else when it was scored.
"""

from __future__ import annotations

import json
import math
import time as clock
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from sys import intern
from typing import IO, Any

from ragtrace._model import RagRecord, Score

FIELDS = ("time", "app", "evaluator", "value", "passed")
_BOM = b"\xef\xbb\xbf"


class VerdictError(ValueError):
    """A line of a verdicts file that is not a verdict; the message names the line."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """One score of one answer at one time.

    Attributes:
        time: Unix seconds.
        app: The ``app`` label.
        evaluator: The score's name (the ``evaluator`` label).
        value: The score, or None.
        passed: The verdict, or None (no threshold, or an error when ``value`` is None too).
    """

    time: float
    app: str
    evaluator: str
    value: float | None
    passed: bool | None

    @property
    def outcome(self) -> str:
        """``pass``, ``fail`` or ``error``, as the Prometheus exporter counts the score."""
        if self.passed is None and self.value is None:
            return "error"
        return "fail" if self.passed is False else "pass"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def parse_verdict(text: str | bytes) -> Verdict:
    """One line as a ``Verdict``.

    Raises:
        ValueError: It is not JSON, not an object, or a field is missing or of the wrong type
            (the message says which).
    """
    try:
        data = _DECODER.decode(text.decode("utf-8") if isinstance(text, bytes) else text)
    except UnicodeDecodeError:
        raise ValueError("not UTF-8") from None
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc})") from None
    if type(data) is dict:  # the common case, checked fast; any doubt goes to _checked
        time: Any = data.get("time")
        app, evaluator = data.get("app"), data.get("evaluator")
        value, passed = data.get("value", False), data.get("passed", 0)
        if (
            type(time) in _NUMBERS
            and 0 <= time < math.inf
            and (value is None or (type(value) in _NUMBERS and math.isfinite(value)))
            and (passed is None or type(passed) is bool)
            and type(app) is str
            and type(evaluator) is str
            and app
            and evaluator
            and app.isascii()
            and evaluator.isascii()
        ):
            # one string per name, not one per line: a week of verdicts holds millions
            return Verdict(float(time), intern(app), intern(evaluator), _float(value), passed)
    return _checked(data)


_NUMBERS = (int, float)


def _checked(data: Any) -> Verdict:
    """``data`` as a Verdict, or a ValueError saying what is wrong with it."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    missing = [f for f in FIELDS if f not in data]
    if missing:
        raise ValueError(f"missing {', '.join(repr(m) for m in missing)}")
    time, value, passed = data["time"], data["value"], data["passed"]
    if not _number(time) or time < 0:
        raise ValueError(f"'time' must be unix seconds (a number >= 0), got {time!r}")
    if value is not None and not _number(value):
        raise ValueError(f"'value' must be a finite number or null, got {value!r}")
    if passed is not None and not isinstance(passed, bool):
        raise ValueError(f"'passed' must be true, false or null, got {passed!r}")
    labels = [_label(data, "app"), _label(data, "evaluator")]
    return Verdict(float(time), labels[0], labels[1], _float(value), passed)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _label(data: dict[str, Any], key: str) -> str:
    value = data[key]
    if not isinstance(value, str) or not value:
        raise ValueError(f"{key!r} must be a non-empty string, got {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{key!r} is not valid UTF-8 (a lone surrogate escape)") from None
    return value


def read_verdicts(stream: IO[bytes], name: str = "-") -> list[Verdict]:
    """Every verdict of ``stream``, in file order.

    Raises:
        VerdictError: A line that is not a verdict (``NAME:LINE: why``).
    """
    shown = "<stdin>" if name == "-" else name
    found: list[Verdict] = []
    for number, read in enumerate(stream, start=1):
        line = read[len(_BOM) :] if number == 1 and read.startswith(_BOM) else read
        if not line.strip():
            continue
        try:
            found.append(parse_verdict(line))
        except ValueError as exc:
            raise VerdictError(f"{shown}:{number}: {exc}") from None
    return found


def verdict_lines(time: float, app: str, scores: Iterable[Score]) -> Iterator[str]:
    """The verdicts file's lines (newline-terminated) of one answer's Scores at ``time``.

    A Score with an error is written with ``value`` and ``passed`` null (an ``error``);
    a non-finite value as null.
    """
    for score in scores:
        failed = score.error is not None
        value = score.value
        finite = value is not None and math.isfinite(value) and not failed
        line = {
            "time": time,
            "app": app,
            "evaluator": score.name,
            "value": value if finite else None,
            "passed": None if failed else score.passed,
        }
        yield json.dumps(line, ensure_ascii=False) + "\n"


def answer_time(record: RagRecord) -> float:
    """When ``record`` was answered, in unix seconds: its start, else its ``time`` attribute
    (an input record's ``metadata.time``), else now."""
    if record.start_ns > 0:
        return record.start_ns / 1e9
    given: Any = record.attributes.get("time")
    if _number(given) and given >= 0:
        return float(given)
    return clock.time()
