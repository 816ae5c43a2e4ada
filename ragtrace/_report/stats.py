"""Means and differences with percentile bootstrap confidence intervals; pass rates with Wilson
score intervals.

Pure Python (no numpy: the report runs on the core install), seeded and reproducible: every
interval draws from its own ``random.Random`` seeded with ``(seed, key)``, so one number does not
change when another is added. ::

    boot = Bootstrap(resamples=1000, level=0.95, seed=0)
    boot.mean([0.2, 0.9, 0.7], key="faithfulness/model-a")    # Estimate(n=3, value=0.6, ...)
    boot.difference(a, b, key="faithfulness/a-b", paired=True)  # mean(a) - mean(b)

A paired difference resamples test cases (``a[i]`` and ``b[i]`` answer the same case); an
unpaired one resamples each side on its own.

A pass rate is a share of verdicts, and a bootstrap of 27 passes out of 27 can only ever draw
27 passes: its interval collapses to [1, 1], claiming certainty that 27 cases cannot give. Pass
rates therefore get the Wilson score interval (``wilson``), which stays honest at 0% and 100%
(27 of 27 at 95%: [0.875, 1.000]) and needs no resampling.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

DEFAULT_RESAMPLES = 1000
DEFAULT_LEVEL = 0.95
DEFAULT_SEED = 0


@dataclass(frozen=True, slots=True)
class Estimate:
    """A statistic over ``n`` values with its confidence interval [low, high] (None if n = 0)."""

    n: int
    value: float | None
    low: float | None
    high: float | None

    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly above or below 0 as computed (the report also asks
        that it does as printed: ``findings.clear_of_zero``)."""
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)


class Bootstrap:
    """Percentile bootstrap intervals.

    Args:
        resamples: Resamples per interval (>= 10).
        level: Confidence level, strictly between 0 and 1 (0.95 = a 95% interval).
        seed: Same seed, same intervals.
    """

    def __init__(
        self,
        resamples: int = DEFAULT_RESAMPLES,
        level: float = DEFAULT_LEVEL,
        seed: int = DEFAULT_SEED,
    ) -> None:
        if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 10:
            raise ValueError(f"resamples must be an integer >= 10, got {resamples!r}")
        if not 0.0 < level < 1.0:
            raise ValueError(f"level must be between 0 and 1 (e.g. 0.95), got {level!r}")
        self.resamples = resamples
        self.level = level
        self.seed = seed

    def mean(self, values: Sequence[float], key: str) -> Estimate:
        """The mean of ``values`` and its interval."""
        n = len(values)
        if n == 0:
            return Estimate(0, None, None, None)
        mean = math.fsum(values) / n
        if n == 1:
            return Estimate(1, mean, mean, mean)
        rng = self._rng(key)
        means = [math.fsum(rng.choices(values, k=n)) / n for _ in range(self.resamples)]
        low, high = self._interval(means)
        return Estimate(n, mean, low, high)

    def rate(self, verdicts: Sequence[bool]) -> Estimate:
        """The share of true verdicts and its Wilson score interval (``wilson``)."""
        return wilson(sum(bool(v) for v in verdicts), len(verdicts), self.level)

    def difference(
        self, a: Sequence[float], b: Sequence[float], key: str, paired: bool
    ) -> Estimate:
        """``mean(a) - mean(b)`` and its interval; ``paired`` when ``a[i]``, ``b[i]`` share a case.

        ``n`` is the number of pairs when paired, else the smaller side.
        """
        if not a or not b:
            return Estimate(0, None, None, None)
        if paired:
            if len(a) != len(b):
                raise ValueError("a paired difference needs as many values on each side")
            return self.mean([x - y for x, y in zip(a, b, strict=True)], key)
        diff = math.fsum(a) / len(a) - math.fsum(b) / len(b)
        rng = self._rng(key)
        draws = [
            math.fsum(rng.choices(a, k=len(a))) / len(a)
            - math.fsum(rng.choices(b, k=len(b))) / len(b)
            for _ in range(self.resamples)
        ]
        low, high = self._interval(draws)
        return Estimate(min(len(a), len(b)), diff, low, high)

    def _rng(self, key: str) -> random.Random:
        return random.Random(f"{self.seed}\x00{key}")

    def _interval(self, draws: list[float]) -> tuple[float, float]:
        draws.sort()
        tail = (1.0 - self.level) / 2.0
        return quantile(draws, tail), quantile(draws, 1.0 - tail)


def wilson(successes: int, n: int, level: float = DEFAULT_LEVEL) -> Estimate:
    """``successes / n`` and its Wilson score interval at ``level`` (E. B. Wilson, 1927).

    ``center ± half`` with ``z`` the normal quantile of ``(1 + level) / 2``::

        center = (p + z²/2n) / (1 + z²/n)
        half   = z / (1 + z²/n) * sqrt(p(1 - p)/n + z²/4n²)

    Unlike the bootstrap (or the normal approximation), it does not collapse to a point at
    0% or 100%. ``n == 0`` gives no estimate.
    """
    if n == 0:
        return Estimate(0, None, None, None)
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in [0, {n}], got {successes}")
    p = successes / n
    z = NormalDist().inv_cdf((1.0 + level) / 2.0)
    z2 = z * z
    denominator = 1.0 + z2 / n
    center = (p + z2 / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n))
    return Estimate(n, p, max(0.0, center - half), min(1.0, center + half))


def quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolating linearly between neighbours."""
    if not ordered:
        raise ValueError("quantile of no values")
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    weight = position - below
    return ordered[below] * (1.0 - weight) + ordered[above] * weight
