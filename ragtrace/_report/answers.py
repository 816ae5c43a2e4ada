"""How each system answered, beside what its answers scored: reliability, latency and cost.

``answer_stats(lines, systems)`` counts, per system, the unperturbed cases it was asked and those
it left unanswered (with the most common reasons), and summarises the latency and the usage its
answers reported, over every answered line (perturbed ones included: each is a real call)::

    {"asked": 30, "answered": 27, "unanswered": 3, "unanswered_share": 0.1,
     "reasons": [{"error": "TimeoutError: ...", "count": 3}],
     "latency": {"n": 27, "mean_s": 0.41, "median_s": 0.38, "p95_s": 0.9},
     "usage": {"n": 27, "input_tokens": 812.0, "output_tokens": 64.0, "cost_usd": 0.0012}}

``latency`` and ``usage`` are None when no line reported them; usage figures are means per
answer. ``answer_insights`` names, after H2O Eval Studio's insights, the fastest and slowest
system (median latency) and the cheapest and most expensive (mean cost per answer, else mean
tokens), when at least two systems reported them and they differ.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ragtrace._report.findings import extremes, rounded
from ragtrace._report.load import AnswerLine
from ragtrace._report.stats import quantile

MAX_REASONS = 3
REASON_CHARS = 200


def answer_stats(lines: Iterable[AnswerLine], systems: Sequence[str]) -> dict[str, Any]:
    """Per system (in ``systems`` order): asked, unanswered, reasons, latency, usage."""
    by_system: dict[str, list[AnswerLine]] = {s: [] for s in systems}
    for line in lines:
        by_system.setdefault(line.system, []).append(line)
    return {system: _stats(found) for system, found in by_system.items()}


def _stats(lines: Sequence[AnswerLine]) -> dict[str, Any]:
    plain: dict[str, AnswerLine] = {}
    for line in lines:
        if line.perturbation is None:
            plain.setdefault(line.case, line)
    unanswered = [line for line in plain.values() if not line.answered]
    reasons = Counter((line.error or "no answer")[:REASON_CHARS] for line in unanswered)
    answered = [line for line in lines if line.answered]
    asked = len(plain)
    return {
        "asked": asked,
        "answered": asked - len(unanswered),
        "unanswered": len(unanswered),
        "unanswered_share": rounded(len(unanswered) / asked) if asked else None,
        "reasons": [{"error": e, "count": n} for e, n in reasons.most_common(MAX_REASONS)],
        "latency": _latency([x.latency_s for x in answered if x.latency_s is not None]),
        "usage": _usage(answered),
    }


def _latency(seconds: list[float]) -> dict[str, Any] | None:
    if not seconds:
        return None
    ordered = sorted(seconds)
    return {
        "n": len(ordered),
        "mean_s": rounded(math.fsum(ordered) / len(ordered)),
        "median_s": rounded(quantile(ordered, 0.5)),
        "p95_s": rounded(quantile(ordered, 0.95)),
    }


def _usage(lines: Sequence[AnswerLine]) -> dict[str, Any] | None:
    found: dict[str, Any] = {}
    for key in ("input_tokens", "output_tokens", "cost_usd"):
        values = [float(v) for x in lines if (v := getattr(x, key)) is not None]
        if values:
            found[key] = rounded(math.fsum(values) / len(values), 6)
            found[f"{key}_n"] = len(values)
    return found or None


def answer_insights(stats: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Fastest and slowest, cheapest and most expensive system (when two or more differ)."""
    found: list[dict[str, Any]] = []
    latency = {s: a["latency"]["median_s"] for s, a in stats.items() if a["latency"] is not None}
    found += _extremes(latency, "fastest", "slowest", "median latency", "{:.3f} s")
    costs = {s: a["usage"]["cost_usd"] for s, a in stats.items() if _has(a, "cost_usd")}
    if len(costs) >= 2:
        found += _extremes(costs, "cheapest", "most_expensive", "mean cost", "${:.6f}")
    else:
        tokens = {
            s: a["usage"].get("input_tokens", 0.0) + a["usage"].get("output_tokens", 0.0)
            for s, a in stats.items()
            if _has(a, "input_tokens") or _has(a, "output_tokens")
        }
        found += _extremes(tokens, "cheapest", "most_expensive", "mean tokens", "{:.0f}")
    reliable = {s: a["unanswered_share"] for s, a in stats.items() if a["asked"]}
    if len(reliable) >= 2 and max(reliable.values()) > 0:
        share = max(reliable.values())
        tied = sorted(s for s, v in reliable.items() if v == share)
        if len(tied) == len(reliable):
            return found  # all equally reliable: no system is the least
        each = ", ".join(f"{s} ({stats[s]['unanswered']} of {stats[s]['asked']})" for s in tied)
        text = (
            f"least reliable, tied: {each} case(s) left unanswered"
            if len(tied) > 1
            else f"least reliable: {tied[0]} left {stats[tied[0]]['unanswered']} of "
            f"{stats[tied[0]]['asked']} case(s) unanswered"
        )
        found.append(
            {
                "kind": "least_reliable",
                "system": tied[0],
                "tied": tied,
                "value": share,
                "text": text,
            }
        )
    return found


def _has(stats: Mapping[str, Any], key: str) -> bool:
    return stats["usage"] is not None and key in stats["usage"]


def _extremes(
    values: Mapping[str, float], low_kind: str, high_kind: str, what: str, fmt: str
) -> list[dict[str, Any]]:
    words = {"most_expensive": "most expensive"}
    return extremes(
        values,
        low_kind,
        high_kind,
        lambda kind, system: (
            f"{words.get(kind, kind)}: {system} ({what} {fmt.format(values[system])})"
        ),
    )
