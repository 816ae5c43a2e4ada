"""Score rows grouped for a report: per score name, per system, per test case.

``group_scores(rows)`` gives one ``ScoreGroup`` per score name (in first-seen order). A group
holds each system's unperturbed answer per case (the leaderboard's and heatmap's values) and its
perturbed answers (for flipped verdicts), plus the direction and threshold most of its rows
carry. The verdict of a row is its ``passed``; a row without one is judged against the threshold.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from ragtrace.report.load import DIRECTIONS, ScoreRow

T = TypeVar("T")


@dataclass(slots=True)
class ScoreGroup:
    """Every row of one score name.

    Attributes:
        name: The score name, e.g. ``faithfulness`` or ``looping.unique_sentences``.
        evaluator: The evaluator that produced it.
        direction: ``higher_is_better`` or ``lower_is_better`` (the most common among rows).
        threshold: The most common threshold, None when no row has one.
        systems: Systems in first-seen order.
        plain: system -> case -> the unperturbed row (the first one when a case repeats).
        perturbed: system -> case -> perturbation name -> row.
        repeated: Unperturbed rows dropped because the system already answered that case.
    """

    name: str
    evaluator: str
    direction: str = DIRECTIONS[0]
    threshold: float | None = None
    systems: list[str] = field(default_factory=list)
    plain: dict[str, dict[str, ScoreRow]] = field(default_factory=dict)
    perturbed: dict[str, dict[str, dict[str, ScoreRow]]] = field(default_factory=dict)
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
        if row.value is None or self.threshold is None:
            return None
        if self.lower_is_better:
            return row.value <= self.threshold
        return row.value >= self.threshold

    def values(self, system: str) -> dict[str, float]:
        """case -> value of the system's unperturbed answers that have one."""
        return {
            case: row.value
            for case, row in self.plain.get(system, {}).items()
            if row.value is not None
        }

    def errors(self, system: str) -> int:
        """Unperturbed answers of the system without a value (evaluator errors)."""
        return sum(row.value is None for row in self.plain.get(system, {}).values())

    def cases(self) -> list[str]:
        """Every case some system answered without perturbation, in first-seen order."""
        seen: dict[str, None] = {}
        for system in self.systems:
            seen.update(dict.fromkeys(self.plain.get(system, {})))
        return list(seen)


def group_scores(rows: Iterable[ScoreRow]) -> list[ScoreGroup]:
    """Rows grouped by score name, in the order the names first appear."""
    groups: dict[str, ScoreGroup] = {}
    directions: dict[str, Counter[str]] = {}
    thresholds: dict[str, Counter[float]] = {}
    for row in rows:
        group = groups.get(row.name)
        if group is None:
            group = groups[row.name] = ScoreGroup(row.name, row.evaluator)
            directions[row.name], thresholds[row.name] = Counter(), Counter()
        directions[row.name][row.direction] += 1
        if row.threshold is not None:
            thresholds[row.name][row.threshold] += 1
        if row.system not in group.plain:
            group.systems.append(row.system)
            group.plain[row.system] = {}
            group.perturbed[row.system] = {}
        if row.perturbation is None:
            if row.case in group.plain[row.system]:
                group.repeated += 1
            else:
                group.plain[row.system][row.case] = row
        else:
            by_name = group.perturbed[row.system].setdefault(row.case, {})
            by_name.setdefault(row.perturbation, row)
    for name, group in groups.items():
        group.direction = _most_common(directions[name]) or DIRECTIONS[0]
        group.threshold = _most_common(thresholds[name])
    return list(groups.values())


def _most_common(counts: Counter[T]) -> T | None:
    ranked: Sequence[tuple[T, int]] = counts.most_common(1)
    return ranked[0][0] if ranked else None
