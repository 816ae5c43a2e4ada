"""A CPU budget for the model-backed evaluators: a share of one core, over a sliding window.

The evaluation engine measures the CPU time of every call of a model-backed evaluator (the
thread time of the thread that ran it, or of the worker process's thread that did) and charges
it here; a worker asks ``admit(name)`` before each model-backed evaluation of a record and skips
it while the CPU time held in the last ``window_s`` seconds is at or above ``share *
window_s``::

    budget = CpuBudget(0.25)              # a quarter of one core: 2.5 CPU-seconds every 10 s
    if budget.admit("groundedness"):      # one record
        ...                               # the engine then charges the call:
    budget.charge("groundedness", 0.06, records=2)
    # refused: ragtrace_sampling_decisions_total{decision="dropped",reason="cpu_budget"}

A worker admits a whole batch before the call that scores it, so each admission also holds what
one record of that evaluator has cost so far (a running mean of its calls after the first, which
loads the models) until the call's real cost replaces it: a batch cannot run far past the
budget on the strength of a window that was not charged yet. The first call of each evaluator
has no such estimate and runs past the budget by its cost (loading included); the runs after it
wait for the window to slide.

The window slides: a charge stops counting ``window_s`` seconds after it was made, so a busy
minute never borrows from the next one and a quiet one lends nothing. Backends run on the
calling thread (one model thread each by default, ``RAGTRACE_MODEL_THREADS``); a backend given
more threads does work the thread time misses.
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
_SMOOTHING = 0.2
"""Weight of the latest call in the running mean of an evaluator's CPU per record."""


class CpuBudget:
    """CPU seconds allowed to model-backed evaluators: ``share`` of one core over ``window_s``.

    Thread-safe: every worker thread and call thread of a pipeline share one.

    Args:
        share: Share of one core (0.25: a quarter; 2.0: two cores); must be > 0.
        window_s: Length of the sliding window, seconds.
        clock: Seconds, monotonic (injectable for tests).

    Raises:
        ValueError: ``share`` or ``window_s`` not a finite number > 0.
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
        # [time, seconds]: charges, and the estimates admissions hold until their call is
        # charged (then set to 0); an entry leaves the window ``window_s`` after its time.
        self._entries: deque[list[float]] = deque()
        self._held = 0.0
        self._waiting: dict[str, deque[list[float]]] = {}  # admissions not charged yet
        self._per_record: dict[str, float] = {}
        self._calls: dict[str, int] = {}
        self.charged_s = 0.0  # every CPU second charged since it was built
        self.refused = 0  # runs refused since it was built

    def admit(self, name: str) -> bool:
        """Whether evaluator ``name`` may score one more record now (the window has room);
        if so, its estimated cost is held until the call is charged."""
        with self._lock:
            now = self._clock()
            self._expire(now)
            if self._held >= self.allowance_s:
                self.refused += 1
                return False
            estimate = self._per_record.get(name, 0.0)
            if estimate > 0:
                entry = [now, estimate]
                self._entries.append(entry)
                self._held += estimate
                self._waiting.setdefault(name, deque()).append(entry)
            return True

    def charge(self, name: str, cpu_s: float, records: int = 1) -> None:
        """Charge one call of evaluator ``name`` over ``records`` records: its CPU seconds
        replace the estimates held for them. A value that is no CPU time (negative, NaN,
        infinite) charges nothing."""
        if not cpu_s >= 0 or not math.isfinite(cpu_s):
            return
        with self._lock:
            now = self._clock()
            self._expire(now)
            waiting = self._waiting.get(name) or deque()
            for _ in range(min(max(records, 0), len(waiting))):
                held = waiting.popleft()
                self._held -= held[1]
                held[1] = 0.0
            if cpu_s > 0:
                self._entries.append([now, cpu_s])
                self._held += cpu_s
                self.charged_s += cpu_s
            calls = self._calls[name] = self._calls.get(name, 0) + 1
            if calls > 1 and records > 0:  # the first call loads the models: no estimate
                per_record = cpu_s / records
                before = self._per_record.get(name)
                self._per_record[name] = (
                    per_record if before is None else before + _SMOOTHING * (per_record - before)
                )

    def spent_s(self) -> float:
        """CPU seconds held in the window now (charges, and estimates awaiting their call)."""
        with self._lock:
            self._expire(self._clock())
            return self._held

    def _expire(self, now: float) -> None:
        entries = self._entries
        horizon = now - self.window_s
        while entries and entries[0][0] <= horizon:
            entry = entries.popleft()
            self._held -= entry[1]
            entry[1] = 0.0  # an admission still waiting for its charge holds nothing now
        for waiting in self._waiting.values():
            while waiting and waiting[0][0] <= horizon:
                waiting.popleft()
        if not entries:
            self._held = 0.0  # no drift from adding and taking away floats

    def __repr__(self) -> str:
        return f"<CpuBudget {self.share:g} of a core over {self.window_s:g} s>"
