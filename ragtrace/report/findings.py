"""Problems and insights of one score, as each evaluator of the catalogue reports them.

Problems:

- ``below_threshold``: a system whose mean is past the threshold (below it for a score where
  higher is better, above it where lower is better);
- ``flipped``: a (system, test case, perturbation) whose verdict under the perturbation differs
  from the same system's verdict on the unperturbed case (it moved above or below the threshold).

Insights:

- ``best_system``: the best system on the score (direction-aware), when there are two or more;
- ``hardest_case``: the test case most systems fail (``ranked_cases`` orders all cases this way:
  most failing systems first, then the worst mean value).

Each finding is a JSON-ready mapping with a ``kind``, the names it is about and a ``text``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtrace.report.groups import ScoreGroup

VERDICT_WORDS = {True: "pass", False: "fail"}


@dataclass(frozen=True, slots=True)
class RankedCase:
    """A test case with how many systems fail it and each system's value."""

    case: str
    failing: int
    judged: int
    mean: float | None
    values: dict[str, float | None]
    query: str | None


def ranked_cases(group: ScoreGroup) -> list[RankedCase]:
    """Every unperturbed case, hardest first: most systems failing, then the worst mean."""
    ranked = []
    for case in group.cases():
        values: dict[str, float | None] = {}
        verdicts: list[bool] = []
        query = None
        for system in group.systems:
            row = group.plain[system].get(case)
            if row is None:
                continue
            values[system] = row.value
            query = query or row.record.query
            verdict = group.verdict(row)
            if verdict is not None:
                verdicts.append(verdict)
        present = [v for v in values.values() if v is not None]
        mean = math.fsum(present) / len(present) if present else None
        failing = sum(not v for v in verdicts)
        ranked.append(RankedCase(case, failing, len(verdicts), mean, values, query))

    def hardness(item: RankedCase) -> tuple[int, float]:
        goodness = math.inf if item.mean is None else group.goodness(item.mean)
        return (-item.failing, goodness)

    return sorted(ranked, key=hardness)


def flips(group: ScoreGroup) -> list[dict[str, Any]]:
    """Verdicts that changed under a perturbation, by system, case and perturbation."""
    found = []
    for system in group.systems:
        for case, by_name in group.perturbed[system].items():
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
    leaderboard: Sequence[Mapping[str, Any]],
    flipped: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """The score's problems: systems past the threshold, then flipped verdicts."""
    found: list[dict[str, Any]] = []
    threshold = group.threshold
    for entry in leaderboard:
        mean = entry["mean"]
        if threshold is None or mean is None:
            continue
        past = mean > threshold if group.lower_is_better else mean < threshold
        if past:
            side = "above" if group.lower_is_better else "below"
            found.append(
                {
                    "kind": "below_threshold",
                    "system": entry["system"],
                    "mean": mean,
                    "threshold": threshold,
                    "text": f"{entry['system']}: mean {group.name} {mean:.3f} is {side} the "
                    f"threshold {threshold:g}",
                }
            )
    for flip in flipped:
        found.append(
            {
                "kind": "flipped",
                "system": flip["system"],
                "case": flip["case"],
                "perturbation": flip["perturbation"],
                "text": f"{flip['system']}: case {flip['case']} went from {flip['before']} to "
                f"{flip['after']} under '{flip['perturbation']}' "
                f"({_num(flip['value_before'])} -> {_num(flip['value_after'])})",
            }
        )
    return found


def insights(
    group: ScoreGroup, leaderboard: Sequence[Mapping[str, Any]], hardest: Sequence[RankedCase]
) -> list[dict[str, Any]]:
    """The best system (with two or more) and the hardest case (when some system fails it)."""
    found: list[dict[str, Any]] = []
    scored = [e for e in leaderboard if e["mean"] is not None]
    if len(scored) >= 2:
        best = scored[0]  # the leaderboard is ranked best first
        found.append(
            {
                "kind": "best_system",
                "system": best["system"],
                "mean": best["mean"],
                "text": f"best on {group.name}: {best['system']} (mean {best['mean']:.3f} "
                f"[{_num(best['mean_low'])}, {_num(best['mean_high'])}], "
                + ("lower is better)" if group.lower_is_better else "higher is better)"),
            }
        )
    if hardest and hardest[0].failing > 0:
        top = hardest[0]
        found.append(
            {
                "kind": "hardest_case",
                "case": top.case,
                "failing": top.failing,
                "judged": top.judged,
                "query": top.query,
                "text": f"hardest case: {top.case}: {top.failing} of {top.judged} system(s) "
                f"fail it (mean {_num(rounded(top.mean))})",
            }
        )
    return found


def rounded(value: float | None, digits: int = 3) -> float | None:
    """``value`` as the report shows it (3 decimals, never -0.0); None stays None."""
    return None if value is None else round(value, digits) + 0.0


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
