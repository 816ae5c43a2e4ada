"""Problems and insights of one score, as each evaluator of the catalogue reports them.

Problems:

- ``below_threshold``: a system whose mean is past the threshold (below it for a score where
  higher is better, above it where lower is better). Rows may carry different thresholds (a
  calibrated evaluator's per-task cut): each threshold is checked on the mean of the rows that
  carry it, so no row is judged against another row's threshold;
- ``flipped``: a (system, test case, perturbation) whose verdict under the perturbation differs
  from the same system's verdict on the unperturbed case. A ``regression`` went from pass to
  fail, an ``improvement`` from fail to pass.

Insights:

- ``best_system``: the best system on the score (direction-aware), only when it is clearly
  better than the runner-up (the interval of the difference keeps off 0, as printed too);
  otherwise ``no_clear_best`` says that no system is clearly ahead, and names the systems the
  leader is nonetheless clearly ahead of (``beats``);
- ``least_accurate``: with three systems or more, the last one, when clearly behind the one
  above it;
- ``hardest_case``: the test case most systems fail, among the compared cases, counted as the
  leaderboard counts it (``ranked_cases`` orders the compared cases this way: most failing
  systems first, then the worst mean value; in ``fail`` mode an unanswered case is a failure
  and takes the score's worst value in the mean).

Each finding is a JSON-ready mapping with a ``kind``, the names it is about and a ``text``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace._report.basis import Basis
from ragtrace._report.groups import ScoreGroup
from ragtrace._report.html_format import num

VERDICT_WORDS = {True: "pass", False: "fail"}


@dataclass(frozen=True, slots=True)
class RankedCase:
    """A compared test case with how many systems fail it and each system's value.

    Attributes:
        failing: Systems that fail the case, by the leaderboard's verdicts (``Basis``): in
            ``fail`` mode an unanswered case is a failure.
        judged: Systems with a verdict on the case (unanswered ones included in ``fail``).
        mean: The mean of the values the leaderboard counts for the case (an unanswered case
            taking the score's worst value in ``fail``); over the answers alone when the
            leaderboard counts none (a score without a worst value).
        values: system -> the value its answer scored (unanswered systems have none).
        unanswered: system -> why it gave no answer, for those that did not.
    """

    case: str
    failing: int
    judged: int
    mean: float | None
    values: dict[str, float | None]
    query: str | None
    unanswered: dict[str, str]


def ranked_cases(group: ScoreGroup, basis: Basis) -> list[RankedCase]:
    """The cases the leaderboard compares systems on, hardest first: most systems failing, then
    the worst mean value, both counted as the leaderboard counts them (``Basis``), so a case
    that stumped a system never sorts among the easy ones."""
    ranked = []
    for case in compared_cases(group, basis):
        values: dict[str, float | None] = {}
        unanswered: dict[str, str] = {}
        verdicts: list[bool] = []
        counted: list[float] = []
        query = None
        for system in group.systems:
            mine = basis.systems[system]
            if case in mine.verdicts:
                verdicts.append(mine.verdicts[case])
            if case in mine.values:
                counted.append(mine.values[case])
            if group.status(system, case) == "unanswered":
                unanswered[system] = group.answer_error(system, case) or "no answer"
                continue
            row = group.plain[system].get(case)
            if row is None:
                continue
            values[system] = row.value
            query = query or row.record.query
        present = counted or [v for v in values.values() if v is not None]
        mean = math.fsum(present) / len(present) if present else None
        failing = sum(not v for v in verdicts)
        ranked.append(RankedCase(case, failing, len(verdicts), mean, values, query, unanswered))

    def hardness(item: RankedCase) -> tuple[int, float]:
        goodness = math.inf if item.mean is None else group.goodness(item.mean)
        return (-item.failing, goodness)

    return sorted(ranked, key=hardness)


def compared_cases(group: ScoreGroup, basis: Basis) -> list[str]:
    """The cases the leaderboard takes systems over, in first-seen order: the shared ones, or,
    when each system is taken over its own cases, every case some system is taken over."""
    if basis.shared:
        return list(basis.cases)
    return [
        case
        for case in group.cases()
        if any(case in mine.values or case in mine.verdicts for mine in basis.systems.values())
        or (
            basis.mode == "fail"
            and any(group.status(s, case) == "unanswered" for s in group.systems)
        )
    ]


def flips(group: ScoreGroup) -> list[dict[str, Any]]:
    """Verdicts that changed under a perturbation, by system, case and perturbation."""
    found = []
    for system in group.systems:
        for case, by_name in group.perturbed.get(system, {}).items():
            base = group.plain[system].get(case)
            before = None if base is None else group.verdict(base)
            if base is None or before is None:
                continue
            for perturbation, row in by_name.items():
                after = group.verdict(row)
                if after is None or after == before:
                    continue
                found.append(
                    {
                        "system": system,
                        "case": case,
                        "perturbation": perturbation,
                        "kind": "regression" if before else "improvement",
                        "before": VERDICT_WORDS[before],
                        "after": VERDICT_WORDS[after],
                        "value_before": rounded(base.value),
                        "value_after": rounded(row.value),
                        "query": row.record.query or base.record.query,
                    }
                )
    return found


def problems(
    group: ScoreGroup,
    basis: Basis,
    leaderboard: Sequence[Mapping[str, Any]],
    flipped: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """The score's problems: systems past a threshold, then flipped verdicts."""
    found: list[dict[str, Any]] = []
    several = len(group.thresholds) > 1
    side = "above" if group.lower_is_better else "below"
    for entry in leaderboard:
        system = entry["system"]
        for threshold, mean, n in _means_by_threshold(group, basis, system, entry):
            past = mean > threshold if group.lower_is_better else mean < threshold
            if not past:
                continue
            gave_none = _unanswered_with(group, basis, system, threshold) if several else 0
            over = (
                f" over the {n} compared case(s) with that threshold"
                + (f" ({gave_none} of them unanswered)" if gave_none else "")
                if several
                else ""
            )
            found.append(
                {
                    "kind": "below_threshold",
                    "system": system,
                    "mean": rounded(mean),
                    "threshold": threshold,
                    "n": n,
                    "text": f"{system}: mean {group.name} {mean:.3f}{over} is {side} the "
                    f"threshold {threshold:g}",
                }
            )
    for flip in flipped:
        found.append(
            {
                "kind": "flipped",
                "flip": flip["kind"],
                "system": flip["system"],
                "case": flip["case"],
                "perturbation": flip["perturbation"],
                "text": f"{flip['system']}: case {flip['case']} went from {flip['before']} to "
                f"{flip['after']} under '{flip['perturbation']}' "
                f"({num(flip['value_before'])} -> {num(flip['value_after'])})",
            }
        )
    return found


def _unanswered_with(group: ScoreGroup, basis: Basis, system: str, threshold: float) -> int:
    """Of the system's compared cases that take ``threshold``, those it left unanswered (they
    have no row: they take the most common threshold)."""
    if threshold != group.threshold:
        return 0
    return sum(
        case not in group.plain[system] or group.status(system, case) == "unanswered"
        for case in basis.systems[system].values
    )


def _means_by_threshold(
    group: ScoreGroup, basis: Basis, system: str, entry: Mapping[str, Any]
) -> list[tuple[float, float, int]]:
    """``(threshold, mean, n)`` of the system's compared values, per threshold the rows carry:
    the leaderboard's mean against the threshold when there is one (an unanswered case has no
    row: it takes the most common one)."""
    if len(group.thresholds) <= 1:
        if group.threshold is None or entry["mean"] is None:
            return []
        return [(group.threshold, entry["mean"], entry["n"])]
    by_threshold: dict[float, list[float]] = {}
    rows = group.plain[system]
    for case, value in basis.systems[system].values.items():
        row = rows.get(case)
        threshold = row.threshold if row is not None else None
        threshold = group.threshold if threshold is None else threshold
        if threshold is not None:
            by_threshold.setdefault(threshold, []).append(value)
    return [
        (t, math.fsum(vs) / len(vs), len(vs))
        for t, _ in group.thresholds
        if (vs := by_threshold.get(t))
    ]


def insights(
    group: ScoreGroup,
    leaderboard: Sequence[Mapping[str, Any]],
    comparisons: Sequence[Mapping[str, Any]],
    hardest: Sequence[RankedCase],
    basis: Basis,
) -> list[dict[str, Any]]:
    """The clearly best system, the clearly least accurate one (three systems or more) and the
    hardest compared case (when some system fails it)."""
    found: list[dict[str, Any]] = []
    scored = [e for e in leaderboard if e["mean"] is not None]
    direction = "lower is better" if group.lower_is_better else "higher is better"
    if len(scored) >= 2:
        best, runner_up = scored[0], scored[1]
        versus = _comparison(comparisons, best["system"], runner_up["system"])
        if versus is not None and versus["clear"]:
            found.append(
                {
                    "kind": "best_system",
                    "system": best["system"],
                    "mean": best["mean"],
                    "text": f"best on {group.name}: {best['system']} (mean {best['mean']:.3f} "
                    f"[{num(best['mean_low'])}, {num(best['mean_high'])}], {direction}; "
                    f"clearly ahead of {runner_up['system']})",
                }
            )
        else:
            beats = [
                e["system"]
                for e in scored[2:]
                if (c := _comparison(comparisons, best["system"], e["system"])) and c["clear"]
            ]
            ahead = f"; it is clearly ahead of {', '.join(beats)}" if beats else ""
            found.append(
                {
                    "kind": "no_clear_best",
                    "systems": [best["system"], runner_up["system"]],
                    "beats": beats,
                    "text": f"no system is clearly best on {group.name}: {best['system']} "
                    f"leads {runner_up['system']}, but the interval of the difference "
                    f"includes 0{ahead}",
                }
            )
    if len(scored) >= 3:
        last, above = scored[-1], scored[-2]
        versus = _comparison(comparisons, above["system"], last["system"])
        if versus is not None and versus["clear"]:
            found.append(
                {
                    "kind": "least_accurate",
                    "system": last["system"],
                    "mean": last["mean"],
                    "text": f"least accurate on {group.name}: {last['system']} (mean "
                    f"{last['mean']:.3f}, clearly behind {above['system']})",
                }
            )
    if hardest and hardest[0].failing > 0:
        top = hardest[0]
        unanswered = f", {len(top.unanswered)} of them unanswered" if top.unanswered else ""
        found.append(
            {
                "kind": "hardest_case",
                "case": top.case,
                "failing": top.failing,
                "judged": top.judged,
                "mean": rounded(top.mean),
                "query": top.query,
                "text": f"hardest case: {top.case}: {top.failing} of {top.judged} system(s) "
                f"fail it{unanswered} (mean {num(rounded(top.mean))})",
            }
        )
    return found


def _comparison(
    comparisons: Sequence[Mapping[str, Any]], a: str, b: str
) -> Mapping[str, Any] | None:
    return next((c for c in comparisons if {c["system"], c["vs"]} == {a, b}), None)


def extremes(
    values: Mapping[str, float], low: str, high: str, text: Callable[[str, str], str]
) -> list[dict[str, Any]]:
    """Insights of kinds ``low`` and ``high``: the systems with the lowest and the highest value
    (when two or more differ; ties broken by name), each said by ``text(kind, system)``."""
    if len(values) < 2 or len(set(values.values())) < 2:
        return []
    lowest = min(values, key=lambda s: (values[s], s))
    highest = max(values, key=lambda s: (values[s], s))
    return [
        {"kind": kind, "system": system, "value": values[system], "text": text(kind, system)}
        for kind, system in ((low, lowest), (high, highest))
    ]


def clear_of_zero(low: float | None, high: float | None) -> bool:
    """Whether the interval [low, high] keeps off 0 both as computed and as printed (3
    decimals): an interval printed as [+0.000, +0.190] touches 0 and is never clear."""
    if low is None or high is None:
        return False
    above = low > 0 and (rounded(low) or 0.0) > 0
    below = high < 0 and (rounded(high) or 0.0) < 0
    return above or below


def rounded(value: float | None, digits: int = 3) -> float | None:
    """``value`` as the report shows it (3 decimals, never -0.0); None stays None."""
    return None if value is None else round(value, digits) + 0.0
