"""How the report page prints numbers: the JSON's rounded values, never re-rounded differently.

``num`` prints 3 decimals, ``pct`` a pass rate as a percentage of the same number, ``signed`` a
difference with its sign, ``interval`` ``[low, high]`` in one of those forms; None is ``n/a``.
"""

from __future__ import annotations

from collections.abc import Callable


def num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def interval(
    low: float | None, high: float | None, fmt: Callable[[float | None], str] = num
) -> str:
    return "" if low is None or high is None else f"[{fmt(low)}, {fmt(high)}]"
