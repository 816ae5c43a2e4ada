"""The demo's scenarios: how well its model answers, and whether it degrades mid-run.

A scenario names one of the generator's weights of behaviours (``ragtrace.demo._generator``):
``good`` the careful generator (92% grounded answers), ``default`` the demo's own mix (70%),
``sloppy`` the sloppy one (45%). ``ScenarioPlan`` says which one a run starts with and, with
``degrade_after_s``, when it switches to ``sloppy`` (the app "degrades": a bad release)::

    plan = ScenarioPlan("good", degrade_after_s=120)
    plan.current(30.0)    # "good"
    plan.current(130.0)   # "sloppy"
"""

from __future__ import annotations

from dataclasses import dataclass

from ragtrace.demo._generator import CAREFUL_WEIGHTS, SLOPPY_WEIGHTS, WEIGHTS, Behaviour

SCENARIOS: dict[str, dict[Behaviour, float]] = {
    "good": CAREFUL_WEIGHTS,
    "default": WEIGHTS,
    "sloppy": SLOPPY_WEIGHTS,
}
"""Scenario name -> the generator's weights of behaviours."""
DEGRADED = "sloppy"
"""The scenario a run switches to when it degrades."""
START_WHEN_DEGRADING = "good"
"""The scenario a degrading run starts with unless another is chosen."""


@dataclass(frozen=True)
class ScenarioPlan:
    """Which scenario a run starts with, and when (if ever) it degrades to ``DEGRADED``.

    Attributes:
        start: A name of ``SCENARIOS``.
        degrade_after_s: Seconds after the start at which the run switches to ``DEGRADED``;
            None: never.

    Raises:
        ValueError: An unknown scenario, a negative time, or degrading from ``DEGRADED``.
    """

    start: str = "default"
    degrade_after_s: float | None = None

    def __post_init__(self) -> None:
        if self.start not in SCENARIOS:
            raise ValueError(f"unknown scenario {self.start!r}; known: {', '.join(SCENARIOS)}")
        if self.degrade_after_s is not None:
            if self.degrade_after_s < 0:
                raise ValueError("the time to degrade after must be >= 0 seconds")
            if self.start == DEGRADED:
                raise ValueError(f"a run that starts {DEGRADED} cannot degrade to {DEGRADED}")

    def current(self, elapsed_s: float) -> str:
        """The scenario ``elapsed_s`` seconds after the start."""
        if self.degrade_after_s is not None and elapsed_s >= self.degrade_after_s:
            return DEGRADED
        return self.start

    def describe(self) -> str:
        """``good``, or ``good, then sloppy after 120 s``."""
        if self.degrade_after_s is None:
            return self.start
        return f"{self.start}, then {DEGRADED} after {self.degrade_after_s:g} s"
