"""Inline SVG charts for the report page: heatmap, histograms, interval bars. No JavaScript.

Every function takes the report's JSON-ready data and returns an ``<svg>`` string whose text is
escaped; each mark carries a ``<title>`` (the browser shows it on hover) with the exact numbers.
Colours go from red (bad) through yellow to green (good), direction-aware; ``tint`` is the same
scale made pale, for table cells with text on them. In the heatmap a case the system left
unanswered is a dark cell marked ✕, an evaluator error a grey one, a case not asked a white one.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

CELL = 18
LABEL_WIDTH = 150
CASE_LABEL_CHARS = 14
HIST_WIDTH = 240
HIST_HEIGHT = 70
BAR_WIDTH = 130
BAR_HEIGHT = 14
NO_VALUE = "#d9d9d9"
UNANSWERED = "#3d4650"
NOT_ASKED = "#ffffff"


def esc(value: object) -> str:
    """Text for HTML or SVG, quotes included; None is empty."""
    return html.escape("" if value is None else str(value), quote=True)


def short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def color(value: float | None, low: float, high: float, lower_is_better: bool) -> str:
    """The fill for a value on [low, high]: red (bad) -> yellow -> green (good)."""
    if value is None:
        return NO_VALUE
    good = _goodness(value, low, high, lower_is_better)
    return f"hsl({round(120 * good)}, 65%, {round(48 + 8 * (1 - abs(good - 0.5) * 2))}%)"


def tint(value: float | None, low: float, high: float, lower_is_better: bool) -> str:
    """``color``'s hue, pale enough to read dark text on (overview cells)."""
    if value is None:
        return "#f2f2f2"
    return f"hsl({round(120 * _goodness(value, low, high, lower_is_better))}, 60%, 86%)"


def _goodness(value: float, low: float, high: float, lower_is_better: bool) -> float:
    """Where ``value`` lies on [low, high]: 0 at the bad end, 1 at the good end."""
    span = high - low
    share = 0.5 if span <= 0 else min(1.0, max(0.0, (value - low) / span))
    return 1.0 - share if lower_is_better else share


def _num(value: float | None) -> str:
    return "no value" if value is None else f"{value:.3f}"


def heatmap(section: Mapping[str, Any], value_range: tuple[float, float]) -> str:
    """Systems (rows) by the hardest test cases (columns), one coloured cell per answer."""
    data = section["heatmap"]
    systems: Sequence[str] = data["systems"]
    cases: Sequence[Mapping[str, Any]] = data["cases"]
    lower = section["direction"] == "lower_is_better"
    longest = max((min(len(str(c["case"])), CASE_LABEL_CHARS) for c in cases), default=1)
    header = 16 + 6 * longest  # room for the slanted case labels
    width = LABEL_WIDTH + CELL * max(1, len(cases)) + 10
    height = header + CELL * max(1, len(systems)) + 4
    parts = [
        f'<svg class="heatmap" role="img" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}">',
        f"<title>{esc(section['name'])}: systems by test cases, hardest first</title>",
    ]
    for j, case in enumerate(cases):
        x = LABEL_WIDTH + j * CELL + CELL / 2
        parts.append(
            f'<text class="case-label" x="{x:.0f}" y="{header - 4}" '
            f'transform="rotate(-60 {x:.0f} {header - 4})">'
            f"{esc(short(str(case['case']), CASE_LABEL_CHARS))}"
            f"<title>{esc(case['case'])}</title></text>"
        )
    for i, system in enumerate(systems):
        y = header + i * CELL
        parts.append(
            f'<text class="system-label" x="{LABEL_WIDTH - 6}" y="{y + CELL - 5}" '
            f'text-anchor="end">{esc(short(system, 22))}<title>{esc(system)}</title></text>'
        )
        for j, case in enumerate(cases):
            parts.append(_cell(system, case, LABEL_WIDTH + j * CELL, y, value_range, lower))
    parts.append("</svg>")
    return "".join(parts)


def _cell(
    system: str,
    case: Mapping[str, Any],
    x: int,
    y: int,
    value_range: tuple[float, float],
    lower: bool,
) -> str:
    """One heatmap cell: coloured by value, dark and marked ✕ when unanswered."""
    query = f" · {case['query']}" if case.get("query") else ""
    unanswered = case.get("unanswered", {}).get(system)
    attributes = f'data-system="{esc(system)}" data-case="{esc(case["case"])}"'
    if unanswered is not None:
        return (
            f'<g class="cell unanswered" {attributes}><rect x="{x}" y="{y}" width="{CELL - 1}" '
            f'height="{CELL - 1}" fill="{UNANSWERED}" stroke="#bbb" stroke-width="0.5"/>'
            f'<text x="{x + CELL / 2 - 0.5:.1f}" y="{y + CELL - 5}" text-anchor="middle" '
            'class="mark" fill="#fff">✕</text>'
            f"<title>{esc(system)} · {esc(case['case'])}: not answered ({esc(unanswered)})"
            f"{esc(query)}</title></g>"
        )
    value = case["values"].get(system)
    answered = system in case["values"]
    fill = color(value, *value_range, lower) if answered else NOT_ASKED
    what = _num(value) if answered else "not asked"
    return (
        f'<rect class="cell" x="{x}" y="{y}" width="{CELL - 1}" height="{CELL - 1}" '
        f'fill="{fill}" stroke="#bbb" stroke-width="0.5" {attributes} '
        f'data-value="{esc("" if value is None else value)}">'
        f"<title>{esc(system)} · {esc(case['case'])}: {esc(what)}{esc(query)}</title></rect>"
    )


def histogram(
    edges: Sequence[float],
    counts: Sequence[int],
    system: str,
    thresholds: Sequence[float],
    lower_is_better: bool,
) -> str:
    """One system's distribution of values: bars coloured by where they fall, a threshold line."""
    low, high = edges[0], edges[-1]
    top = max(counts) if counts and max(counts) > 0 else 1
    bar = HIST_WIDTH / max(1, len(counts))
    base = HIST_HEIGHT - 14
    parts = [
        f'<svg class="histogram" role="img" xmlns="http://www.w3.org/2000/svg" '
        f'width="{HIST_WIDTH}" height="{HIST_HEIGHT}" viewBox="0 0 {HIST_WIDTH} {HIST_HEIGHT}" '
        f'data-system="{esc(system)}"><title>{esc(system)}: distribution of values</title>'
    ]
    for k, count in enumerate(counts):
        h = (base - 4) * count / top
        middle = (edges[k] + edges[k + 1]) / 2
        parts.append(
            f'<rect x="{k * bar + 1:.1f}" y="{base - h:.1f}" width="{bar - 2:.1f}" '
            f'height="{h:.1f}" fill="{color(middle, low, high, lower_is_better)}">'
            f"<title>{edges[k]:.3f} to {edges[k + 1]:.3f}: {count} answer(s)</title></rect>"
        )
    parts.append(f'<line x1="0" y1="{base}" x2="{HIST_WIDTH}" y2="{base}" stroke="#666"/>')
    for threshold in thresholds:
        if not (low <= threshold <= high and high > low):
            continue
        x = HIST_WIDTH * (threshold - low) / (high - low)
        parts.append(
            f'<line class="threshold" x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{base}" '
            f'stroke="#333" stroke-dasharray="3 2"><title>threshold {threshold:g}</title></line>'
        )
    parts.append(
        f'<text x="0" y="{HIST_HEIGHT - 2}" class="axis">{low:g}</text>'
        f'<text x="{HIST_WIDTH}" y="{HIST_HEIGHT - 2}" class="axis" text-anchor="end">'
        f"{high:g}</text></svg>"
    )
    return "".join(parts)


def interval_bar(
    value: float | None,
    low: float | None,
    high: float | None,
    value_range: tuple[float, float],
    thresholds: Sequence[float],
) -> str:
    """A small bar: the interval [low, high] as a line, the value as a dot, each threshold a
    tick."""
    if value is None or low is None or high is None:
        return ""
    start, end = value_range
    span = (end - start) or 1.0

    def x(v: float) -> float:
        return 4 + (BAR_WIDTH - 8) * min(1.0, max(0.0, (v - start) / span))

    mid = BAR_HEIGHT / 2
    tick = "".join(
        f'<line x1="{x(t):.1f}" y1="1" x2="{x(t):.1f}" y2="{BAR_HEIGHT - 1}" '
        'stroke="#c00" stroke-width="1"/>'
        for t in thresholds
    )
    return (
        f'<svg class="ci" xmlns="http://www.w3.org/2000/svg" width="{BAR_WIDTH}" '
        f'height="{BAR_HEIGHT}" viewBox="0 0 {BAR_WIDTH} {BAR_HEIGHT}">'
        f"<title>{value:.3f} [{low:.3f}, {high:.3f}]</title>"
        f'<line x1="4" y1="{mid}" x2="{BAR_WIDTH - 4}" y2="{mid}" stroke="#e3e3e3"/>{tick}'
        f'<line x1="{x(low):.1f}" y1="{mid}" x2="{x(high):.1f}" y2="{mid}" stroke="#345" '
        f'stroke-width="3"/><circle cx="{x(value):.1f}" cy="{mid}" r="3.5" fill="#135"/></svg>'
    )
