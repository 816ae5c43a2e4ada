"""Queue filters to and from text: URL query parameters, command-line values, times.

``filter_from_params({"reason": "pii", "since": "24h"})`` builds a ``QueueFilter``;
``filter_to_params(f)`` gives the parameters back (times as UTC ISO-8601), so links on the queue
and record pages keep the filter. Times are ISO-8601 (``2026-11-23``, ``2026-11-23T10:00``,
with or without an offset; no offset means UTC) or a duration before now (``30m``, ``24h``,
``7d``). A bad value raises ``ValueError`` naming the parameter.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from datetime import UTC, datetime

from ragtrace.review._items import VERDICTS, QueueFilter
from ragtrace.review._sql_store import MAX_OFFSET

PARAMS = (
    "reason",
    "evaluator",
    "min",
    "max",
    "app",
    "since",
    "until",
    "labelled",
    "verdict",
    "q",
    "session",
)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_MAX_NS = 2**63  # times are stored as signed 64-bit nanoseconds
_MAX_SECONDS = 9e9  # ~285 years: a duration longer cannot be stored


def paging_offset(text: str | None) -> int:
    """A page's ``offset`` parameter: a whole number in ``0..MAX_OFFSET`` (empty: 0).

    Raises:
        ValueError: Anything else (a sign, a fraction, digits beyond the range, text).
    """
    if text is None or not text.strip():
        return 0
    digits = text.strip()
    if not digits.isdigit() or not digits.isascii() or len(digits) > len(str(MAX_OFFSET)):
        raise ValueError(f"offset must be a whole number in 0..{MAX_OFFSET}, got {text!r}")
    offset = int(digits)
    if offset > MAX_OFFSET:
        raise ValueError(f"offset must be a whole number in 0..{MAX_OFFSET}, got {text!r}")
    return offset


def parse_time(text: str, now_ns: int | None = None) -> int:
    """UTC nanoseconds of an ISO-8601 time or of a duration before now (``24h``).

    Raises:
        ValueError: Neither form, or a time out of range.
    """
    match = _DURATION.match(text)
    if match:
        now = time.time_ns() if now_ns is None else now_ns
        seconds = float(match.group(1)) * _UNIT_S[match.group(2)]
        if not seconds < _MAX_SECONDS:
            raise ValueError(f"duration out of range: {text!r}")
        return now - int(seconds * 1e9)
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"not a time: {text!r} (use ISO-8601 like 2026-11-23T10:00, or 30m / 24h / 7d)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    ns = int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000
    if not -_MAX_NS <= ns < _MAX_NS:
        raise ValueError(f"time out of range (years 1678-2262): {text!r}")
    return ns


def format_time(ns: int) -> str:
    """UTC ISO-8601 of a time in nanoseconds (``2026-11-23T10:00:05``)."""
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")


def filter_from_params(params: Mapping[str, str]) -> QueueFilter:
    """A ``QueueFilter`` from query parameters (``PARAMS``); empty values are ignored.

    Raises:
        ValueError: A bad number, time, verdict or ``labelled`` value, naming the parameter.
    """

    def get(name: str) -> str | None:
        value = params.get(name)
        return value.strip() if isinstance(value, str) and value.strip() else None

    labelled = get("labelled") or "no"
    if labelled not in ("no", "yes", "all"):
        raise ValueError(f"labelled must be no, yes or all; got {labelled!r}")
    verdict = get("verdict")
    if verdict is not None and verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}; got {verdict!r}")
    since, until = get("since"), get("until")
    return QueueFilter(
        reason=get("reason"),
        evaluator=get("evaluator"),
        min_score=_number(get("min"), "min"),
        max_score=_number(get("max"), "max"),
        app=get("app"),
        since_ns=None if since is None else _time(since, "since"),
        until_ns=None if until is None else _time(until, "until"),
        labelled=labelled,  # type: ignore[arg-type]
        verdict=verdict,
        search=get("q"),
        session=get("session"),
    )


def filter_to_params(f: QueueFilter) -> dict[str, str]:
    """The query parameters of ``f`` (only those set; ``labelled`` unless it is ``no``)."""
    values: dict[str, object] = {
        "reason": f.reason,
        "evaluator": f.evaluator,
        "min": f.min_score,
        "max": f.max_score,
        "app": f.app,
        "since": None if f.since_ns is None else format_time(f.since_ns),
        "until": None if f.until_ns is None else format_time(f.until_ns),
        "labelled": None if f.labelled == "no" else f.labelled,
        "verdict": f.verdict,
        "q": f.search,
        "session": f.session,
    }
    return {name: str(value) for name, value in values.items() if value is not None}


def _number(text: str | None, name: str) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {text!r}")
    return value


def _time(text: str, name: str) -> int:
    try:
        return parse_time(text)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
