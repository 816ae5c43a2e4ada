"""Which test cases a score compares systems on, and what an unanswered case counts as.

A system that times out on the three hardest questions must not rank first because its mean
is taken over the easy ones. ``compare_on(group, mode)`` therefore puts every system of a score
on the same cases: those *every* system was asked and the evaluator could score (a case the
evaluator failed on or skipped for one system is left out for all: that is not the system's
doing). What happens to a case a system left unanswered (it raised, timed out, returned nothing)
is the ``mode``:

- ``fail`` (the default): it counts as a failure: a failed verdict in the pass rate, and in the
  mean the worst value the score can take (0 where higher is better, 1 where lower is better)
  when the score's values lie in [0, 1]. A score without such a bound (perplexity, GPTScore)
  has no worst value: its mean is then over the cases every system answered, and
  ``Basis.mean_note`` says so;
- ``paired``: it is left out for every system, so all of them are compared on the cases every
  one of them answered; the unanswered cases are counted beside (``SystemCases.unanswered``).

When the systems were asked different test sets (the cases every system was asked are fewer
than ``SHARED_SHARE`` of some system's), no common set is fair to all: each system is then
taken over its own cases (``Basis.shared`` is False) and differences are unpaired.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ragtrace._report.groups import ScoreGroup, Status

MODES = ("fail", "paired")
DEFAULT_MODE = "fail"
SHARED_SHARE = 0.5
_NOT_COMPARED: frozenset[Status] = frozenset({"not_asked", "error", "skipped"})


@dataclass(slots=True)
class SystemCases:
    """One system's values and verdicts on the compared cases.

    Attributes:
        values: case -> the value its mean counts (an unanswered case's is the worst value).
        verdicts: case -> pass (True) or fail (False); an unanswered case fails in ``fail``
            (when the score gives verdicts at all).
        unanswered: Cases of the score the system was asked and left unanswered.
        errors: Cases where the evaluator failed on the system's answer.
        own_values: Every value the system has for the score, compared or not.
    """

    values: dict[str, float] = field(default_factory=dict)
    verdicts: dict[str, bool] = field(default_factory=dict)
    unanswered: int = 0
    errors: int = 0
    own_values: dict[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class Basis:
    """The cases a score compares its systems on.

    Attributes:
        mode: ``fail`` or ``paired`` (see the module docstring).
        shared: Every system is taken over the same cases (else each over its own).
        cases: The compared cases (with ``shared``): every system was asked them and the
            evaluator scored them; in ``paired`` every system also answered them.
        mean_cases: Of ``cases``, those the means and differences count (all of them, but for
            an unbounded score in ``fail``: those every system answered).
        worst: The value an unanswered case counts as in a mean (None: no such value).
        left_out: Cases some system has a value for that the comparison leaves out.
        systems: system -> its values and verdicts.
    """

    mode: str
    shared: bool
    cases: list[str]
    mean_cases: list[str]
    worst: float | None
    left_out: int
    systems: dict[str, SystemCases]

    @property
    def mean_note(self) -> str | None:
        """Why the means leave out unanswered cases in ``fail`` mode, if they do."""
        if self.mode == "fail" and self.worst is None:
            return (
                "the score has no worst value (it is not bounded to [0, 1]): means are over "
                "the cases every system answered; pass rates count unanswered cases as failures"
            )
        return None


def compare_on(group: ScoreGroup, mode: str = DEFAULT_MODE) -> Basis:
    """The cases ``group``'s systems are compared on, by ``mode`` (see the module docstring).

    Raises:
        ValueError: An unknown mode.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r} for unanswered cases; use one of {MODES}")
    universe = group.cases()
    status = {s: {c: group.status(s, c) for c in universe} for s in group.systems}
    every = [v for s in group.systems for v in group.values(s).values()]
    bounded = bool(every) and all(0.0 <= v <= 1.0 for v in every)
    worst = (1.0 if group.lower_is_better else 0.0) if bounded else None
    judged = any(
        group.verdict(row) is not None for rows in group.plain.values() for row in rows.values()
    )
    asked_by_all = [c for c in universe if all(status[s][c] not in _NOT_COMPARED for s in status)]
    own = {s: [c for c in universe if status[s][c] in ("value", "unanswered")] for s in status}
    largest = max((len(cases) for cases in own.values()), default=0)
    shared = len(status) < 2 or len(asked_by_all) >= max(2, SHARED_SHARE * largest)
    if shared:
        cases = asked_by_all
        if mode == "paired":
            cases = [c for c in cases if all(status[s][c] == "value" for s in status)]
        counted = mode == "fail" and worst is not None
        mean_cases = [c for c in cases if counted or all(status[s][c] == "value" for s in status)]
        found = {
            s: _system(group, s, cases, mean_cases, status[s], worst, mode, judged) for s in status
        }
        left_out = len(universe) - len(mean_cases)
    else:
        cases, mean_cases = [], []
        found = {}
        for s, of_system in status.items():
            mine = [c for c in own[s] if mode == "fail" or of_system[c] == "value"]
            means = [c for c in mine if of_system[c] == "value" or worst is not None]
            found[s] = _system(group, s, mine, means, of_system, worst, mode, judged)
        left_out = 0
    return Basis(mode, shared, cases, mean_cases, worst, left_out, found)


def _system(
    group: ScoreGroup,
    system: str,
    cases: list[str],
    mean_cases: list[str],
    status: dict[str, Status],
    worst: float | None,
    mode: str,
    judged: bool,
) -> SystemCases:
    rows = group.plain.get(system, {})
    found = SystemCases(
        unanswered=sum(s == "unanswered" for s in status.values()),
        errors=group.errors(system),
        own_values=group.values(system),
    )
    for case in mean_cases:
        row = rows.get(case)
        if row is not None and row.value is not None:
            found.values[case] = row.value
        elif worst is not None:
            found.values[case] = worst
    for case in cases:
        row = rows.get(case)
        if status[case] == "value" and row is not None:
            verdict = group.verdict(row)
            if verdict is not None:
                found.verdicts[case] = verdict
        elif status[case] == "unanswered" and mode == "fail" and judged:
            found.verdicts[case] = False
    return found
