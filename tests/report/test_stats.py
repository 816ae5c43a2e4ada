"""Bootstrap statistics against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from ragtrace._report.stats import Bootstrap, Estimate, quantile, wilson
from tests.components import require_module


def test_mean_and_rate_are_the_plain_ones() -> None:
    boot = Bootstrap(resamples=200, seed=1)
    assert boot.mean([0.2, 0.9, 0.7], "k").value == pytest.approx(0.6)  # 1.8 / 3
    assert boot.rate([True, False, True, True]).value == 0.75
    assert boot.mean([0.2, 0.9, 0.7], "k").n == 3


def test_no_value_and_one_value() -> None:
    boot = Bootstrap()
    assert boot.mean([], "k") == Estimate(0, None, None, None)
    assert boot.mean([0.4], "k") == Estimate(1, 0.4, 0.4, 0.4)
    assert boot.difference([], [0.5], "k", paired=False).value is None


def test_interval_contains_the_mean_and_narrows_with_n() -> None:
    boot = Bootstrap(resamples=1000, level=0.95, seed=0)
    small = boot.mean([0.0, 1.0] * 5, "small")  # n = 10, mean 0.5
    large = boot.mean([0.0, 1.0] * 200, "large")  # n = 400, mean 0.5
    for est in (small, large):
        assert est.low is not None and est.high is not None
        assert est.low < 0.5 < est.high
    assert large.high - large.low < (small.high - small.low) / 3  # ~ 1 / sqrt(40) as wide
    # Normal approximation by hand: 0.5 +- 1.96 * sqrt(0.25 / 400) = 0.5 +- 0.049.
    assert large.high - large.low == pytest.approx(2 * 1.96 * math.sqrt(0.25 / 400), rel=0.15)


def test_level_widens_the_interval() -> None:
    values = [i / 50 for i in range(50)]
    narrow = Bootstrap(level=0.5, seed=0).mean(values, "k")
    wide = Bootstrap(level=0.99, seed=0).mean(values, "k")
    assert narrow.low is not None and narrow.high is not None
    assert wide.low is not None and wide.high is not None
    assert wide.low < narrow.low < narrow.high < wide.high


def test_same_seed_same_interval_other_seed_other_interval() -> None:
    values = [0.1, 0.5, 0.9, 0.3, 0.7, 0.2]
    one = Bootstrap(seed=3).mean(values, "k")
    assert Bootstrap(seed=3).mean(values, "k") == one
    assert Bootstrap(seed=4).mean(values, "k") != one
    assert Bootstrap(seed=3).mean(values, "other key") != one  # each interval draws its own


def test_paired_difference_sees_what_unpaired_cannot() -> None:
    # b answers every case exactly 0.1 worse than a, on cases of very different difficulty.
    a = [0.15, 0.95, 0.45, 0.75, 0.25, 0.85]
    b = [x - 0.1 for x in a]
    boot = Bootstrap(resamples=1000, seed=0)
    paired = boot.difference(a, b, "k", paired=True)
    unpaired = boot.difference(a, b, "k", paired=False)
    assert paired.value == pytest.approx(0.1) and unpaired.value == pytest.approx(0.1)
    assert paired.low == pytest.approx(0.1) and paired.high == pytest.approx(0.1)
    assert paired.excludes_zero() and paired.n == 6
    assert unpaired.low is not None and unpaired.high is not None
    assert unpaired.low < 0 < unpaired.high and not unpaired.excludes_zero()


def test_paired_needs_equal_lengths() -> None:
    with pytest.raises(ValueError, match="as many values"):
        Bootstrap().difference([0.1, 0.2], [0.3], "k", paired=True)


def test_quantile_interpolates() -> None:
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.0) == 1.0
    assert quantile([1.0, 2.0, 3.0, 4.0], 1.0) == 4.0
    assert quantile([1.0, 2.0, 3.0, 4.0], 0.25) == 1.75


@pytest.mark.parametrize(
    ("resamples", "level"), [(5, 0.95), (1000, 1.0), (1000, 0.0), (True, 0.9), (1.5, 0.9)]
)
def test_bad_settings_are_refused(resamples: object, level: float) -> None:
    with pytest.raises(ValueError):
        Bootstrap(resamples=resamples, level=level)  # type: ignore[arg-type]


@pytest.mark.parametrize(("passed", "n"), [(0, 27), (27, 27), (0, 1), (1, 1), (3, 10), (50, 400)])
def test_pass_rate_intervals_are_wilson_and_equal_scipys(passed: int, n: int) -> None:
    """The Wilson interval, checked against SciPy's, at 0% and 100% included."""
    stats = require_module("scipy.stats", "pip install scipy")
    for level in (0.9, 0.95):
        ours = wilson(passed, n, level)
        theirs = stats.binomtest(passed, n).proportion_ci(confidence_level=level, method="wilson")
        assert ours.value == passed / n and ours.n == n
        assert (ours.low, ours.high) == (
            pytest.approx(theirs.low, abs=1e-12),
            pytest.approx(theirs.high, abs=1e-12),
        )


def test_pass_rate_intervals_do_not_collapse_at_0_and_100_percent() -> None:
    """27 passes of 27 do not prove a 100% pass rate: the interval is not a point."""
    boot = Bootstrap(level=0.95)
    always = boot.rate([True] * 27)
    never = boot.rate([False] * 27)
    assert (always.value, always.high) == (1.0, 1.0) and always.low == pytest.approx(0.8754, 1e-3)
    assert (never.value, never.low) == (0.0, 0.0) and never.high == pytest.approx(0.1246, 1e-3)
    # The percentile bootstrap of the same verdicts collapses to [1, 1]: the reason for Wilson.
    collapsed = boot.mean([1.0] * 27, "k")
    assert (collapsed.low, collapsed.high) == (1.0, 1.0)
    assert boot.rate([]) == Estimate(0, None, None, None)
    with pytest.raises(ValueError, match="successes"):
        wilson(5, 4)
