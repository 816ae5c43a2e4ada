"""A CPU budget for the model-backed evaluators: a share of one core, over a sliding window.

The evaluation engine measures the CPU time of every call of a model-backed evaluator (the
thread time of the thread that ran it, or of the worker process's thread that did) and charges
it here; a worker asks ``admit()`` before each model-backed evaluation and skips it while the
CPU time charged over the last ``window_s`` seconds is at or above ``share * window_s``::

    budget = CpuBudget(0.25)          # a quarter of one core: 2.5 CPU-seconds every 10 s
    if budget.admit():
        ...run the evaluator...       # the engine calls budget.charge(cpu_seconds) after it
    # else: counted as ragtrace_sampling_decisions_total{decision="dropped",reason="cpu_budget"}

The window slides: a charge stops counting ``window_s`` seconds after it was made, so a busy
minute never borrows from the next one and a quiet one lends nothing. A batch admitted while
the budget still had room may overshoot it by that batch's cost; the runs after it wait.
Backends run on the calling thread (one model thread each by default,
``RAGTRACE_MODEL_THREADS``); a backend given more threads does work the thread time misses.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

WINDOW_S = 10.0
"""How far back the budget looks, in seconds."""
CPU_BUDGET = "cpu_budget"
"""The ``reason`` label of an evaluation the budget skipped."""


class CpuBudget:
    """CPU seconds allowed to model-backed evaluators: ``share`` of one core over ``window_s``.

    Thread-safe: every worker thread and call thread of a pipeline share one.

    Args:
        share: Share of one core (0.25: a quarter; 2.0: two cores); must be > 0.
        window_s: Length of the sliding window, seconds.
        clock: Seconds, monotonic (injectable for tests).

    Raises:
        ValueError: ``share`` or ``window_s`` not a positive finite number.
    """

    def __init__(
        self,
        share: float,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for name, value in (("share", share), ("window_s", window_s)):
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or not math.isfinite(value) or value <= 0:
                raise ValueError(f"CpuBudget: {name} must be a finite number > 0, got {value!r}")
        self.share = float(share)
        self.window_s = float(window_s)
        self.allowance_s = self.share * self.window_s
        self._clock = clock
        self._lock = threading.Lock()
        self._charges: deque[tuple[float, float]] = deque()
        self._spent = 0.0
        self.charged_s = 0.0  # every CPU second charged since it was built
        self.refused = 0  # runs refused since it was built

    def admit(self) -> bool:
        """Whether a model-backed evaluation may run now (the window has room)."""
        with self._lock:
            self._expire(self._clock())
            if self._spent < self.allowance_s:
                return True
            self.refused += 1
            return False

    def charge(self, cpu_s: float) -> None:
        """Add the CPU seconds one call spent (negative or non-finite values are ignored)."""
        if not cpu_s > 0 or not math.isfinite(cpu_s):
            return
        with self._lock:
            now = self._clock()
            self._expire(now)
            self._charges.append((now, cpu_s))
            self._spent += cpu_s
            self.charged_s += cpu_s

    def spent_s(self) -> float:
        """CPU seconds charged within the window now."""
        with self._lock:
            self._expire(self._clock())
            return self._spent

    def _expire(self, now: float) -> None:
        charges = self._charges
        horizon = now - self.window_s
        while charges and charges[0][0] <= horizon:
            self._spent -= charges.popleft()[1]
        if not charges:
            self._spent = 0.0  # no drift from adding and taking away floats

    def __repr__(self) -> str:
        return f"<CpuBudget {self.share:g} of a core over {self.window_s:g} s>"
