"""Simulated months of drifting traffic against the quality alerts' statistics.

Each simulated app answers at a sampled rate of 1, 0.1 or 0.01 requests a second that follows a
daily cycle (x0.3 to x1.7); an app built from RAGTruth's QA and summary rows shifts between the
two task types through the day; from day 12 on, 30% of every app's traffic is a new topic (the
normal answers of another data set of the same score) whose quality is as good as before. The
verdicts are drawn from the default online evaluators' real verdicts on labelled answers
(``alarms.py``'s rows: ``benchmarks/results/alert_rows_{part}.json``), normal answers and the
bad kinds each score names.

The rules are the ones in ``grafana/prometheus/`` (``RagtraceQualityDrop``,
``RagtraceQualityBelowFloor``), evaluated each minute by a numpy copy of their PromQL
(``Statistics``); ``tests/grafana/test_alert_statistics.py`` shows it gives promtool's firing
minutes on series drawn from the same traffic.

    python benchmarks/alert_traffic.py                       # tuning part: choose, then report
    python benchmarks/alert_traffic.py --part locked         # the locked part, once
    python benchmarks/alert_traffic.py --floors              # print the floor table
    python benchmarks/alert_traffic.py --separation          # bad answers against normal drift
    python benchmarks/alert_traffic.py --demo GOOD.jsonl SLOPPY.jsonl  # the demo's own verdicts
    python benchmarks/alert_traffic.py --demo GOOD.jsonl SLOPPY.jsonl \
        --demo-floors ragtrace/demo/aurora-help-floors.rules.yml  # and the demo app's floors
    python benchmarks/alert_traffic.py --rule-tests \
        grafana/prometheus/tests/quality_traffic.test.yml

Writes ``benchmarks/results/alert_traffic_{part}.json`` and prints the tables BENCHMARKS.md
("Quality alerts on drifting traffic") holds.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
RULES = ROOT / "grafana" / "prometheus"

DAY = 1440  # minutes
HISTORY_DAYS = 8  # normal traffic before the change: a full 7-day baseline
MONTH_DAYS = 30
NEW_TOPIC_DAY = 12  # from this day on, 30% of the traffic is a new topic of the same quality
NEW_TOPIC_SHARE = 0.3
RATES = (1.0, 0.1, 0.01)  # sampled requests a second
QUIET_SHARES = (0.0, 0.03)  # must never page in a month
PAGE_SHARES = (0.10, 0.20, 0.30)
LAUNCH_SHARE = 0.25  # an app bad from its first minute
TRIALS = 5
# How long a page is waited for after the change, by rate.
WAIT_MIN = {1.0: 6 * 60, 0.1: 2 * DAY, 0.01: 7 * DAY}
TARGET_MIN = {1.0: 30, 0.1: 6 * 60, 0.01: None}  # the 10% targets (well-separated scores)
MIX = ("ragtruth/QA", "ragtruth/Summary")


@dataclass(frozen=True)
class Constants:
    """The numbers of the shipped rules (``ragtrace:quality_*`` recording rules)."""

    tolerance_sd: float  # the smallest drop that counts, in the verdicts' standard deviations
    evidence: float  # the statistic that pages
    min_sd: float  # the standard deviation a verdict stream is given at least
    min_verdicts: int  # verdicts a window needs before its statistic counts
    for_min: int
    windows_min: tuple[int, ...]
    baseline_min: int
    floors: dict[str, float] = field(default_factory=dict)


def shipped_constants(rules: Path = RULES) -> Constants:
    """Read the constants from the shipped recording and alert rules."""
    import yaml

    numbers: dict[str, float] = {}
    floors: dict[str, float] = {}
    fors: list[int] = []
    for path in sorted(rules.glob("*.rules.yml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                expr = " ".join(str(rule["expr"]).split())
                if rule.get("record", "").startswith("ragtrace:quality_"):
                    found = re.fullmatch(r"vector\(([0-9.]+)\)", expr)
                    if found:
                        numbers[rule["record"]] = float(found.group(1))
                if rule.get("record") == "evaluator:ragtrace_quality_floor:pass_ratio":
                    for value, name in re.findall(
                        r'vector\(([0-9.]+)\), "evaluator", "([^"]+)"', expr
                    ):
                        floors[name] = float(value)
                if rule.get("alert") in ("RagtraceQualityDrop", "RagtraceQualityBelowFloor"):
                    fors.append(_minutes(rule.get("for", "0m")))
                if rule.get("record") == "app_evaluator_window:ragtrace_verdicts:increase":
                    windows = tuple(_minutes(w) for w in re.findall(r'"window", "(\w+)"', expr))
    return Constants(
        tolerance_sd=numbers["ragtrace:quality_drop_tolerance_sd"],
        evidence=numbers["ragtrace:quality_evidence_threshold"],
        min_sd=numbers["ragtrace:quality_min_sd"],
        min_verdicts=int(numbers["ragtrace:quality_min_verdicts"]),
        for_min=max(fors),
        windows_min=windows,
        baseline_min=7 * DAY,
        floors=floors,
    )


def _minutes(text: str) -> int:
    units = {"m": 1, "h": 60, "d": DAY}
    return int(text[:-1]) * units[text[-1]]


# -- traffic ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """Verdict pass probabilities of one (score, data set): normal and bad answers."""

    dataset: str
    good: float
    bad: float


@dataclass(frozen=True)
class App:
    """A simulated app of one score: its sources and how traffic is shared among them."""

    score: str
    name: str
    sources: tuple[Source, ...]  # the first one or two are the app's own; the last the new topic
    mix: bool  # True: the first two sources share the traffic through the day

    def weights(self, minutes: Any) -> Any:
        """Per minute, the share of traffic of each source (rows sum to 1)."""
        day = (minutes % DAY) / DAY
        w = np.zeros((len(minutes), len(self.sources)))
        topic = np.where(minutes >= (HISTORY_DAYS + NEW_TOPIC_DAY) * DAY, NEW_TOPIC_SHARE, 0.0)
        own = 1.0 - topic
        if self.mix:
            first = 0.5 + 0.3 * np.sin(2 * np.pi * (day - 0.25))  # 0.2 to 0.8 through the day
            w[:, 0] = own * first
            w[:, 1] = own * (1.0 - first)
        else:
            w[:, 0] = own
        w[:, -1] += topic
        return w


def apps(rows: Sequence[dict[str, Any]]) -> list[App]:
    """Per score: one app per data set, and a RAGTruth QA/summary mix where both exist."""
    from alarms import pools

    by_score: dict[str, list[Source]] = {}
    for pool in pools(rows):
        good = pool.good[:, 1]
        bad = pool.bad[:, 1]
        good, bad = good[~np.isnan(good)], bad[~np.isnan(bad)]
        by_score.setdefault(pool.score, []).append(
            Source(pool.dataset, float(good.mean()), float(bad.mean()))
        )
    out = []
    for score, sources in sorted(by_score.items()):
        for i, source in enumerate(sources):
            topic = sources[(i + 1) % len(sources)]
            out.append(App(score, source.dataset, (source, topic), mix=False))
        named = {s.dataset: s for s in sources}
        if all(m in named for m in MIX):
            others = [s for s in sources if s.dataset not in MIX] or [named[MIX[0]]]
            mixed = (named[MIX[0]], named[MIX[1]], others[0])
            out.append(App(score, "ragtruth QA/summary mix", mixed, mix=True))
    return out


def per_minute(app: App, rate: float, shares: Sequence[tuple[int, float]], rng: Any) -> Any:
    """Per minute: (verdicts, passes) of ``app`` at ``rate`` a second with a daily cycle, each
    answer bad with the share of its period (``shares``: (minutes, share) in order)."""
    minutes = np.arange(sum(m for m, _ in shares))
    share = np.concatenate([np.full(m, s) for m, s in shares])
    cycle = 1.0 + 0.7 * np.sin(2 * np.pi * (minutes % DAY) / DAY)
    n = rng.poisson(rate * 60.0 * cycle)
    weights = app.weights(minutes)
    good_p = weights @ np.array([s.good for s in app.sources])
    bad_p = weights @ np.array([s.bad for s in app.sources])
    n_bad = rng.binomial(n, share)
    passes = rng.binomial(n - n_bad, good_p) + rng.binomial(n_bad, bad_p)
    return np.stack([n, passes]).astype(float)


# -- the rules, evaluated each minute --------------------------------------------------------------


class Statistics:
    """The quality alerts' statistics each minute, as the shipped rules compute them.

    ``counts`` holds per minute (verdicts, passes); the counters are their running sums from 0,
    sampled each minute, and ``increase(x[W])`` at minute t is ``x(t) - x(t - W)`` (Prometheus
    2.x ranges hold both ends; the history before the first sample is 0).
    """

    def __init__(self, counts: Any, c: Constants) -> None:
        self.c = c
        total = np.concatenate([np.zeros((2, 1)), np.cumsum(counts, axis=1)], axis=1)
        self.total = total  # index t = the counters after minute t (t = 0: before any)

    def _increase(self, window: int) -> tuple[Any, Any]:
        t = np.arange(self.total.shape[1])
        start = np.maximum(t - window, 0)
        diff = self.total[:, t] - self.total[:, start]
        return diff[0], diff[1]

    def drop(self) -> Any:
        """Per minute, the largest drop evidence over the windows (NaN where none counts)."""
        c = self.c
        base_n, base_pass = self._increase(c.baseline_min)
        best = np.full(self.total.shape[1], np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            for window in c.windows_min:
                n, passes = self._increase(window)
                p = passes / n
                bn = base_n - n
                bp = (base_pass - passes) / bn
                sd = np.maximum(np.sqrt(np.maximum(bp * (1 - bp), 0.0)), c.min_sd)
                z = (bp - p - c.tolerance_sd * sd) / (sd * np.sqrt(1 / n + 1 / bn))
                z = np.where((n >= c.min_verdicts) & (bn >= n), z, np.nan)
                best = np.fmax(best, z)
        return best

    def floor(self, floor: float | None) -> Any:
        """Per minute, the largest evidence that the pass ratio is under ``floor``."""
        c = self.c
        best = np.full(self.total.shape[1], np.nan)
        if floor is None:
            return best
        sd = max(np.sqrt(floor * (1 - floor)), c.min_sd)
        with np.errstate(invalid="ignore", divide="ignore"):
            for window in c.windows_min:
                n, passes = self._increase(window)
                z = (floor - passes / n) / (sd / np.sqrt(n))
                best = np.fmax(best, np.where(n >= c.min_verdicts, z, np.nan))
        return best


def firing(evidence: Any, c: Constants) -> Any:
    """Per minute, whether an alert on ``evidence > c.evidence`` with ``for: c.for_min`` fires."""
    from numpy.lib.stride_tricks import sliding_window_view

    active = np.nan_to_num(evidence, nan=-np.inf) > c.evidence
    out = np.zeros(len(active), dtype=bool)
    out[c.for_min :] = sliding_window_view(active, c.for_min + 1).all(axis=1)
    return out


def episodes(fired: Any) -> int:
    """How many times an alert started firing."""
    return int(np.sum(fired[1:] & ~fired[:-1]) + bool(fired[0])) if len(fired) else 0


def first_minute(fired: Any, start: int) -> int | None:
    hits = np.flatnonzero(fired[start:])
    return int(hits[0]) if len(hits) else None


# -- runs --------------------------------------------------------------------------------------


def quiet_run(app: App, rate: float, share: float, c: Constants, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(
        [
            seed,
            zlib.crc32(app.name.encode() + app.score.encode()),
            int(rate * 1000),
            int(share * 100),
        ]
    )
    history = HISTORY_DAYS * DAY
    counts = per_minute(app, rate, [(history, 0.0), (MONTH_DAYS * DAY, share)], rng)
    stats = Statistics(counts, c)
    drop = firing(stats.drop(), c)
    floor = firing(stats.floor(c.floors.get(app.score)), c)
    return {
        "drop_pages": episodes(drop[history:]),
        "floor_pages": episodes(floor[history:]),
        "history_pages": episodes(drop[:history]) + episodes(floor[:history]),
    }


def paging_runs(app: App, rate: float, share: float, c: Constants, seed: int) -> list[int | None]:
    """Minutes from the change to the first page, per trial (changes at different hours)."""
    out = []
    for trial in range(TRIALS):
        rng = np.random.default_rng(
            [seed, zlib.crc32(app.name.encode() + app.score.encode()), int(rate * 1000), trial, 7]
        )
        history = HISTORY_DAYS * DAY + trial * (DAY // TRIALS)
        counts = per_minute(app, rate, [(history, 0.0), (WAIT_MIN[rate], share)], rng)
        stats = Statistics(counts, c)
        fired = firing(stats.drop(), c) | firing(stats.floor(c.floors.get(app.score)), c)
        out.append(first_minute(fired, history))
    return out


def launch_runs(app: App, rate: float, c: Constants, seed: int) -> list[int | None]:
    out = []
    for trial in range(TRIALS):
        rng = np.random.default_rng(
            [seed, zlib.crc32(app.name.encode() + app.score.encode()), int(rate * 1000), trial, 25]
        )
        counts = per_minute(app, rate, [(2 * DAY, LAUNCH_SHARE)], rng)
        stats = Statistics(counts, c)
        fired = firing(stats.floor(c.floors.get(app.score)), c)
        out.append(first_minute(fired, 0))
    return out


def choose_floors(all_apps: Sequence[App], c: Constants) -> dict[str, float]:
    """Per score, a floor no app of normal answers with 3% bad ones comes near: the lowest
    pass ratio such traffic has on any data set (the RAGTruth mix at its worst hour
    included), less the drop tolerance, rounded down to 0.01."""
    lowest: dict[str, float] = {}
    for app in all_apps:
        own = app.sources[:2] if app.mix else app.sources[:1]
        for source in own:
            p = 0.97 * source.good + 0.03 * source.bad
            sd = max(np.sqrt(p * (1 - p)), c.min_sd)
            lowest[app.score] = min(lowest.get(app.score, 1.0), p - c.tolerance_sd * sd)
    return {score: float(np.floor(value * 100) / 100) for score, value in sorted(lowest.items())}


def simulate(all_apps: Sequence[App], c: Constants, seed: int) -> dict[str, Any]:
    cells = []
    for app in all_apps:
        for rate in RATES:
            cell: dict[str, Any] = {"score": app.score, "app": app.name, "rate": rate}
            for share in QUIET_SHARES:
                cell[f"quiet_{share:g}"] = quiet_run(app, rate, share, c, seed)
            for share in PAGE_SHARES:
                cell[f"page_{share:g}"] = paging_runs(app, rate, share, c, seed)
            cell["launch"] = launch_runs(app, rate, c, seed)
            cells.append(cell)
    return {"constants": c.__dict__, "cells": cells}


# -- promtool tests drawn from the measured verdicts (``--rule-tests PATH``) ---------------------

TEST_HISTORY_MIN = 360  # normal traffic before the change in the generated rule tests
TEST_AFTER_MIN = 90
# faithfulness's verdicts separate invented facts less well: 10% does not page (20% does)
# (BENCHMARKS.md), so its app is expected to stay silent through the first 45 minutes.
SLOW_TO_PAGE = {("faithfulness", 0.10)}
TEST_RULE_SCORES = (
    "answer_relevance",
    "context_relevance.precision",
    "groundedness",
    "faithfulness",
)


def _test_app(app: App, share: float) -> str:
    name = f"{app.score}-{app.name}".replace("ragtruth/", "ragtruth-").replace(".", "-")
    return f"{name.replace('_', '-').lower()}-{round(share * 100)}pct"


def _counter(per_minute: Any) -> str:
    total = np.concatenate([[0.0], np.cumsum(per_minute)])
    return " ".join(str(int(v)) for v in total)


def _test_series(app: App, share: float, seed: int) -> list[dict[str, str]]:
    name = _test_app(app, share)
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    counts = per_minute(app, 1.0, [(TEST_HISTORY_MIN, 0.0), (TEST_AFTER_MIN, share)], rng)
    labels = f'job="{name}", instance="127.0.0.1:9464", app="{name}", evaluator="{app.score}"'
    passes, fails = counts[1], counts[0] - counts[1]
    return [
        {
            "series": f'ragtrace_evaluations_total{{{labels}, outcome="pass"}}',
            "values": _counter(passes),
        },
        {
            "series": f'ragtrace_evaluations_total{{{labels}, outcome="fail"}}',
            "values": _counter(fails),
        },
    ]


def rule_tests(all_apps: Sequence[App], seed: int) -> str:
    """promtool tests from verdicts drawn like the simulation's, at 1 request a second: apps
    with 0% and 3% bad answers after 6 normal hours page on nothing; apps with 10%, 20% and
    30% page on nothing before the change and within 45 minutes after it (but
    ``SLOW_TO_PAGE``)."""
    import yaml

    chosen = [a for a in all_apps if a.score in TEST_RULE_SCORES and a.name in ("halueval", "ares")]
    quiet_series = [s for a in chosen for q in QUIET_SHARES for s in _test_series(a, q, seed)]
    paging_apps = [(a, q) for a in chosen for q in PAGE_SHARES]
    paging_series = [s for a, q in paging_apps for s in _test_series(a, q, seed)]
    end = TEST_HISTORY_MIN + TEST_AFTER_MIN
    quality = 'ALERTS{alertstate="firing", component="quality"}'
    tests = {
        "rule_files": ["../ragtrace-recording.rules.yml", "../ragtrace-alerts.rules.yml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "name": "0% and 3% bad answers, drawn from measured verdicts, page on nothing",
                "interval": "1m",
                "input_series": quiet_series,
                "promql_expr_test": [
                    {
                        "expr": f"count by (app) (max_over_time({quality}[{end}m]))",
                        "eval_time": f"{end}m",
                        "exp_samples": [],
                    }
                ],
            },
            {
                "name": "10% or more bad answers, from measured verdicts, page within 45 minutes",
                "interval": "1m",
                "input_series": paging_series,
                "promql_expr_test": [
                    {
                        "expr": f"count by (app) (max_over_time({quality}[{TEST_HISTORY_MIN}m]))",
                        "eval_time": f"{TEST_HISTORY_MIN}m",
                        "exp_samples": [],
                    },
                    {
                        "expr": f"max by (app) (max_over_time({quality}[45m]))",
                        "eval_time": f"{TEST_HISTORY_MIN + 45}m",
                        "exp_samples": [
                            {"labels": f'{{app="{_test_app(a, q)}"}}', "value": 1}
                            for a, q in paging_apps
                            if (a.score, q) not in SLOW_TO_PAGE
                        ],
                    },
                ],
            },
        ],
    }
    head = (
        "# promtool test rules: verdicts drawn from the default evaluators' measured verdicts on\n"
        "# labelled answers (tuning part), 1 sampled request a second. Generated by\n"
        "# `python benchmarks/alert_traffic.py --rule-tests grafana/prometheus/tests/"
        "quality_traffic.test.yml`; do not edit.\n"
    )
    return head + yaml.safe_dump(tests, sort_keys=False, width=1_000_000)


# -- the demo's own verdicts (``--demo GOOD.jsonl SLOPPY.jsonl``) -----------------------------

DEMO_RATE = 10 / 60  # the demo's 10 requests a second time-lapsed x60, in simulated requests/s
SAFETY = ("pii", "sensitive", "secret", "toxic")  # alerted on by their own rules


def demo_verdicts(path: Path) -> dict[str, Any]:
    """Per evaluator, the verdicts (1 pass, 0 fail) of a ``ragtrace demo --json`` run."""
    out: dict[str, list[float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        for score in json.loads(line)["scores"]:
            if score["passed"] is not None and not score["error"]:
                out.setdefault(score["name"], []).append(float(score["passed"]))
    return {name: np.array(found) for name, found in out.items()}


def demo_floors(good: Path, c: Constants) -> Any:
    """The demo app's own floors, set by ``ragtrace alerts floors``'s rule from the good
    scenario's verdicts (the careful assistant's pre-launch evaluation)."""
    from ragtrace._alerts.floors import app_floors
    from ragtrace._alerts.verdicts import Verdict
    from ragtrace.demo._run import APP

    verdicts = [
        Verdict(0.0, APP, name, None, bool(v))
        for name, found in demo_verdicts(good).items()
        for v in found
    ]
    return app_floors(verdicts, tolerance_sd=c.tolerance_sd, min_sd=c.min_sd)


def demo_weeks(good: Path, sloppy: Path, c: Constants, seed: int) -> list[dict[str, Any]]:
    """Per evaluator of the demo: pages in a simulated week of the good scenario's verdicts
    from a fresh Prometheus (3 draws), and minutes to the first page of an app that answers
    like the sloppy scenario from its start, at the time-lapsed demo's rate. The floor is the
    higher of the evaluator's and the demo app's own (``demo_floors``)."""
    good_v, sloppy_v = demo_verdicts(good), demo_verdicts(sloppy)
    own = {f.evaluator: f.floor for f in demo_floors(good, c)}
    rng = np.random.default_rng(seed)
    rows = []
    for name in sorted(good_v):
        if name.startswith(SAFETY):
            continue
        p_good = float(good_v[name].mean())
        p_sloppy = float(sloppy_v.get(name, good_v[name]).mean())
        floors = [f for f in (c.floors.get(name), own.get(name)) if f is not None]
        floor = max(floors) if floors else None
        pages = []
        for _ in range(3):
            n = rng.poisson(DEMO_RATE * 60, size=7 * DAY)
            stats = Statistics(np.stack([n, rng.binomial(n, p_good)]).astype(float), c)
            pages.append(
                episodes(firing(stats.drop(), c)) + episodes(firing(stats.floor(floor), c))
            )
        n = rng.poisson(DEMO_RATE * 60, size=2 * DAY)
        stats = Statistics(np.stack([n, rng.binomial(n, p_sloppy)]).astype(float), c)
        launch = first_minute(firing(stats.floor(floor), c), 0)
        rows.append(
            {
                "evaluator": name,
                "good": p_good,
                "sloppy": p_sloppy,
                "floor": floor,
                "good_week_pages": pages,
                "sloppy_launch_min": launch,
            }
        )
    return rows


def demo_text(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| evaluator | good pass | sloppy pass | floor | good: pages in a week (3 draws) "
        "| sloppy from the start: minutes to page |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        floor = "-" if r["floor"] is None else f"{r['floor']:.2f}"
        launch = "never" if r["sloppy_launch_min"] is None else str(r["sloppy_launch_min"])
        pages = ", ".join(map(str, r["good_week_pages"]))
        lines.append(
            f"| {r['evaluator']} | {r['good']:.3f} | {r['sloppy']:.3f} | {floor} | {pages} "
            f"| {launch} |"
        )
    return "\n".join(lines)


# -- how far bad answers move a score, against how far normal drift moves it (``--separation``) --

SEPARATION_SCORES = ("faithfulness", "groundedness")
BUCKETS = 20  # ragtrace_evaluation_score's buckets: 0.05 wide


def _bucket_shares(values: Any) -> Any:
    values = values[~np.isnan(values)]
    found = np.clip(np.ceil(values * BUCKETS - 1e-9).astype(int) - 1, 0, BUCKETS - 1)
    counts = np.bincount(found, minlength=BUCKETS) + 1.0  # add-one: no bucket weighs infinitely
    return counts / counts.sum()


def separation(
    tuning_rows: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]], min_sd: float
) -> str:
    """Per grounding score and data set, how far 10% bad answers move a window's mean, in
    standard deviations of normal answers: on the pass verdicts (what the rules weigh) and on
    each answer's log-likelihood ratio of bad to normal (score histogram buckets, learnt on the
    tuning part's rows, every data set pooled); beside how far normal traffic moves the same
    mean when the RAGTruth QA/summary mix swings (0.2 to 0.8 QA) or a new topic takes 30%."""
    from alarms import pools

    lines = [
        "| score | data set | 10% bad: verdicts | 10% bad: likelihood-weighted | mix swing: "
        "verdicts | mix swing: weighted | new topic 30%: verdicts | new topic: weighted |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for score in SEPARATION_SCORES:
        learnt = [p for p in pools(tuning_rows) if p.score == score]
        normal = np.mean([_bucket_shares(p.good[:, 0]) for p in learnt], axis=0)
        bad = np.mean([_bucket_shares(p.bad[:, 0]) for p in learnt], axis=0)
        weight = np.log(bad / normal)
        found = {p.dataset: p for p in pools(rows) if p.score == score}

        def weighted(values: Any, weight: Any = weight) -> Any:
            values = values[~np.isnan(values)]
            return weight[np.clip(np.ceil(values * BUCKETS - 1e-9).astype(int) - 1, 0, 19)]

        def passed(values: Any) -> Any:
            return values[~np.isnan(values)]

        def moved(a: Any, b: Any, share: float, how: Any, sd_of: Any) -> float:
            # verdicts get the rules' minimum deviation (a flawless stream is not exact)
            sd = max(how(sd_of).std(), min_sd if how is passed else 0.0)
            return float(abs(share * (how(b).mean() - how(a).mean())) / sd)

        for name, pool in sorted(found.items()):
            topic = found[sorted(found)[(sorted(found).index(name) + 1) % len(found)]]
            row = [
                moved(pool.good[:, 1], pool.bad[:, 1], 0.1, passed, pool.good[:, 1]),
                moved(pool.good[:, 0], pool.bad[:, 0], 0.1, weighted, pool.good[:, 0]),
            ]
            if name in MIX and all(m in found for m in MIX):
                qa, summ = (found[m] for m in MIX)
                row += [
                    moved(qa.good[:, 1], summ.good[:, 1], 0.6, passed, pool.good[:, 1]),
                    moved(qa.good[:, 0], summ.good[:, 0], 0.6, weighted, pool.good[:, 0]),
                ]
            else:
                row += [float("nan"), float("nan")]
            row += [
                moved(pool.good[:, 1], topic.good[:, 1], NEW_TOPIC_SHARE, passed, pool.good[:, 1]),
                moved(
                    pool.good[:, 0], topic.good[:, 0], NEW_TOPIC_SHARE, weighted, pool.good[:, 0]
                ),
            ]
            cells = ["-" if np.isnan(x) else f"{x:.3f}" for x in row]
            lines.append(
                f"| {score} | {name} (topic: {topic.dataset}) | " + " | ".join(cells) + " |"
            )
    return "\n".join(lines)


# -- text -------------------------------------------------------------------------------------


def _median(minutes: Sequence[int | None]) -> str:
    got = sorted(m for m in minutes if m is not None)
    if len(got) < len(minutes) / 2:
        return f"never ({len(got)}/{len(minutes)})"
    mid = sorted(m if m is not None else 10**9 for m in minutes)[len(minutes) // 2]
    return _duration(mid) + ("" if len(got) == len(minutes) else f" ({len(got)}/{len(minutes)})")


def _duration(minutes: int) -> str:
    if minutes < 120:
        return f"{minutes} min"
    if minutes < 2 * DAY:
        return f"{minutes / 60:.1f} h"
    return f"{minutes / DAY:.1f} d"


def table(result: dict[str, Any]) -> str:
    head = (
        "| score | app | rate /s | pages a month at 0% / 3% (drop, floor) | to page at 10% "
        "| 20% | 30% | launched 25% bad |\n| --- | --- | --- | --- | --- | --- | --- | --- |"
    )
    lines = [head]
    for cell in result["cells"]:
        q0, q3 = cell["quiet_0"], cell["quiet_0.03"]
        quiet = f"{q0['drop_pages']}+{q0['floor_pages']} / {q3['drop_pages']}+{q3['floor_pages']}"
        lines.append(
            f"| {cell['score']} | {cell['app']} | {cell['rate']:g} | {quiet} "
            f"| {_median(cell['page_0.1'])} | {_median(cell['page_0.2'])} "
            f"| {_median(cell['page_0.3'])} | {_median(cell['launch'])} |"
        )
    return "\n".join(lines)


def summary(result: dict[str, Any]) -> dict[str, Any]:
    cells = result["cells"]
    quiet = sum(
        c[f"quiet_{s:g}"]["drop_pages"] + c[f"quiet_{s:g}"]["floor_pages"]
        for c in cells
        for s in QUIET_SHARES
    )
    history = sum(c[f"quiet_{s:g}"]["history_pages"] for c in cells for s in QUIET_SHARES)
    return {"quiet_pages": quiet, "history_pages": history, "cells": len(cells)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("tuning", "locked"), default="tuning")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--rules", type=Path, default=RULES)
    parser.add_argument("--floors", action="store_true", help="print the chosen floors and stop")
    parser.add_argument(
        "--separation",
        action="store_true",
        help="print how far 10%% bad answers move the grounding scores against normal drift",
    )
    parser.add_argument("--set", action="append", default=[], help="NAME=VALUE: try a constant")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--demo",
        nargs=2,
        type=Path,
        metavar=("GOOD.jsonl", "SLOPPY.jsonl"),
        help="the demo's own verdicts (ragtrace demo --json): a good week, a sloppy launch",
    )
    parser.add_argument(
        "--demo-floors",
        type=Path,
        metavar="PATH",
        help="with --demo: write the demo app's own floors (from GOOD.jsonl) as a rule file",
    )
    parser.add_argument("--rule-tests", type=Path, help="write promtool tests drawn from the rows")
    args = parser.parse_args(argv)
    if args.demo:
        c = shipped_constants(args.rules)
        if args.demo_floors is not None:
            from ragtrace._alerts.floors import floors_rules

            source = "the demo's good scenario (ragtrace demo --scenario good --json)"
            args.demo_floors.write_text(floors_rules(demo_floors(args.demo[0], c), source))
            print(f"wrote {args.demo_floors}")
        print(demo_text(demo_weeks(*args.demo, c, args.seed)))
        return 0
    rows_path = RESULTS / f"alert_rows_{args.part}.json"
    if not rows_path.exists():
        print(
            f"{rows_path} is missing: run `python benchmarks/alarms.py --traffic --part "
            f"{args.part}` first (it scores the rows)",
            file=sys.stderr,
        )
        return 2
    rows = json.loads(rows_path.read_text())["rows"]
    all_apps = apps(rows)
    c = shipped_constants(args.rules)
    for item in args.set:
        name, _, value = item.partition("=")
        kind = type(getattr(c, name))
        c = Constants(**{**c.__dict__, name: kind(value)})
    if args.rule_tests is not None:
        args.rule_tests.write_text(rule_tests(all_apps, args.seed))
        print(f"wrote {args.rule_tests}")
        return 0
    if args.separation:
        tuning = json.loads((RESULTS / "alert_rows_tuning.json").read_text())["rows"]
        print(separation(tuning, rows, c.min_sd))
        return 0
    if args.floors:
        for score, floor in choose_floors(all_apps, c).items():
            print(f"{score}: {floor:.2f}")
        return 0
    started = time.perf_counter()
    result = simulate(all_apps, c, args.seed)
    result["part"] = args.part
    result["summary"] = summary(result)
    print(table(result))
    print(json.dumps(result["summary"]), f"({time.perf_counter() - started:.0f} s)")
    out = args.json or RESULTS / f"alert_traffic_{args.part}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    raise SystemExit(main())
