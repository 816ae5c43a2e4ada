"""Admission just before an evaluator runs: rate limits and an hourly spend budget.

``Limits`` keeps a token bucket per rate-limited evaluator and one hourly budget for judge
evaluators (``kind == "judge"``, charged ``cost_usd``). The sampler builds it from its validated
settings and asks it in ``Sampler.admit``; reporting the drops is the sampler's job::

    limits = Limits({"judge_faithfulness": 2.0}, {}, 5.0, time.monotonic)
    ok, reason = limits.admit(evaluator)  # (True, "admitted"), "rate_limited", "budget_exhausted"
    limits.charge(0.012)                  # real spend a judge client reported

Hour windows are counted from the moment the limits are built and stay aligned to it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from ragtrace.evaluators._base import Evaluator

ADMITTED, RATE_LIMITED, BUDGET_EXHAUSTED = "admitted", "rate_limited", "budget_exhausted"

_HOUR_S = 3600.0


@dataclass(frozen=True, slots=True)
class LimitSettings:
    """What the limits allow, validated by the sampler.

    Attributes:
        rate_limits: Evaluations per second per evaluator.
        burst: Bucket size per rate-limited evaluator (missing: ``max(1, rate)``).
        hourly_budget_usd: Spend allowed per hour on judge evaluators (None: unlimited).
    """

    rate_limits: Mapping[str, float]
    burst: Mapping[str, float]
    hourly_budget_usd: float | None

    def capacity(self, name: str) -> float:
        return self.burst.get(name, max(1.0, self.rate_limits[name]))

    @property
    def empty(self) -> bool:
        return not self.rate_limits and self.hourly_budget_usd is None


class AdmissionLimits(Protocol):
    """What the sampler asks before a run: ``Limits`` in process, or limits shared by a fleet
    (``ragtrace._pipeline.sampling.shared_limits.RedisLimits``)."""

    def admit(self, evaluator: Evaluator) -> tuple[bool, str]: ...

    def charge(self, usd: float | None) -> None: ...

    def budget_left_usd(self) -> float | None: ...


def is_charged(settings: LimitSettings, evaluator: Evaluator) -> tuple[bool, float, float]:
    """``(whether the budget applies, cost checked against it, cost reserved now)`` for one run
    of ``evaluator``.

    A judge whose client reports real spend (``charge``) is checked against its estimate but
    reserves nothing: it is charged what it really costs.
    """
    if settings.hourly_budget_usd is None or evaluator.kind != "judge":
        return False, 0.0, 0.0
    cost = float(evaluator.cost_usd)
    return True, cost, 0.0 if getattr(evaluator, "reports_spend", False) else cost


class _Bucket:
    __slots__ = ("capacity", "last", "rate", "tokens")

    def __init__(self, rate: float, capacity: float, now: float) -> None:
        self.rate, self.capacity, self.tokens, self.last = rate, capacity, capacity, now

    def refill(self, now: float) -> None:
        elapsed = max(0.0, now - self.last)
        self.tokens = min(self.capacity, self.tokens + elapsed * self.rate)
        self.last = max(self.last, now)


class Limits:
    """Token buckets per evaluator and an hourly judge budget, shared by all worker threads.

    Args:
        rate_limits: Evaluations per second per evaluator (already validated).
        burst: Bucket size per rate-limited evaluator; missing ones get ``max(1, rate)``.
        hourly_budget_usd: Spend allowed per hour on judge evaluators (None: unlimited).
        clock: Seconds, monotonic; read once now, when the first hour starts.
    """

    def __init__(
        self,
        rate_limits: Mapping[str, float],
        burst: Mapping[str, float],
        hourly_budget_usd: float | None,
        clock: Callable[[], float],
    ) -> None:
        self.settings = LimitSettings(dict(rate_limits), dict(burst), hourly_budget_usd)
        self._budget = hourly_budget_usd
        self._clock = clock
        self._lock = threading.Lock()
        now = float(clock())
        self._buckets = {
            name: _Bucket(rate, self.settings.capacity(name), now)
            for name, rate in rate_limits.items()
        }
        self._window_start, self._spent = now, 0.0

    def admit(self, evaluator: Evaluator) -> tuple[bool, str]:
        """Take a token and charge the hourly budget for one run of ``evaluator`` now.

        Returns:
            ``(True, "admitted")``, or False with ``rate_limited`` or ``budget_exhausted``.

        Raises:
            Exception: Whatever a broken evaluator raises (the sampler reports it).
        """
        charged, cost, reserve = is_charged(self.settings, evaluator)
        with self._lock:
            now = float(self._clock())
            bucket = self._buckets.get(evaluator.name)
            if bucket is not None:
                bucket.refill(now)
            if charged:
                self._roll_window(now)
            if bucket is not None and bucket.tokens < 1.0:
                return False, RATE_LIMITED
            if charged and self._spent + cost > (self._budget or 0.0) * (1 + 1e-12):
                return False, BUDGET_EXHAUSTED
            if bucket is not None:
                bucket.tokens -= 1.0
            self._spent += reserve
            return True, ADMITTED

    def charge(self, usd: float | None) -> None:
        """Add real judge spend (reported by the judge client) to this hour's budget."""
        if self._budget is None or usd is None or not usd > 0 or usd == float("inf"):
            return
        with self._lock:
            self._roll_window(float(self._clock()))
            self._spent += float(usd)

    def budget_left_usd(self) -> float | None:
        """What the judge budget still allows in the current hour (None: no budget)."""
        if self._budget is None:
            return None
        with self._lock:
            if float(self._clock()) - self._window_start >= _HOUR_S:
                return self._budget
            return max(0.0, self._budget - self._spent)

    def _roll_window(self, now: float) -> None:
        if now - self._window_start >= _HOUR_S:
            self._window_start += _HOUR_S * ((now - self._window_start) // _HOUR_S)
            self._spent = 0.0
