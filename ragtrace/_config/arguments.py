"""Command-line value types, held to the same rules as the options.

Every number a ``ragtrace`` command takes on its command line goes through ``number`` (or
``positive``), as an option's value goes through its ``Kind``: it must be finite (``nan`` and
``inf`` are refused, as everywhere in the configuration) and in range, else argparse says so
in one line and the command exits 2 before it starts anything::

    parser.add_argument("--reclaim-idle-s", type=positive(float))
    parser.add_argument("--min-gain", type=number(float, 0, 1, inclusive=True))
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def number(
    kind: type[int] | type[float],
    low: float,
    high: float | None = None,
    what: str = "a number",
    *,
    above_low: bool = False,
    inclusive: bool = False,
) -> Callable[[str], int | float]:
    """An argparse ``type``: a finite ``kind`` of ``text`` that is at least ``low`` (more than
    ``low`` with ``above_low``) and under ``high`` (at most ``high`` with ``inclusive``)."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
        low_ok = value > low if above_low else value >= low
        high_ok = high is None or (value <= high if inclusive else value < high)
        if not (low_ok and high_ok):
            bounds = f"> {low:g}" if above_low else f">= {low:g}"
            if high is not None:
                bounds += f" and {'<=' if inclusive else '<'} {high:g}"
            raise argparse.ArgumentTypeError(f"must be {bounds}, got {text}")
        return value

    return parse


def positive(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    """An argparse ``type``: a finite ``kind`` > 0."""
    return number(kind, 0, above_low=True)
