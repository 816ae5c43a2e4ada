"""Printed figures compared as a reader compares them: the same words, and each number within
one unit of its last printed decimal place.

The default embedder gives the same bits on every AVX2 and AVX-512 processor
(docs/decisions/same-vectors-on-every-cpu.md). What can still differ between two processors is
the float rounding of the arithmetic after it (numpy's BLAS picks its kernels by processor too:
cosines move by ~1e-7), which moves a rounded figure's last digit only when the figure sits on a
rounding edge. The docs print figures to 3 or 4 decimals; a test that holds them to the page
allows that last digit and nothing more. Counts, verdicts and words are compared exactly::

    assert same_figures("mean = 0.0173 (8 cases)", "mean = 0.018 (8 cases)")
"""

from __future__ import annotations

import re
from collections.abc import Sequence

NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _places(number: str) -> int:
    return len(number.partition(".")[2])


def same_figures(got: str, want: str) -> bool:
    """``got`` reads as ``want``: the same text between numbers, the same count of numbers, each
    within one unit of the coarser of the two printed last places (integers equal)."""
    if NUMBER.split(got) != NUMBER.split(want):
        return False
    for a, b in zip(NUMBER.findall(got), NUMBER.findall(want), strict=True):
        if a == b:
            continue
        places = min(_places(a), _places(b))
        if places == 0 or abs(float(a) - float(b)) > 10.0**-places + 1e-12:
            return False
    return True


def block_in(block: str, page: str) -> bool:
    """The lines of ``block`` stand in ``page`` one after another, each read by
    ``same_figures``."""
    want = block.split("\n")
    lines = page.split("\n")
    return any(
        all(same_figures(lines[start + i], line) for i, line in enumerate(want))
        for start in range(len(lines) - len(want) + 1)
    )


def shown_in(line: str, printed: Sequence[str]) -> bool:
    """One of the ``printed`` lines reads as ``line``."""
    return any(same_figures(p, line) for p in printed)
