"""``ragtrace eval --list``: the evaluators by tier, the default online suite, and what each alarm
costs.

Evaluators are grouped by their registry tier (``registry.TIERS``): online, offline, LLM judges.

For every evaluator with named operating points (``ragtrace.evaluators._operating_points``), each
point's thresholds and its measured rates: the share of normal answers it fails (false alarms,
worst data set) and of bad answers it catches (detection, worst kind of bad answer), on the
locked part of the public data and on the tuning part it was chosen on, with the command that
measures them. Reads the packaged rates file only: no evaluator module or model is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragtrace.evaluators import _operating_points as operating_points
from ragtrace.evaluators._registry import ONLINE_SUITE, TIERS, by_tier

_MEASURED_ALSO = ("toxicity",)  # measured beside the suite, left out of it


def format_listing(only: Sequence[str] | None = None) -> str:
    """The listing as text; ``only`` narrows it to those evaluators (unknown ones are said so)."""
    tiers = by_tier()
    known = {n for listed in tiers.values() for n in listed}
    chosen = list(only) if only else sorted(known)
    lines = [
        "Evaluators by tier (* = in the default online suite, registry.ONLINE_SUITE). Each",
        "default score fails at most 5% of normal answers and catches at least 80% of the bad",
        "ones it names, on the locked part of public data (docs/evaluators-online.md, 'Alarms you",
        "can trust'); choose a point with --option NAME.threshold=strict|default|lenient or a",
        "number.",
    ]
    for tier, listed in tiers.items():
        shown = [n for n in chosen if n in listed]
        if shown:
            lines.extend(["", f"{TIERS[tier]}:"])
            lines.extend(line for name in shown for line in _entry(name))
    unknown = [n for n in chosen if n not in known]
    if unknown:
        lines.append("")
        lines.extend(f"  ? {name}: no such evaluator" for name in unknown)
    return "\n".join(lines) + "\n"


def _entry(name: str) -> list[str]:
    """One evaluator's lines: its name (marked if in the suite), then its operating points."""
    mark = "*" if name in ONLINE_SUITE else " "
    described = operating_points.describe(name)
    if not described:
        return [f"  {mark} {name}"]
    note = ""
    if name in _MEASURED_ALSO and name not in ONLINE_SUITE:
        note = "  (not in the default suite: below the alarm budget at every point)"
    return [f"  {mark} {name}{note}", *(f"      {line}" for line in described)]
