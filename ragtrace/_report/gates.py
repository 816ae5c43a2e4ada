"""``--fail-if`` gates: conditions on the report's numbers that fail a CI run when they hold.

Grammar (whitespace around the operator is optional)::

    gate    := SCORE "." STAT [ "[" FILTER { "," FILTER } "]" ] OP NUMBER
    STAT    := n | errors | unanswered | mean | mean_low | mean_high | pass_rate
             | pass_rate_low | pass_rate_high | flips | diff | diff_low | diff_high
    FILTER  := system "=" NAME | model "=" NAME | vs "=" NAME
    OP      := < | <= | > | >= | == | !=

``SCORE`` is a score name as the report lists it (it may hold dots: ``looping.unique_sentences``
is score ``looping.unique_sentences``, stat after the last dot). ``model=`` is another spelling of
``system=``. Without a system the gate is checked for every system and fails if it holds for any.
``diff*`` is ``mean(system) - mean(vs)`` and its interval, and needs both ``system`` and ``vs``.
Pass rates are fractions (0.9, not 90). Examples::

    faithfulness.pass_rate < 0.9                       any system passing under 90% fails
    faithfulness.mean[model=gpt-x] < 0.8
    faithfulness.diff_low[system=prompt-v2,vs=prompt-v1] < -0.02   v2 may not be clearly worse

The gates read the numbers of the report's JSON (3 decimals), so a gate and the page agree. A
statistic that has no value (no scores for that system) fails its gate: a gate must not pass on
missing data. ``parse_gate`` raises ``GateError`` on bad syntax, ``check_gate`` on a score,
system or comparison the report does not have.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragtrace._config.suggestions import suggest

SYSTEM_STATS = (
    "n", "errors", "unanswered", "mean", "mean_low", "mean_high",
    "pass_rate", "pass_rate_low", "pass_rate_high", "flips",
)  # fmt: skip
DIFF_STATS = {"diff": "diff", "diff_low": "low", "diff_high": "high"}
STATS = (*SYSTEM_STATS, *DIFF_STATS)
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
    "<": operator.lt, ">": operator.gt,
}  # fmt: skip
_GATE = re.compile(
    r"^\s*(?P<score>\S.*)\.(?P<stat>[A-Za-z_]+)\s*(?:\[(?P<filters>[^\]]*)\])?"
    r"\s*(?P<op><=|>=|==|!=|<|>)\s*(?P<number>\S+)\s*$"
)


class GateError(ValueError):
    """A gate that cannot be read or checked; the message says why and how to fix it."""


@dataclass(frozen=True, slots=True)
class Gate:
    """A parsed ``--fail-if`` expression."""

    expression: str
    score: str
    stat: str
    op: str
    number: float
    system: str | None = None
    vs: str | None = None


@dataclass(slots=True)
class GateResult:
    """A checked gate: ``failed`` when its condition held for some system (or had no value)."""

    gate: Gate
    failed: bool = False
    checks: list[dict[str, Any]] = field(default_factory=list)

    def messages(self) -> list[str]:
        """One line per check that failed the gate."""
        return [c["message"] for c in self.checks if c["failed"]]

    def as_json(self) -> dict[str, Any]:
        return {"expression": self.gate.expression, "failed": self.failed, "checks": self.checks}


def parse_gate(expression: str) -> Gate:
    """Read one gate expression (see the module docstring).

    Raises:
        GateError: The expression does not follow the grammar.
    """
    match = _GATE.match(expression)
    if match is None:
        raise GateError(
            f"cannot read gate {expression!r}; expected SCORE.STAT[system=NAME] OP NUMBER, "
            "e.g. 'faithfulness.pass_rate < 0.9'"
        )
    stat = match["stat"]
    if stat not in STATS:
        raise GateError(f"unknown statistic {stat!r} in {expression!r}{suggest(stat, STATS)}")
    try:
        number = float(match["number"])
    except ValueError:
        raise GateError(f"{match['number']!r} in {expression!r} is not a number") from None
    if not math.isfinite(number):
        raise GateError(f"{match['number']!r} in {expression!r} is not a finite number")
    filters = _filters(match["filters"], expression)
    gate = Gate(expression, match["score"].strip(), stat, match["op"], number, **filters)
    if stat in DIFF_STATS and (gate.system is None or gate.vs is None):
        raise GateError(f"{expression!r}: {stat} needs [system=A,vs=B] (the mean of A minus B's)")
    if stat not in DIFF_STATS and gate.vs is not None:
        raise GateError(f"{expression!r}: vs= goes with diff, diff_low or diff_high only")
    return gate


def _filters(text: str | None, expression: str) -> dict[str, str]:
    found: dict[str, str] = {}
    if text is None:
        return found
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        key = "system" if key == "model" else key
        if not sep or not value or key not in ("system", "vs"):
            raise GateError(
                f"bad filter {part.strip()!r} in {expression!r}; use system=NAME (or model=NAME) "
                "and, for diff, vs=NAME"
            )
        if key in found:
            raise GateError(f"{key}= given twice in {expression!r}")
        found[key] = value
    return found


def check_gate(gate: Gate, report: Mapping[str, Any]) -> GateResult:
    """Check ``gate`` against ``build.build_report``'s data.

    Raises:
        GateError: The report has no such score, system or comparison.
    """
    sections = {s["name"]: s for s in report["scores"]}
    section = sections.get(gate.score)
    if section is None:
        raise _unknown(gate, "score", gate.score, list(sections))
    result = GateResult(gate)
    if gate.stat in DIFF_STATS:
        assert gate.system is not None and gate.vs is not None  # parse_gate made sure
        _known_system(gate, gate.system, report)
        _known_system(gate, gate.vs, report)
        value = _difference(section, gate.system, gate.vs, DIFF_STATS[gate.stat], gate)
        _record(result, gate, value, f"{gate.system} vs {gate.vs}")
        return result
    entries = {e["system"]: e for e in section["leaderboard"]}
    if gate.system is not None:
        _known_system(gate, gate.system, report)
    chosen = [gate.system] if gate.system is not None else list(entries)
    for system in chosen:
        entry = entries.get(system)  # a known system without this score: no value, fails
        _record(result, gate, None if entry is None else entry[gate.stat], system)
    return result


def _known_system(gate: Gate, system: str, report: Mapping[str, Any]) -> None:
    if system not in report["systems"]:
        raise _unknown(gate, "system", system, list(report["systems"]))


def _unknown(gate: Gate, what: str, name: str, known: list[str]) -> GateError:
    """A score or system the report lacks: the nearest name, else the ones it has."""
    return GateError(
        f"{gate.expression!r}: no {what} {name!r} in the report"
        + (suggest(name, known) or f"; {what}s: {', '.join(known) or 'none'}")
    )


def _record(result: GateResult, gate: Gate, value: float | None, who: str) -> None:
    if value is None:
        failed, message = True, f"{gate.expression}: {who}: no value to check (no scores)"
    else:
        failed = OPERATORS[gate.op](value, gate.number)
        message = f"{gate.expression}: {who}: {gate.stat} = {value:g}"
    result.checks.append({"system": who, "value": value, "failed": failed, "message": message})
    result.failed = result.failed or failed


def _difference(
    section: Mapping[str, Any], system: str, vs: str, key: str, gate: Gate
) -> float | None:
    for c in section["comparisons"]:
        if (c["system"], c["vs"]) == (system, vs):
            value: float | None = c[key]
            return value
        if (c["system"], c["vs"]) == (vs, system):  # stored the other way round: negate
            flipped = {"diff": c["diff"], "low": c["high"], "high": c["low"]}[key]
            return None if flipped is None else -flipped + 0.0
    names = [e["system"] for e in section["leaderboard"] if e["n"] > 0]
    if system not in names or vs not in names:
        return None  # one side has no values: nothing to compare, the gate fails
    raise GateError(
        f"{gate.expression!r}: the report has no comparison of {system!r} with {vs!r} on "
        f"{gate.score!r} (systems with scores: {', '.join(names) or 'none'}; with more than 8 "
        "systems only the best one is compared with each other)"
    )


def check_gates(gates: Sequence[Gate], report: Mapping[str, Any]) -> list[GateResult]:
    """Check every gate; the first one that cannot be checked raises ``GateError``."""
    return [check_gate(g, report) for g in gates]
