"""Score rows grouped for a report: per score name, per system, per test case.

``group_scores(rows, answers)`` gives one ``ScoreGroup`` per score name (in first-seen order). A
group holds each system's unperturbed answer per case (the leaderboard's and heatmap's values),
its perturbed answers (for flipped verdicts), how each system answered each case (``lines``), and
the direction and thresholds its rows carry. The verdict of a row is its ``passed``; a row
without one is judged against its own threshold (else the group's most common one).

What a system has for a case of the score (``status``):

- ``value``: a score with a value;
- ``unanswered``: no value because the system gave no answer (the line's ``error``, or an empty
  response): the system's failure, counted against it;
- ``error``: the evaluator failed on an answer that was given (not the system's failure);
- ``skipped``: the evaluator did not run on the answer (a field it needs, other than the
  response, is missing);
- ``not_asked``: the system has no line for the case.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ragtrace._report.load import DIRECTIONS, AnswerLine, ScoreRow

SYSTEM_FIELDS = frozenset({"response", "chunks", "model", "error"})
Status = Literal["value", "unanswered", "error", "skipped", "not_asked"]


@dataclass(slots=True)
class ScoreGroup:
    """Every row of one score name.

    Attributes:
        name: The score name, e.g. ``faithfulness`` or ``looping.unique_sentences``.
        evaluator: The evaluator that produced it.
        direction: ``higher_is_better`` or ``lower_is_better`` (the most common among rows).
        threshold: The most common threshold, None when no row has one.
        thresholds: Every threshold the rows carry, with how many unperturbed rows carry it,
            most common first.
        systems: Systems in first-seen order: those with a row of this score, and those that
            left a case unanswered (whose rows may all be missing for that reason).
        plain: system -> case -> the unperturbed row (the first one when a case repeats).
        perturbed: system -> case -> perturbation name -> row.
        lines: system -> case -> how the system answered the unperturbed case.
        repeated: Unperturbed rows dropped because the system already answered that case.
    """

    name: str
    evaluator: str
    direction: str = DIRECTIONS[0]
    threshold: float | None = None
    thresholds: list[tuple[float, int]] = field(default_factory=list)
    systems: list[str] = field(default_factory=list)
    plain: dict[str, dict[str, ScoreRow]] = field(default_factory=dict)
    perturbed: dict[str, dict[str, dict[str, ScoreRow]]] = field(default_factory=dict)
    lines: dict[str, dict[str, AnswerLine]] = field(default_factory=dict)
    repeated: int = 0

    @property
    def lower_is_better(self) -> bool:
        return self.direction == "lower_is_better"

    def goodness(self, value: float) -> float:
        """``value`` turned so that larger is always better."""
        return -value if self.lower_is_better else value

    def verdict(self, row: ScoreRow) -> bool | None:
        """Pass (True), fail (False) or no verdict (None) for a row."""
        if row.passed is not None:
            return row.passed
        threshold = row.threshold if row.threshold is not None else self.threshold
        if row.value is None or threshold is None:
            return None
        if self.lower_is_better:
            return row.value <= threshold
        return row.value >= threshold

    def values(self, system: str) -> dict[str, float]:
        """case -> value of the system's unperturbed answers that have one."""
        return {
            case: row.value
            for case, row in self.plain.get(system, {}).items()
            if row.value is not None
        }

    def errors(self, system: str) -> int:
        """Cases where the evaluator failed on the system's answer (not the system's failure)."""
        return sum(self.status(system, case) == "error" for case in self.plain.get(system, {}))

    def status(self, system: str, case: str) -> Status:
        """What ``system`` has for ``case`` (see the module docstring)."""
        row = self.plain.get(system, {}).get(case)
        if row is not None and row.value is not None:
            return "value"
        line = self.lines.get(system, {}).get(case)
        if line is not None and not line.answered:
            return "unanswered"
        if row is not None:
            return "error"
        return "skipped" if line is not None else "not_asked"

    def answer_error(self, system: str, case: str) -> str | None:
        """Why the system gave no answer to ``case`` (None when it answered)."""
        line = self.lines.get(system, {}).get(case)
        return None if line is None or line.answered else line.error

    def cases(self) -> list[str]:
        """The score's cases, in first-seen order: every case some system has a row for, and
        every case some system left unanswered where the evaluator would have run (it lacked
        only what the system was to produce: a response, contexts)."""
        seen: dict[str, None] = {}
        for system in self.systems:
            seen.update(dict.fromkeys(self.plain.get(system, {})))
            for case, line in self.lines.get(system, {}).items():
                if not line.answered and self._would_run(line):
                    seen.setdefault(case)
        return list(seen)

    def _would_run(self, line: AnswerLine) -> bool:
        """Whether the evaluator would have scored the line, had the system answered: it was
        skipped for lack of what the system was to produce, and of nothing the test case
        itself lacked (a query, a reference); an evaluator that was not run at all on the
        system's answers does not count it."""
        missing = [m for evaluator, m in line.skipped if evaluator == self.evaluator]
        return bool(missing) and all(set(m) <= SYSTEM_FIELDS for m in missing)


def group_scores(rows: Iterable[ScoreRow], answers: Sequence[AnswerLine] = ()) -> list[ScoreGroup]:
    """Rows grouped by score name, in the order the names first appear.

    A system that left a case unanswered is in every group, so one whose answers all went
    unanswered still shows (with nothing to its name but the unanswered cases).
    """
    groups: dict[str, ScoreGroup] = {}
    directions: dict[str, Counter[str]] = {}
    thresholds: dict[str, tuple[Counter[float], Counter[float]]] = {}
    systems: dict[str, None] = {}
    for row in rows:
        systems.setdefault(row.system)
        group = groups.get(row.name)
        if group is None:
            group = groups[row.name] = ScoreGroup(row.name, row.evaluator)
            directions[row.name] = Counter()
            thresholds[row.name] = (Counter(), Counter())
        directions[row.name][row.direction] += 1
        if row.threshold is not None:
            thresholds[row.name][row.perturbation is not None][row.threshold] += 1
        plain = group.plain.setdefault(row.system, {})
        if row.perturbation is None:
            if row.case in plain:
                group.repeated += 1
            else:
                plain[row.case] = row
        else:
            by_name = group.perturbed.setdefault(row.system, {}).setdefault(row.case, {})
            by_name.setdefault(row.perturbation, row)
    lines: dict[str, dict[str, AnswerLine]] = {}
    for answer in answers:
        systems.setdefault(answer.system)
        if answer.perturbation is None:
            lines.setdefault(answer.system, {}).setdefault(answer.case, answer)
    for name, group in groups.items():
        group.direction = directions[name].most_common(1)[0][0]  # every group has a row
        unperturbed, perturbed = thresholds[name]
        group.thresholds = (unperturbed or perturbed).most_common()
        group.threshold = group.thresholds[0][0] if group.thresholds else None
        group.lines = lines
        group.systems = [
            s
            for s in systems
            if s in group.plain
            or s in group.perturbed
            or any(not x.answered and group._would_run(x) for x in lines.get(s, {}).values())
        ]
        for system in group.systems:
            group.plain.setdefault(system, {})
            group.perturbed.setdefault(system, {})
    return list(groups.values())
