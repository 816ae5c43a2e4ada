"""Verdicts as the counters ragtrace exports, sampled as Prometheus would scrape them.

``sample(verdicts, step)`` lays a time axis from ``start`` (the first verdict's time rounded
down to ``step``) to the last verdict's time rounded down to ``step``, one sample every
``step`` seconds, and gives, per (app, evaluator), the series the exporter serves
(``ragtrace._metrics.evaluations``) as they would read at each sample, each verdict counted
from the first sample at or after its time. The verdicts after the last sample (less than one
step of them) are left out: a sample after them would read a step that the recording cut
short, as if traffic had dropped.

- ``ragtrace_evaluations_total{outcome="pass"|"fail"|"error"}``;
- ``ragtrace_evaluation_score_count``, ``_sum`` and ``_bucket{le=...}`` (``SCORE_BUCKETS`` and
  ``+Inf``), of the verdicts with a value;
- ``ragtrace_evaluation_score_squares_total``: the running sum of the squared values.

Every series carries ``job="ragtrace"`` and ``instance="backtest"``, as a scrape adds them, and
is absent before its first verdict (the exporter makes a series at its first count). Sums are
added exactly per sample (``math.fsum``), so the order of the verdicts never changes a value.
The values come as promtool's series notation (``_x3 0 1+1x5 ...``), in which runs that grow
by the same step take one item.
"""

from __future__ import annotations

import json
import math
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ragtrace._alerts.verdicts import Verdict
from ragtrace._metrics.requests import SCORE_BUCKETS

SCRAPE_LABELS = (("instance", "backtest"), ("job", "ragtrace"))
OUTCOMES = ("pass", "fail", "error")
# prometheus_client writes a bound of at most 6 digits before the point as Python's repr
BUCKET_LABELS = (*(repr(float(b)) for b in SCORE_BUCKETS), "+Inf")

Number = int | float


@dataclass(frozen=True, slots=True)
class Series:
    """One input series: its text (``name{labels}``) and its values in promtool's notation."""

    text: str
    values: str


@dataclass(frozen=True, slots=True)
class Sampled:
    """The counters of a verdicts file on a time axis.

    Attributes:
        start: Unix seconds of the first sample.
        step: Seconds between samples.
        samples: How many samples (the last at ``start + (samples - 1) * step``).
        series: Every input series.
        replayed: How many verdicts the samples count (the others came after the last).
    """

    start: int
    step: int
    samples: int
    series: list[Series]
    replayed: int

    @property
    def end(self) -> int:
        """Unix seconds of the last sample."""
        return self.start + (self.samples - 1) * self.step


@dataclass(slots=True)
class _Pair:
    """What one (app, evaluator) saw, per sample index."""

    outcomes: dict[str, dict[int, int]] = field(default_factory=dict)
    values: dict[int, list[float]] = field(default_factory=dict)


def sample(verdicts: Sequence[Verdict], step: int) -> Sampled:
    """The exporter's series for ``verdicts`` (not empty), sampled every ``step`` seconds."""
    first = min(v.time for v in verdicts)
    last = max(v.time for v in verdicts)
    start = int(first // step) * step
    samples = int((last - start) // step) + 1
    pairs: dict[tuple[str, str], _Pair] = {}
    replayed = 0
    for verdict in verdicts:
        index = math.ceil((verdict.time - start) / step)
        if index >= samples:
            continue
        replayed += 1
        pair = pairs.get((verdict.app, verdict.evaluator))
        if pair is None:
            pair = pairs[(verdict.app, verdict.evaluator)] = _Pair()
        counts = pair.outcomes.setdefault(verdict.outcome, {})
        counts[index] = counts.get(index, 0) + 1
        if verdict.value is not None:
            pair.values.setdefault(index, []).append(verdict.value)
    series: list[Series] = []
    for (app, evaluator), pair in sorted(pairs.items()):
        labels = (("app", app), ("evaluator", evaluator))
        for outcome in OUTCOMES:
            if outcome in pair.outcomes:
                text = _series_text("ragtrace_evaluations_total", (*labels, ("outcome", outcome)))
                series.append(Series(text, _cumulative(pair.outcomes[outcome], samples)))
        if pair.values:
            series.extend(_histogram(labels, pair.values, samples))
    return Sampled(start, step, samples, series, replayed)


def _histogram(
    labels: tuple[tuple[str, str], ...], values: dict[int, list[float]], samples: int
) -> Iterable[Series]:
    count = {k: len(v) for k, v in values.items()}
    total = {k: math.fsum(v) for k, v in values.items()}
    squares = {k: math.fsum(x * x for x in v) for k, v in values.items()}
    buckets: list[dict[int, int]] = [{} for _ in BUCKET_LABELS]
    for index, observed in values.items():
        for value in observed:
            bucket = buckets[bisect_left(SCORE_BUCKETS, value)]
            bucket[index] = bucket.get(index, 0) + 1
    name = "ragtrace_evaluation_score"
    below: dict[int, int] = {}
    for le, bucket in zip(BUCKET_LABELS, buckets, strict=True):
        for index, n in bucket.items():
            below[index] = below.get(index, 0) + n
        # every bucket appears with the histogram's first observation, empty ones at 0
        per_sample = {k: below.get(k, 0) for k in count}
        yield Series(_series_text(f"{name}_bucket", (*labels, ("le", le))),
                     _cumulative(per_sample, samples))  # fmt: skip
    yield Series(_series_text(f"{name}_count", labels), _cumulative(count, samples))
    yield Series(_series_text(f"{name}_sum", labels), _cumulative(total, samples))
    yield Series(_series_text(f"{name}_squares_total", labels), _cumulative(squares, samples))


def _series_text(name: str, labels: Iterable[tuple[str, str]]) -> str:
    """``name{a="x", ...}`` with every label (scrape labels added), sorted, values escaped."""
    pairs = sorted((*labels, *SCRAPE_LABELS))
    inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in pairs)
    return f"{name}{{{inner}}}"


def _cumulative(increments: Mapping[int, Number], samples: int) -> str:
    """The running total of ``increments`` (sample index -> amount) at every sample, absent
    before the first index, in promtool's notation."""
    first = min(increments)
    values: list[Number] = []
    total: Number = 0
    for index in range(first, samples):
        total += increments.get(index, 0)
        values.append(total)
    blanks = "" if first == 0 else "_ " if first == 1 else f"_x{first} "
    return blanks + notation(values)


def notation(values: Sequence[Number]) -> str:
    """``values`` in promtool's series notation: a run of three or more that grows by the same
    amount is ``a+dxN`` (``axN`` when constant), which promtool expands by adding ``d`` to
    ``a`` N times; a run is taken only when that addition gives exactly the values."""
    items: list[str] = []
    i, n = 0, len(values)
    while i < n:
        j = i
        if i + 1 < n:
            step = values[i + 1] - values[i]
            j = i + 1
            while j + 1 < n and values[j + 1] == values[j] + step:
                j += 1
        if j - i >= 2:
            items.append(_run(values[i], step, j - i))
            i = j + 1
        else:
            items.append(_number(values[i]))
            i += 1
    return " ".join(items)


def _run(first: Number, step: Number, times: int) -> str:
    if step == 0:
        return f"{_number(first)}x{times}"
    sign = "+" if step > 0 else ""
    return f"{_number(first)}{sign}{_number(step)}x{times}"


def _number(value: Number) -> str:
    return str(value) if isinstance(value, int) else repr(float(value))
