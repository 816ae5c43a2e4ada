"""The report as data: every number the HTML page shows and CI gates read, JSON-ready.

``build_report(load_scores(paths), ReportOptions())`` gives a mapping::

    {"format": "ragtrace.report/2", "settings": {...}, "input": {files, bad lines, messages},
     "systems": [...], "headline": [per score: the best system against every other one],
     "answers": {system: {asked, answered, unanswered, errors, latency, usage}},
     "failure_sources": {system: {cases, retrieval, generation, ...}},
     "insights": [most/least accurate, fastest/slowest, cheapest/most expensive, retrieval],
     "classification": [{score, systems: {system: classification report}}],
     "summary": {"scores", "problems", "insights", "flips", "unanswered"},
     "scores": [{"name", "evaluator", "direction", "threshold", "thresholds",
                 "basis": {"mode", "shared", "cases", "left_out", "worst", "note"},
                 "leaderboard": [{"rank", "system", "n", "judged", "unanswered", "errors",
                                  "mean", "mean_low", "mean_high", "pass_rate",
                                  "pass_rate_low", "pass_rate_high", "own_n", "own_mean",
                                  "perturbed", "flips"}],
                 "comparisons": [{"system", "vs", "diff", "low", "high", "paired", "n",
                                  "left_out", "clear"}],
                 "problems": [...], "insights": [...], "flips": [...],
                 "heatmap": {"total_cases", "shown", "left_out", "cases": [{"case", "query",
                             "failing", "judged", "mean", "values": {system: value},
                             "unanswered": {system: error}}]},
                 "histograms": {"edges": [...], "counts": {system: [...]}},
                 "worst": [...]}]}

Fair comparison (``ragtrace._report.basis``): every system of a score is taken over the same
cases, those every system was asked; a case a system left unanswered counts as a failure
(``unanswered="fail"``, the default) or is left out for all (``"paired"``). Means, ranks,
differences, "best" and "hardest case" all use those cases, so no system ranks higher for
skipping questions. Pass rates have Wilson intervals, means and differences percentile bootstrap
ones. Numbers are rounded to 3 decimals (``findings.rounded``) here, once: the page prints these
numbers and the gates compare these numbers, so the three always agree. The leaderboard, the
comparisons and the heatmap use unperturbed answers; perturbed ones feed the flips and the worst
examples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ragtrace._report import findings
from ragtrace._report.answers import answer_insights, answer_stats
from ragtrace._report.basis import DEFAULT_MODE, MODES, Basis, compare_on
from ragtrace._report.classification import classification_boards
from ragtrace._report.examples import worst_examples
from ragtrace._report.failure_sources import failure_insights, failure_sources
from ragtrace._report.findings import rounded
from ragtrace._report.groups import ScoreGroup, group_scores
from ragtrace._report.load import Loaded, clean, systems_of
from ragtrace._report.stats import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED, Bootstrap

FORMAT = "ragtrace.report/2"
MAX_PAIRWISE_SYSTEMS = 8  # past this, each system is compared with the best one only
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
        unanswered: ``fail`` (an unanswered case is a failure) or ``paired`` (left out for
            every system); see ``ragtrace._report.basis``.
    """

    resamples: int = DEFAULT_RESAMPLES
    level: float = DEFAULT_LEVEL
    seed: int = DEFAULT_SEED
    max_cases: int = 40
    worst: int = 5
    bins: int = 10
    unanswered: str = DEFAULT_MODE

    def __post_init__(self) -> None:
        Bootstrap(self.resamples, self.level, self.seed)  # validates resamples and level
        for name in ("max_cases", "bins"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.worst < 0:
            raise ValueError(f"worst must be >= 0, got {self.worst}")
        if self.unanswered not in MODES:
            raise ValueError(f"unanswered must be one of {MODES}, got {self.unanswered!r}")


def build_report(loaded: Loaded, options: ReportOptions | None = None) -> dict[str, Any]:
    """The report of the loaded scores (see the module docstring for its shape)."""
    options = options or ReportOptions()
    boot = Bootstrap(options.resamples, options.level, options.seed)
    groups = group_scores(loaded.rows, loaded.answers)
    bases = [compare_on(g, options.unanswered) for g in groups]
    scores = [_score_section(g, b, boot, options) for g, b in zip(groups, bases, strict=True)]
    headline = [_headline(s) for s in scores if s["comparisons"]]
    headline.sort(
        key=lambda c: (not c["clear"], not c["beats"], -abs(c["diff"] or 0.0), c["score"])
    )
    systems = systems_of(loaded.answers)
    answers = answer_stats(loaded.answers, systems)
    sources = failure_sources(groups, bases)
    insights = answer_insights(answers) + failure_insights(sources)
    return {
        "format": FORMAT,
        "settings": asdict(options),
        "input": {
            "files": [asdict(f) for f in loaded.files],
            "bad_lines": loaded.bad_lines,
            "problems": loaded.problems,
            "messages": list(loaded.messages),
        },
        "systems": systems,
        "headline": headline,
        "answers": answers,
        "failure_sources": sources,
        "insights": insights,
        "classification": classification_boards(groups, bases),
        "summary": {
            "scores": len(scores),
            "problems": sum(len(s["problems"]) for s in scores),
            "insights": sum(len(s["insights"]) for s in scores) + len(insights),
            "flips": sum(s["flip_count"] for s in scores),
            "unanswered": sum(a["unanswered"] for a in answers.values()),
        },
        "scores": scores,
    }


def _score_section(
    group: ScoreGroup, basis: Basis, boot: Bootstrap, options: ReportOptions
) -> dict[str, Any]:
    flipped = findings.flips(group)
    leaderboard = _leaderboard(group, basis, boot, flipped)
    comparisons = _comparisons(group, basis, boot, leaderboard)
    ranked = findings.ranked_cases(group, basis)
    return {
        "name": group.name,
        "evaluator": group.evaluator,
        "direction": group.direction,
        "threshold": group.threshold,
        "thresholds": [{"threshold": t, "rows": n} for t, n in group.thresholds],
        "repeated_cases": group.repeated,
        "basis": {
            "mode": basis.mode,
            "shared": basis.shared,
            "cases": len(basis.cases),
            "left_out": basis.left_out,
            "worst": basis.worst,
            "note": basis.mean_note,
        },
        "leaderboard": leaderboard,
        "comparisons": comparisons,
        "problems": findings.problems(group, basis, leaderboard, flipped),
        "insights": findings.insights(group, leaderboard, comparisons, ranked, basis),
        "flip_count": len(flipped),
        "flips": flipped[:MAX_FLIPS_LISTED],
        "heatmap": _heatmap(group, ranked, options.max_cases, len(group.cases()) - len(ranked)),
        "histograms": _histograms(group, options.bins),
        "worst": worst_examples(group, options.worst),
    }


def _leaderboard(
    group: ScoreGroup, basis: Basis, boot: Bootstrap, flipped: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    entries = []
    for system in group.systems:
        mine = basis.systems[system]
        key = f"{group.name}\x00{system}"
        mean = boot.mean(list(mine.values.values()), key + "\x00mean")
        rate = boot.rate(list(mine.verdicts.values()))
        own = list(mine.own_values.values())
        perturbed = sum(len(by_name) for by_name in group.perturbed.get(system, {}).values())
        entries.append(
            {
                "rank": 0,
                "system": system,
                "n": mean.n,
                "judged": rate.n,
                "unanswered": mine.unanswered,
                "errors": mine.errors,
                "mean": rounded(mean.value),
                "mean_low": rounded(mean.low),
                "mean_high": rounded(mean.high),
                "pass_rate": rounded(rate.value),
                "pass_rate_low": rounded(rate.low),
                "pass_rate_high": rounded(rate.high),
                "own_n": len(own),
                "own_mean": rounded(math.fsum(own) / len(own)) if own else None,
                "perturbed": perturbed,
                "flips": sum(f["system"] == system for f in flipped),
            }
        )

    def standing(entry: dict[str, Any]) -> tuple[float, float]:
        mean, rate = entry["mean"], entry["pass_rate"]
        goodness = -math.inf if mean is None else group.goodness(mean)
        return (-goodness, -(rate if rate is not None else -1.0))

    ranked = sorted(entries, key=lambda e: (*standing(e), e["unanswered"], e["system"]))
    for position, entry in enumerate(ranked):
        tied = position > 0 and standing(ranked[position - 1]) == standing(entry)
        entry["rank"] = ranked[position - 1]["rank"] if tied else position + 1
    return ranked


def _comparisons(
    group: ScoreGroup, basis: Basis, boot: Bootstrap, leaderboard: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    systems = [e["system"] for e in leaderboard if e["n"] > 0]
    if len(systems) <= MAX_PAIRWISE_SYSTEMS:
        pairs = [(a, b) for i, a in enumerate(systems) for b in systems[i + 1 :]]
    else:
        pairs = [(systems[0], b) for b in systems[1:]]
    found = []
    for a, b in pairs:
        va, vb = basis.systems[a].values, basis.systems[b].values
        key = f"{group.name}\x00{a}\x00{b}\x00diff"
        if basis.shared:
            cases = basis.mean_cases
            diff = boot.difference([va[c] for c in cases], [vb[c] for c in cases], key, True)
        else:
            diff = boot.difference(list(va.values()), list(vb.values()), key, False)
        found.append(
            {
                "system": a,
                "vs": b,
                "diff": rounded(diff.value),
                "low": rounded(diff.low),
                "high": rounded(diff.high),
                "paired": basis.shared,
                "n": diff.n,
                "left_out": basis.left_out,
                "clear": findings.clear_of_zero(diff.low, diff.high),
                "direction": group.direction,
                "text": _comparison_text(group, a, b, diff.value, diff.low, diff.high),
            }
        )
    return found


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
    if findings.clear_of_zero(low, high):
        better = a if group.goodness(diff) > 0 else b
        worse = b if better == a else a
        note = " (lower is better)" if group.lower_is_better else ""
        return f"{better} is better than {worse} on {group.name} by {numbers}{note}"
    return f"{a} vs {b} on {group.name}: {numbers}, no clear difference (the interval includes 0)"


def _headline(section: Mapping[str, Any]) -> dict[str, Any]:
    """The best system of a score against every other one: the fields of its comparison with
    the runner-up, the systems it clearly ``beats`` and those it does ``not_clearly`` beat
    (best first), ``clear`` when it clearly beats them all, and one sentence saying so."""
    comparisons: Sequence[Mapping[str, Any]] = section["comparisons"]
    best = comparisons[0]["system"]
    mine = [c for c in comparisons if c["system"] == best]
    beats = [c for c in mine if c["clear"]]
    level = [c for c in mine if not c["clear"]]
    entry: dict[str, Any] = {
        **comparisons[0],
        "score": section["name"],
        "beats": [c["vs"] for c in beats],
        "not_clearly": [c["vs"] for c in level],
        "clear": not level,
    }
    if len(mine) > 1:
        entry["text"] = _headline_text(section, best, beats, level)
    return entry


def _headline_text(
    section: Mapping[str, Any],
    best: str,
    beats: Sequence[Mapping[str, Any]],
    level: Sequence[Mapping[str, Any]],
) -> str:
    """The headline's sentence: "A is better than B by ... and C by ... on S", "A leads on S:
    clearly better than B by ...; not clearly better than C: ..." or "no system is clearly
    best on S: ..."."""
    name = section["name"]
    note = " (lower is better)" if section["direction"] == "lower_is_better" else ""

    def numbers(c: Mapping[str, Any]) -> str:
        if c["diff"] is None or c["low"] is None or c["high"] is None:
            return "no values to compare"
        return f"{c['diff']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]"

    clear = _joined([f"{c['vs']} by {numbers(c)}" for c in beats])
    unclear = _joined([f"{c['vs']}: {numbers(c)}" for c in level], "or")
    includes = "the interval includes 0" if len(level) == 1 else "the intervals include 0"
    if not level:
        return f"{best} is better than {clear} on {name}{note}"
    if not beats:
        return (
            f"no system is clearly best on {name}: {best} leads, but is not clearly better "
            f"than {unclear} ({includes}){note}"
        )
    return (
        f"{best} leads on {name}: clearly better than {clear}; not clearly better than "
        f"{unclear} ({includes}){note}"
    )


def _joined(items: Sequence[str], word: str = "and") -> str:
    if len(items) < 2:
        return "".join(items)
    return f"{', '.join(items[:-1])} {word} {items[-1]}"


def _heatmap(
    group: ScoreGroup, ranked: Sequence[findings.RankedCase], max_cases: int, left_out: int
) -> dict[str, Any]:
    shown = ranked[:max_cases]
    return {
        "systems": list(group.systems),
        "total_cases": len(ranked),
        "shown": len(shown),
        "left_out": left_out,
        "cases": [
            {
                "case": c.case,
                "query": None if c.query is None else clean(c.query, QUERY_PREVIEW_CHARS),
                "failing": c.failing,
                "judged": c.judged,
                "mean": rounded(c.mean),
                "values": {s: rounded(v) for s, v in c.values.items()},
                "unanswered": dict(c.unanswered),
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
