"""The report as data: every number the HTML page shows and CI gates read, JSON-ready.

``build_report(load_scores(paths), ReportOptions())`` gives a mapping::

    {"format": "ragtrace.report/1", "settings": {...}, "input": {files, bad lines, messages},
     "systems": [...], "headline": [one comparison per score: best vs runner-up],
     "summary": {"scores", "problems", "insights", "flips"},
     "scores": [{"name", "evaluator", "direction", "threshold",
                 "leaderboard": [{"rank", "system", "n", "errors", "mean", "mean_low",
                                  "mean_high", "pass_rate", "pass_rate_low", "pass_rate_high",
                                  "judged", "perturbed", "flips"}],
                 "comparisons": [{"system", "vs", "diff", "low", "high", "paired", "n", "left_out",
                                  "clear"}],
                 "problems": [...], "insights": [...], "flips": [...],
                 "heatmap": {"total_cases", "shown", "cases": [{"case", "query", "failing",
                             "judged", "mean", "values": {system: value}}]},
                 "histograms": {"edges": [...], "counts": {system: [...]}},
                 "worst": [...]}]}

Numbers are rounded to 3 decimals (``findings.rounded``) here, once: the page prints these
numbers and the gates compare these numbers, so the three always agree. The leaderboard, the
comparisons and the heatmap use unperturbed answers; perturbed ones feed the flips and the worst
examples. Differences are ``mean(system) - mean(vs)``, paired by case over the cases both
systems have a value for when those are at least half of each system's (``left_out``: how many
cases only one of them has, left out of the difference), else unpaired over all values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ragtrace.report import findings
from ragtrace.report.examples import worst_examples
from ragtrace.report.findings import rounded
from ragtrace.report.groups import ScoreGroup, group_scores
from ragtrace.report.load import Loaded, clean, systems_of
from ragtrace.report.stats import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, Bootstrap

FORMAT = "ragtrace.report/1"
MAX_PAIRWISE_SYSTEMS = 8  # past this, each system is compared with the best one only
PAIR_SHARE = 0.5  # pair by case when the common cases are at least this share of each side's
MAX_FLIPS_LISTED = 200
QUERY_PREVIEW_CHARS = 200


@dataclass(frozen=True, slots=True)
class ReportOptions:
    """How the report is computed.

    Attributes:
        resamples: Bootstrap resamples per interval.
        level: Confidence level of every interval.
        seed: Bootstrap seed (same seed and input, same report).
        max_cases: Heatmap columns: the hardest cases, the rest counted in a note.
        worst: Worst examples shown per score.
        bins: Histogram bins.
    """

    resamples: int = DEFAULT_RESAMPLES
    level: float = DEFAULT_LEVEL
    seed: int = DEFAULT_SEED
    max_cases: int = 40
    worst: int = 5
    bins: int = 10

    def __post_init__(self) -> None:
        Bootstrap(self.resamples, self.level, self.seed)  # validates resamples and level
        for name in ("max_cases", "bins"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.worst < 0:
            raise ValueError(f"worst must be >= 0, got {self.worst}")


def build_report(loaded: Loaded, options: ReportOptions | None = None) -> dict[str, Any]:
    """The report of the loaded scores (see the module docstring for its shape)."""
    options = options or ReportOptions()
    boot = Bootstrap(options.resamples, options.level, options.seed)
    scores = [_score_section(g, boot, options) for g in group_scores(loaded.rows)]
    headline = [s["comparisons"][0] | {"score": s["name"]} for s in scores if s["comparisons"]]
    headline.sort(key=lambda c: (not c["clear"], -abs(c["diff"] or 0.0), c["score"]))
    return {
        "format": FORMAT,
        "settings": asdict(options),
        "input": {
            "files": [asdict(f) for f in loaded.files],
            "bad_lines": loaded.bad_lines,
            "problems": loaded.problems,
            "messages": list(loaded.messages),
        },
        "systems": systems_of(loaded.rows),
        "headline": headline,
        "summary": {
            "scores": len(scores),
            "problems": sum(len(s["problems"]) for s in scores),
            "insights": sum(len(s["insights"]) for s in scores),
            "flips": sum(s["flip_count"] for s in scores),
        },
        "scores": scores,
    }


def _score_section(group: ScoreGroup, boot: Bootstrap, options: ReportOptions) -> dict[str, Any]:
    flipped = findings.flips(group)
    leaderboard = _leaderboard(group, boot, flipped)
    ranked = findings.ranked_cases(group)
    return {
        "name": group.name,
        "evaluator": group.evaluator,
        "direction": group.direction,
        "threshold": group.threshold,
        "repeated_cases": group.repeated,
        "leaderboard": leaderboard,
        "comparisons": _comparisons(group, boot, leaderboard),
        "problems": findings.problems(group, leaderboard, flipped),
        "insights": findings.insights(group, leaderboard, ranked),
        "flip_count": len(flipped),
        "flips": flipped[:MAX_FLIPS_LISTED],
        "heatmap": _heatmap(group, ranked, options.max_cases),
        "histograms": _histograms(group, options.bins),
        "worst": worst_examples(group, options.worst),
    }


def _leaderboard(
    group: ScoreGroup, boot: Bootstrap, flipped: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    entries = []
    for system in group.systems:
        rows = [r for r in group.plain[system].values() if r.value is not None]
        verdicts = [v for r in rows if (v := group.verdict(r)) is not None]
        key = f"{group.name}\x00{system}"
        mean = boot.mean([r.value for r in rows if r.value is not None], key + "\x00mean")
        rate = boot.rate(verdicts, key + "\x00pass_rate")
        perturbed = sum(len(by_name) for by_name in group.perturbed[system].values())
        entries.append(
            (
                mean.value,
                rate.value,
                {
                    "rank": 0,
                    "system": system,
                    "n": mean.n,
                    "errors": group.errors(system),
                    "mean": rounded(mean.value),
                    "mean_low": rounded(mean.low),
                    "mean_high": rounded(mean.high),
                    "pass_rate": rounded(rate.value),
                    "pass_rate_low": rounded(rate.low),
                    "pass_rate_high": rounded(rate.high),
                    "judged": rate.n,
                    "perturbed": perturbed,
                    "flips": sum(f["system"] == system for f in flipped),
                },
            )
        )

    def order(item: tuple[float | None, float | None, dict[str, Any]]) -> tuple[Any, ...]:
        mean, rate, entry = item
        goodness = -math.inf if mean is None else group.goodness(mean)
        return (-goodness, -(rate if rate is not None else -1.0), entry["system"])

    ranked = [entry for *_, entry in sorted(entries, key=order)]
    for rank, entry in enumerate(ranked, 1):
        entry["rank"] = rank
    return ranked


def _comparisons(
    group: ScoreGroup, boot: Bootstrap, leaderboard: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    systems = [e["system"] for e in leaderboard if e["n"] > 0]
    if len(systems) <= MAX_PAIRWISE_SYSTEMS:
        pairs = [(a, b) for i, a in enumerate(systems) for b in systems[i + 1 :]]
    else:
        pairs = [(systems[0], b) for b in systems[1:]]
    found = []
    for a, b in pairs:
        va, vb = group.values(a), group.values(b)
        common = sorted(va.keys() & vb.keys())
        paired = _pairable(len(common), len(va), len(vb))
        key = f"{group.name}\x00{a}\x00{b}\x00diff"
        if paired:
            diff = boot.difference([va[c] for c in common], [vb[c] for c in common], key, True)
        else:
            diff = boot.difference(list(va.values()), list(vb.values()), key, False)
        left_out = len(va) + len(vb) - 2 * len(common) if paired else 0
        found.append(
            {
                "system": a,
                "vs": b,
                "diff": rounded(diff.value),
                "low": rounded(diff.low),
                "high": rounded(diff.high),
                "paired": paired,
                "n": diff.n,
                "left_out": left_out,
                "clear": diff.excludes_zero(),
                "direction": group.direction,
                "text": _comparison_text(group, a, b, diff.value, diff.low, diff.high),
            }
        )
    return found


def _pairable(common: int, n_a: int, n_b: int) -> bool:
    """Pair by case when the cases both systems have a value for are at least ``PAIR_SHARE``
    of each system's (and at least 2): a few cases one system failed on are left out of the
    difference rather than turning the whole comparison unpaired."""
    return common >= 2 and common >= PAIR_SHARE * max(n_a, n_b)


def _comparison_text(
    group: ScoreGroup,
    a: str,
    b: str,
    diff: float | None,
    low: float | None,
    high: float | None,
) -> str:
    if diff is None or low is None or high is None:
        return f"{a} vs {b} on {group.name}: no values to compare"
    numbers = f"{rounded(diff):+.3f} [{rounded(low):+.3f}, {rounded(high):+.3f}]"
    if low > 0 or high < 0:
        better = a if group.goodness(diff) > 0 else b
        worse = b if better == a else a
        note = " (lower is better)" if group.lower_is_better else ""
        return f"{better} is better than {worse} on {group.name} by {numbers}{note}"
    return f"{a} vs {b} on {group.name}: {numbers}, no clear difference (the interval includes 0)"


def _heatmap(group: ScoreGroup, ranked: Sequence[Any], max_cases: int) -> dict[str, Any]:
    shown = ranked[:max_cases]
    return {
        "systems": list(group.systems),
        "total_cases": len(ranked),
        "shown": len(shown),
        "cases": [
            {
                "case": c.case,
                "query": None if c.query is None else clean(c.query, QUERY_PREVIEW_CHARS),
                "failing": c.failing,
                "judged": c.judged,
                "mean": rounded(c.mean),
                "values": {s: rounded(v) for s, v in c.values.items()},
            }
            for c in shown
        ],
    }


def _histograms(group: ScoreGroup, bins: int) -> dict[str, Any]:
    values = {s: list(group.values(s).values()) for s in group.systems}
    every = [v for vs in values.values() for v in vs]
    low, high = 0.0, 1.0
    if every and (min(every) < 0.0 or max(every) > 1.0):
        low, high = min(every), max(every)
        if low == high:
            low, high = low - 0.5, high + 0.5
    width = (high - low) / bins
    edges = [rounded(low + i * width) for i in range(bins + 1)]
    counts = {}
    for system, vs in values.items():
        row = [0] * bins
        for v in vs:
            row[min(bins - 1, max(0, int((v - low) / width)))] += 1
        counts[system] = row
    return {"edges": edges, "counts": counts}
