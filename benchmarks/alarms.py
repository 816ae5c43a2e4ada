"""False alarms and detection of every default online score, on normal and bad answers.

    .venv/bin/python benchmarks/alarms.py [--data-dir ../shared/data] [--part tuning|locked]
        [--only looping,pii_leakage,...] [--points] [--sweep] [--record] [--json PATH]
    .venv/bin/python benchmarks/alarms.py --markdown default   # the recorded table
    .venv/bin/python benchmarks/alarms.py --traffic [--part tuning|locked] [--rows-per-cell N]
    .venv/bin/python benchmarks/alarms.py --compare recorded:tuning results/alarms.json
    .venv/bin/python benchmarks/alarms.py --demo [--time-scale 60] [--degrade-after 60]
        [--duration 150] [--demo-rate 10] [--demo-evaluators looping,tokens_presence]
    .venv/bin/python benchmarks/alarms.py --agents [--runs-per-kind 300]

For each score of the default online suite (``ragtrace.evaluators._suites.online_suite()``, each
evaluator with its shipped options), the share of NORMAL answers it fails (false alarms) per data
set, and the share of BAD answers it fails (detection) per way of making an answer bad, from
``_alarm_cases``. The budget every score is held to (docs/decisions/alarm-budget.md):

- at most 5% of the normal answers of every data set fail;
- at least 80% of the bad answers of every kind the score names (``SCORES[...].named``) fail;
  other bad kinds are printed beside them for information (``SCORES[...].also``).

``--part tuning`` (the default) scores the tuning part of the locked split, where operating
points are chosen; ``--part locked`` the locked part, once per shipped change, never to choose.
``--sweep`` adds, per score and data set, the threshold that keeps false alarms at 1%, 3%, 5%,
10% on that part, with the detection it gives: for choosing, on the tuning part only.
``--points`` also scores every named operating point; ``--record`` (which implies it) writes
the part's rates into ``ragtrace/evaluators/data/alarm_rates.json``, what ``ragtrace eval
--list`` and the docs read. ``toxicity`` is scored beside the suite (``CANDIDATES``): it left it
for missing the budget. Its head was fitted on the toxicity set's tuning part, so that part's
toxicity rows are in-sample (marked); its out-of-fold figures come from ``train_toxicity.py``.

Sentence vectors and NER results are kept in ``benchmarks/results/alarm_cache.sqlite`` (a
passage store), so a second run embeds nothing new; a cold run embeds about 30,000 sentences
(10-20 minutes on a shared 2-core box). Prints a table and writes ``results/alarms.json``
(``alarms_locked.json`` for the locked part).

``--traffic`` scores at most ``--rows-per-cell`` rows (150) per (kind, data set) with the
evaluators the quality alerts read (looping, language_mismatch, answer_relevance,
context_relevance, groundedness, faithfulness) and keeps the per-row scores and verdicts in
``results/alert_rows_<part>.json`` (about 2 minutes cold): ``benchmarks/alert_traffic.py`` draws
its simulated traffic from them.

``--agents`` scores the agent evaluators (``tool_errors``, ``repeated_tool_calls``,
``agent_steps``), which the suite leaves out, on scripted agent turns (``_alarm_cases.AgentTurns``:
LangChain ``create_agent`` with real tools over the demo's help centre, captured by ragtrace's
LangChain handler), ``--runs-per-kind`` healthy turns and as many of each way of failing per
part: the tuning part with each alternative of ``AGENT_GRID`` (for choosing), then the locked
part with the shipped options only. Prints both and BENCHMARKS.md's table; writes
``results/agent_alarms.json`` (about 2 minutes).

``--demo`` times the shipped alerts live instead: it runs ``ragtrace demo --prometheus
--scenario good [--degrade-after D] --alert-time-scale N`` (a real Prometheus on loopback with
the shipped rules time-lapsed N times), polls its ``/api/v1/alerts`` every 0.5 s and prints,
per alert and evaluator, when it first went pending and firing, in seconds after the switch the
demo printed (or after the start, without ``--degrade-after``) and in real-time minutes (times
N), then stops the demo by its pid. ``--demo-evaluators ''`` runs the demo's full suite. Needs
``prometheus`` on PATH; writes ``results/demo_alerts.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _alarm_cases import AGENT_KINDS, LOCKED, NORMAL, TUNING, Case, agent_cases, build
from _labelled_data import data_dir

from ragtrace._model import Score
from ragtrace._offline.summary import markdown_table
from ragtrace.evaluators._base import Evaluator
from ragtrace.evaluators._registry import ONLINE_SUITE, create
from ragtrace.evaluators._suites import suite_options

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]
CACHE = RESULTS / "alarm_cache.sqlite"
BATCH = 32
FALSE_ALARM_BUDGET = 0.05
DETECTION_FLOOR = 0.80
SWEEP_TARGETS = (0.01, 0.03, 0.05, 0.10)
# Scores in the suite held to targets of their own instead (the brief's exception).
OWN_TARGETS = {"faithfulness": "a detector held to its own accuracy targets"}
# Measured beside the suite: evaluators that left it for missing the budget.
CANDIDATES = ("toxicity",)
# (score, data set) cells scored by a model fitted on those very rows of the tuning part.
IN_SAMPLE_ON_TUNING = {("toxicity", "toxicity")}


@dataclass(frozen=True)
class Named:
    """The bad kinds a score is held to (``named``) and the ones shown beside (``also``)."""

    evaluator: str
    named: tuple[str, ...]
    also: tuple[str, ...] = ()
    alarm: bool = True  # False: informational, reported but not held to the budget


SCORES: dict[str, Named] = {
    "looping.unique_sentences": Named("looping", ("looping",), ("short_loop",)),
    "looping.longest_repeated_substring": Named("looping", ("looping",), ("short_loop",)),
    "looping.compression_ratio": Named("looping", ("looping",), ("short_loop",)),
    "sensitive_data.answer": Named("sensitive_data", ("secret_answer",)),
    "sensitive_data.context": Named("sensitive_data", ("secret_context",)),
    "language_mismatch": Named("language_mismatch", ("foreign",)),
    "toxicity": Named("toxicity", ("toxic",), ("toxic_inside",)),
    "pii_leakage.answer": Named("pii_leakage", ("pii_email", "pii_phone", "pii_card", "pii_row")),
    "pii_leakage.context": Named("pii_leakage", (), alarm=False),
    "answer_relevance": Named("answer_relevance", ("other_answer", "ares_negative")),
    "context_relevance.recall": Named("context_relevance", ("other_context", "ares_negative")),
    "context_relevance.precision": Named("context_relevance", ("other_context", "ares_negative")),
    "groundedness": Named("groundedness", ("other_context", "ares_negative"), ("hallucinated",)),
    "faithfulness": Named("faithfulness", ("hallucinated",), ("other_context", "ares_negative")),
}


@dataclass(frozen=True)
class Result:
    """One Score of one case."""

    case: Case
    score: Score


def run_evaluator(evaluator: Evaluator, cases: Sequence[Case]) -> tuple[list[Result], float]:
    """Every Score ``evaluator`` gives the cases it can read, and the seconds it took."""
    usable = [c for c in cases if not evaluator.missing_fields(c.record)]
    out: list[Result] = []
    started = time.perf_counter()
    for start in range(0, len(usable), BATCH):
        batch = usable[start : start + BATCH]
        for case, scores in zip(
            batch, evaluator.evaluate_batch([c.record for c in batch]), strict=True
        ):
            out.extend(Result(case, s) for s in scores)
    return out, time.perf_counter() - started


def failed(score: Score) -> bool | None:
    """True when the score fails its record, None when it has no verdict (error, no threshold)."""
    if score.error is not None or score.passed is None:
        return None
    return not score.passed


def rates(results: Sequence[Result]) -> dict[str, Any]:
    """Per score: false alarms per data set and detection per (bad kind, data set)."""
    table: dict[str, Any] = {}
    by_score: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        by_score[r.score.name].append(r)
    for name, found in sorted(by_score.items()):
        cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
        informational = name in SCORES and not SCORES[name].alarm
        for r in found:
            verdict = failed(r.score)
            if informational and r.score.error is None and r.score.value is not None:
                verdict = r.score.value < 1.0  # information: how often it reports a finding
            cell = cells[(r.case.kind, r.case.dataset)]
            if verdict is None:
                cell[2] += 1
            else:
                cell[0] += int(verdict)
                cell[1] += 1
        table[name] = {
            f"{kind}|{dataset}": {
                "failed": f,
                "n": n,
                "no_verdict": x,
                "rate": f / n if n else None,
            }
            for (kind, dataset), (f, n, x) in sorted(cells.items())
        }
    return table


def sweep(results: Sequence[Result]) -> dict[str, Any]:
    """Per score: thresholds that keep every data set's false alarms under each target."""
    out: dict[str, Any] = {}
    by_score: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        if r.score.value is not None and r.score.error is None:
            by_score[r.score.name].append(r)
    for name, found in sorted(by_score.items()):
        higher = found[0].score.direction == "higher_is_better"
        sign = 1.0 if higher else -1.0  # fail when sign * value < sign * threshold
        normal: dict[str, list[float]] = defaultdict(list)
        bad: dict[str, list[float]] = defaultdict(list)
        for r in found:
            target = normal if r.case.kind == NORMAL else bad
            key = r.case.dataset if r.case.kind == NORMAL else f"{r.case.kind}|{r.case.dataset}"
            target[key].append(sign * float(r.score.value))  # type: ignore[arg-type]
        if not normal:
            continue
        rows = {}
        for budget in SWEEP_TARGETS:
            cut = min(_quantile_cut(v, budget) for v in normal.values())
            rows[f"fa<={budget:.2f}"] = {
                "threshold": round(sign * cut, 4),
                "false_alarms": {k: _share_below(v, cut) for k, v in normal.items()},
                "detection": {k: _share_below(v, cut) for k, v in bad.items()},
            }
        out[name] = rows
    return out


def _quantile_cut(values: list[float], budget: float) -> float:
    """The largest cut with at most ``budget`` of ``values`` strictly below it."""
    ordered = sorted(values)
    allowed = math.floor(budget * len(ordered))
    return ordered[allowed] if allowed < len(ordered) else ordered[-1] + 1e-9


def _share_below(values: list[float], cut: float) -> float:
    return round(sum(v < cut for v in values) / len(values), 4) if values else float("nan")


def verdicts(
    table: dict[str, Any], scores: dict[str, Named] | None = None
) -> dict[str, dict[str, Any]]:
    """Per score: worst false-alarm rate, worst named detection, and whether it meets the budget."""
    out = {}
    for name, spec in (SCORES if scores is None else scores).items():
        cells = table.get(name)
        if not cells:
            continue
        fa = [c["rate"] for k, c in cells.items() if k.startswith(NORMAL + "|") and c["n"]]
        det = [
            c["rate"]
            for k, c in cells.items()
            if k.split("|")[0] in spec.named and c["n"] and c["rate"] is not None
        ]
        worst_fa = max(fa) if fa else None
        worst_det = min(det) if det else None
        meets = (
            spec.alarm
            and worst_fa is not None
            and worst_fa <= FALSE_ALARM_BUDGET
            and worst_det is not None
            and worst_det >= DETECTION_FLOOR
        )
        out[name] = {"worst_false_alarms": worst_fa, "worst_detection": worst_det, "meets": meets}
    return out


def table_text(table: dict[str, Any], summary: dict[str, Any], part: str) -> str:
    lines = [
        f"part: {part}   budget: false alarms <= {FALSE_ALARM_BUDGET:.0%} of normal answers per "
        f"data set, detection >= {DETECTION_FLOOR:.0%} of each named bad kind",
        f"{'score':36} {'answers':14} {'data set':18} {'n':>5} {'failed':>7}",
    ]
    for name, spec in SCORES.items():
        cells = table.get(name)
        if not cells:
            continue
        for key, c in cells.items():
            kind, dataset = key.split("|")
            tag = "" if kind == NORMAL or kind in spec.named else " (info)"
            if part == TUNING and (name, dataset) in IN_SAMPLE_ON_TUNING:
                tag += " (in-sample)"
            rate = "-" if c["rate"] is None else f"{c['rate']:.1%}"
            lines.append(f"{name:36} {kind + tag:14} {dataset:18} {c['n']:5d} {rate:>7}")
        s = summary.get(name)
        if s:
            status = "meets" if s["meets"] else ("informational" if not spec.alarm else "MISSES")
            fa = "-" if s["worst_false_alarms"] is None else f"{s['worst_false_alarms']:.1%}"
            det = "-" if s["worst_detection"] is None else f"{s['worst_detection']:.1%}"
            where = "" if spec.evaluator in ONLINE_SUITE else " (not in the default suite)"
            lines.append(
                f"{'':36} -> worst false alarms {fa}, worst named detection {det}: {status}{where}"
            )
    return "\n".join(lines)


def sweep_text(found: dict[str, Any]) -> str:
    lines = []
    for name, rows in found.items():
        for target, row in rows.items():
            fa = " ".join(f"{k}={v:.1%}" for k, v in row["false_alarms"].items())
            det = " ".join(f"{k}={v:.1%}" for k, v in row["detection"].items())
            lines.append(
                f"{name} {target} threshold={row['threshold']}\n    FA: {fa}\n    DET: {det}"
            )
    return "\n".join(lines)


def install_cache(path: Path) -> Any:
    """A writable passage store, so vectors and entities computed once are found next run."""
    from ragtrace._backends import passage_store

    path.parent.mkdir(parents=True, exist_ok=True)
    store = passage_store.PassageStore(path, writable=True)
    passage_store.install(store)
    return store


def point_summary(table: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per score: worst false alarms and worst named detection, with every cell's rate."""
    out = verdicts(table)
    for name, cells in table.items():
        if name in out:
            out[name]["cells"] = {k: c["rate"] for k, c in cells.items()}
    return out


def record_rates(path: Path, part: str, by_point: dict[str, dict[str, Any]]) -> None:
    """Write the measured rates of ``part`` into the packaged rates file (other parts kept)."""
    from ragtrace.evaluators import _operating_points as op

    found = json.loads(path.read_text()) if path.exists() else {}
    found["command"] = "python benchmarks/alarms.py --part locked --record"
    found["budget"] = {"false_alarms": FALSE_ALARM_BUDGET, "detection": DETECTION_FLOOR}
    evaluators = found.setdefault("evaluators", {})
    for name, points in by_point.items():
        entry = evaluators.setdefault(name, {"points": {}})
        for point, info in points.items():
            slot = entry["points"].setdefault(point, {})
            slot["thresholds"] = info["thresholds"]
            slot[part] = {
                score: {
                    "false_alarms": s["worst_false_alarms"],
                    "detection": s["worst_detection"],
                    "meets": s["meets"],
                    "cells": s.get("cells", {}),
                }
                for score, s in info["summary"].items()
            }
        order = [p for p in op.POINT_NAMES if p in entry["points"]]
        entry["points"] = {p: entry["points"][p] for p in order}
    path.write_text(json.dumps(found, indent=1, sort_keys=False) + "\n")


def thresholds_of(evaluator: Evaluator) -> dict[str, float | None]:
    """The thresholds an evaluator applies, by score name (for the record)."""
    verdicts = getattr(evaluator, "verdict_thresholds", None)
    if callable(verdicts):  # faithfulness: a hallucination-probability cut per calibration
        return {f"hallucination>{k}": v for k, v in verdicts().items()}
    own = getattr(evaluator, "thresholds", None)
    if isinstance(own, dict) and own:
        prefix = evaluator.name + "."
        return {(k if k.startswith(prefix) else prefix + k): v for k, v in own.items()}
    if evaluator.point_thresholds:
        return dict(evaluator.point_thresholds)
    return {evaluator.name: evaluator.threshold}


def compared_rows(first: dict[str, Any], second: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (evaluator, operating point, score) found in both runs."""
    out = []
    for evaluator, points in first["points"].items():
        for point, info in points.items():
            other = second["points"].get(evaluator, {}).get(point)
            if other is None:
                continue
            for score, a in info["summary"].items():
                b = other["summary"].get(score)
                if b is None:
                    continue
                both = set(a.get("cells", {})) & set(b.get("cells", {}))
                diffs = {
                    c: abs(a["cells"][c] - b["cells"][c])
                    for c in both
                    if a["cells"][c] is not None and b["cells"][c] is not None
                }
                worst = max(diffs.values(), default=0.0)
                where = max(diffs, key=diffs.__getitem__) if worst > 0 else ""
                out.append(
                    {
                        "evaluator": evaluator,
                        "point": point,
                        "score": score,
                        "max_diff": worst,
                        "cell": where,
                        "fa": (a["worst_false_alarms"], b["worst_false_alarms"]),
                        "det": (a["worst_detection"], b["worst_detection"]),
                        "budget_lost": _within_budget(a["worst_false_alarms"])
                        and not _within_budget(b["worst_false_alarms"]),
                    }
                )
    return out


def _within_budget(rate: float | None) -> bool:
    return rate is not None and rate <= FALSE_ALARM_BUDGET


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


RECORDED = "recorded:"


def run_of(path: Path) -> dict[str, Any]:
    """A run's ``--json``; ``recorded:tuning`` or ``recorded:locked``: the rates recorded for
    that part in ``ragtrace/evaluators/data/alarm_rates.json``, in the same shape."""
    if not str(path).startswith(RECORDED):
        return json.loads(path.read_text())  # type: ignore[no-any-return]
    from ragtrace.evaluators._operating_points import RATES_FILE

    part = str(path)[len(RECORDED) :]
    recorded = json.loads(Path(RATES_FILE).read_text())["evaluators"]
    points: dict[str, dict[str, Any]] = {}
    for evaluator, entry in recorded.items():
        for point, info in entry["points"].items():
            if part not in info:
                continue
            summary = {
                score: {
                    "worst_false_alarms": s["false_alarms"],
                    "worst_detection": s["detection"],
                    "meets": s["meets"],
                    "cells": s.get("cells", {}),
                }
                for score, s in info[part].items()
            }
            points.setdefault(evaluator, {})[point] = {"summary": summary}
    return {"points": points}


def compare(first_path: Path, second_path: Path, tolerance: float) -> int:
    """``--compare A.json B.json``: two runs' ``--json`` side by side, every rate of one against
    the other's; for each score and operating point the largest difference over every cell, the
    worst false-alarm rate of each, and whether the second keeps the false-alarm budget where the
    first did. The rule (docs/decisions/embedding-cost.md): every difference within
    ``tolerance`` and no budget lost; 0 when it holds, 1 when it does not."""
    first, second = (run_of(p) for p in (first_path, second_path))
    found = compared_rows(first, second)
    table = [
        [
            r["evaluator"],
            r["point"],
            r["score"],
            f"{r['max_diff']:.3f}",
            r["cell"],
            f"{_pct(r['fa'][0])} / {_pct(r['fa'][1])}",
            f"{_pct(r['det'][0])} / {_pct(r['det'][1])}",
            "LOST" if r["budget_lost"] else "",
        ]
        for r in found
    ]
    header = ["evaluator", "point", "score", "max |diff|", "at", "worst FA", "worst det", "budget"]
    print(f"{first_path} / {second_path}")
    print(markdown_table(header, table))
    beyond = [r for r in found if r["max_diff"] > tolerance]
    lost = [r for r in found if r["budget_lost"]]
    holds = not beyond and not lost
    print(
        f"\n{len(beyond)} of {len(found)} rows differ by more than {tolerance}; "
        f"{len(lost)} lose the false-alarm budget: the rule "
        f"{'holds' if holds else 'does NOT hold'}"
    )
    return 0 if holds else 1


# -- the demo's alerts, live (``--demo``) ------------------------------------------------------

URL_LINE = re.compile(r"^prometheus at (http://127\.0\.0\.1:\d+) ")
SWITCH_LINE = re.compile(r"^ragtrace demo: switched (\w+) -> (\w+) at ([\d.]+) s")
QUALITY_GROUP = "ragtrace.quality"


def alerts(url: str) -> list[dict[str, Any]]:
    """The alerts the Prometheus at ``url`` holds now (pending and firing)."""
    with urllib.request.urlopen(f"{url}/api/v1/alerts", timeout=5) as response:
        found: list[dict[str, Any]] = json.load(response)["data"]["alerts"]
    return found


def quality_alert_names() -> set[str]:
    """The alerts of the shipped ``ragtrace.quality`` group."""
    import yaml

    path = ROOT / "grafana" / "prometheus" / "ragtrace-alerts.rules.yml"
    groups = yaml.safe_load(path.read_text())["groups"]
    return {
        r["alert"] for g in groups if g["name"] == QUALITY_GROUP for r in g["rules"] if "alert" in r
    }


def demo_alerts(args: argparse.Namespace) -> dict[str, Any]:
    """Run the demo with its time-lapsed Prometheus; when each alert first went pending and
    firing, and the end of the demo's output (its summary)."""
    command = [sys.executable, "-m", "ragtrace", "demo", "--prometheus", "--no-live"]
    command += ["--metrics-port", "0", "--duration", str(args.duration)]
    command += ["--rate", str(args.demo_rate)]
    command += ["--alert-time-scale", str(args.time_scale), "--scenario", args.scenario]
    if args.degrade_after is not None:
        command += ["--degrade-after", str(args.degrade_after)]
    if args.demo_evaluators:
        command += ["--evaluators", args.demo_evaluators]
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    state: dict[str, Any] = {"url": None, "switch": None, "tail": []}

    def read() -> None:
        for line in process.stdout or ():
            if (m := URL_LINE.match(line)) and state["url"] is None:
                state["url"] = m[1]
            elif m := SWITCH_LINE.match(line):
                state["switch"] = time.monotonic()
            elif not line[:5].strip().isdigit():
                state["tail"].append(line.rstrip())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    started = time.monotonic()
    first: dict[tuple[str, str, str], float] = {}
    quality = quality_alert_names()
    try:
        while process.poll() is None:
            time.sleep(0.5)
            if state["url"] is None:
                continue
            try:
                held = alerts(state["url"])
            except OSError:
                continue
            now = time.monotonic()
            for alert in held:
                key = (
                    alert["labels"]["alertname"],
                    alert["labels"].get("evaluator", ""),
                    alert["state"],
                )
                first.setdefault(key, now)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        process.wait(120)
        reader.join(10)
    switch = state["switch"]
    origin = switch if switch is not None else started
    rows = [
        {
            "alert": name,
            "evaluator": evaluator,
            "state": alert_state,
            "quality": name in quality,
            "after_switch_s" if switch is not None else "after_start_s": round(t - origin, 1),
        }
        for (name, evaluator, alert_state), t in sorted(first.items(), key=lambda kv: kv[1])
    ]
    return {"command": " ".join(command[1:]), "rows": rows, "tail": state["tail"][-40:]}


def demo_text(found: dict[str, Any], scale: float) -> str:
    """What ``demo_alerts`` found, one line per alert, evaluator and state."""
    lines = [found["command"], *found["tail"]]
    for row in found["rows"]:
        when = row.get("after_switch_s", row.get("after_start_s"))
        since = "after the switch" if "after_switch_s" in row else "after the start"
        lines.append(
            f"{row['alert']:<32} {row['evaluator']:<36} {row['state']:<8} "
            f"{when:6.1f} s {since} (x{scale:g}: {when * scale / 60:.0f} min in real time)"
            + ("" if row["quality"] else "  [not a quality alert]")
        )
    if not found["rows"]:
        lines.append("no alert went pending")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--part", choices=(TUNING, LOCKED), default=TUNING)
    parser.add_argument("--only", help="comma-separated evaluators of the online suite")
    parser.add_argument("--sweep", action="store_true", help="thresholds per false-alarm target")
    parser.add_argument(
        "--points", action="store_true", help="also score every named operating point"
    )
    parser.add_argument("--options", help="JSON: evaluator -> extra constructor options")
    parser.add_argument(
        "--record",
        action="store_true",
        help="write the rates into ragtrace/evaluators/data/alarm_rates.json (implies --points)",
    )
    parser.add_argument(
        "--markdown",
        metavar="POINT",
        help="print the recorded rates of one operating point as a markdown table and exit",
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument(
        "--compare",
        nargs=2,
        type=Path,
        metavar=("A.json", "B.json"),
        help="compare two runs' --json cell by cell and exit (1: the rule does not hold); "
        "recorded:tuning or recorded:locked for the rates recorded in alarm_rates.json",
    )
    parser.add_argument("--tolerance", type=float, default=0.01, help="for --compare")
    parser.add_argument(
        "--traffic",
        action="store_true",
        help="score the per-row verdicts benchmarks/alert_traffic.py draws from, and exit",
    )
    parser.add_argument("--rows-per-cell", type=int, default=ROWS_PER_CELL, help="for --traffic")
    parser.add_argument(
        "--demo",
        action="store_true",
        help="time the alerts of a live ragtrace demo --prometheus (time-lapsed) and exit",
    )
    parser.add_argument("--time-scale", type=float, default=60.0, help="for --demo")
    parser.add_argument("--scenario", default="good", help="for --demo")
    parser.add_argument("--degrade-after", type=float, help="for --demo: seconds")
    parser.add_argument("--duration", type=float, default=150.0, help="for --demo: seconds")
    parser.add_argument("--demo-rate", type=float, default=10.0, help="for --demo: requests/s")
    parser.add_argument(
        "--demo-evaluators",
        default="looping,tokens_presence",
        help="for --demo: comma-separated; '' for the demo's full suite",
    )
    parser.add_argument(
        "--agents",
        action="store_true",
        help="score the agent evaluators on scripted LangChain agent turns, both parts, and exit",
    )
    parser.add_argument(
        "--runs-per-kind", type=int, default=AGENT_RUNS_PER_KIND, help="for --agents, per part"
    )
    args = parser.parse_args(argv)
    if args.agents:
        agent_alarms(args.runs_per_kind, args.json or RESULTS / "agent_alarms.json")
        return 0
    if args.demo:
        timed = demo_alerts(args)
        print(demo_text(timed, args.time_scale))
        path = args.json or RESULTS / "demo_alerts.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(timed, indent=1) + "\n")
        print(f"wrote {path}")
        return 0
    if args.traffic:
        for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
            os.environ.setdefault(var, "1")
        path = RESULTS / f"alert_rows_{args.part}.json"
        rows = score_rows(data_dir(args.data_dir), args.part, args.rows_per_cell, path)
        print(f"{len(rows)} scores, {len(pools(rows))} (score, data set) pools in {path}")
        return 0
    if args.compare:
        return compare(args.compare[0], args.compare[1], args.tolerance)
    if args.markdown:
        from ragtrace.evaluators._operating_points import RATES_FILE

        print(markdown(RATES_FILE, args.markdown))
        return 0
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(var, "1")
    folder = data_dir(args.data_dir)
    store = None if args.no_cache else install_cache(CACHE)
    cases = build(folder, (args.part,))
    extra = json.loads(args.options) if args.options else {}
    options = suite_options("default", {k: v for k, v in extra.items() if k in ONLINE_SUITE})
    options.update({name: dict(extra.get(name, {})) for name in CANDIDATES})
    chosen = args.only.split(",") if args.only else list(options)
    unknown = set(chosen) - set(options)
    if unknown:
        parser.error(f"not in the online suite: {sorted(unknown)}")
    results: list[Result] = []
    seconds: dict[str, float] = {}
    by_point: dict[str, dict[str, Any]] = {}
    for name in chosen:
        evaluator = create(name, **options[name])
        found, took = run_evaluator(evaluator, cases.by_evaluator.get(name, []))
        results.extend(found)
        seconds[name] = round(took, 1)
        print(f"{name}: {len(found)} scores in {took:.0f} s", flush=True)
        points = type(evaluator).operating_points if (args.points or args.record) else {}
        by_point[name] = {}
        for point in points:
            if point == evaluator.operating_point:
                scored, built = found, evaluator
            else:
                built = create(name, **{**options[name], "threshold": point})
                scored, _ = run_evaluator(built, cases.by_evaluator.get(name, []))
            by_point[name][point] = {
                "thresholds": thresholds_of(built),
                "summary": point_summary(rates(scored)),
            }
    if store is not None:
        store.flush()
    table = rates(results)
    summary = verdicts(table)
    print(table_text(table, summary, args.part))
    if by_point:
        print(points_text(by_point))
    out: dict[str, Any] = {
        "part": args.part,
        "options": options,
        "seconds": seconds,
        "rates": table,
        "summary": summary,
        "points": by_point,
    }
    if args.sweep:
        out["sweep"] = sweep(results)
        print(sweep_text(out["sweep"]))
    path = args.json or RESULTS / ("alarms.json" if args.part == TUNING else "alarms_locked.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, default=str) + "\n")
    print(f"wrote {path}")
    if args.record:
        from ragtrace.evaluators._operating_points import RATES_FILE

        record_rates(RATES_FILE, args.part, {k: v for k, v in by_point.items() if v})
        print(f"recorded the {args.part} part's rates in {RATES_FILE}")
    return 0


def markdown(rates_file: Path, point: str = "default") -> str:
    """The recorded rates of ``point`` as BENCHMARKS.md's table: per score, the share of normal
    answers failed per data set and of each kind of bad answers caught, tuning and locked."""
    found = json.loads(rates_file.read_text())
    lines = [
        "| score | answers | data set | tuning | locked |",
        "|---|---|---|---|---|",
    ]
    for entry in found["evaluators"].values():
        info = entry["points"].get(point)
        if not info:
            continue
        for score, locked in info.get("locked", {}).items():
            tuning = info.get("tuning", {}).get(score, {}).get("cells", {})
            spec = SCORES.get(score)
            for key, rate in locked["cells"].items():
                kind, dataset = key.split("|")
                if kind != NORMAL and spec is not None and kind not in spec.named:
                    kind += " (shown beside)"
                before = _cell(tuning.get(key))
                if (score, dataset) in IN_SAMPLE_ON_TUNING and before != "-":
                    before += " (in-sample)"
                lines.append(f"| `{score}` | {kind} | {dataset} | {before} | {_cell(rate)} |")
            status = "meets" if locked["meets"] else "misses"
            if spec is not None and not spec.alarm:
                status = "information, no alarm"
            elif score in OWN_TARGETS:
                status = f"misses; {OWN_TARGETS[score]}"
            elif spec is not None and spec.evaluator not in ONLINE_SUITE:
                status += "; not in the default suite"
            lines.append(
                f"| `{score}` | **worst** | | {_cell(info['tuning'][score]['false_alarms'])} / "
                f"{_cell(info['tuning'][score]['detection'])} | "
                f"**{_cell(locked['false_alarms'])} / {_cell(locked['detection'])}** ({status}) |"
            )
    return "\n".join(lines)


def _cell(rate: object) -> str:
    return "-" if not isinstance(rate, int | float) else f"{rate:.1%}"


def points_text(by_point: dict[str, dict[str, Any]]) -> str:
    lines = ["", f"{'operating point':24} {'score':36} {'worst FA':>9} {'worst det':>9}"]
    for name, points in by_point.items():
        for point, info in points.items():
            for score, s in info["summary"].items():
                fa = "-" if s["worst_false_alarms"] is None else f"{s['worst_false_alarms']:.1%}"
                det = "-" if s["worst_detection"] is None else f"{s['worst_detection']:.1%}"
                lines.append(f"{name + ' ' + point:24} {score:36} {fa:>9} {det:>9}")
    return "\n".join(lines)


# -- per-row scores for the alert-traffic simulation (``--traffic``) ------------------------------

# The evaluators whose scores the quality alerts read (PII, secrets and toxicity have alerts of
# their own). A bad answer of the simulated traffic is one of the bad kinds its score names
# (``SCORES``): an invented fact for faithfulness, an answer off its passages for groundedness.
TRAFFIC_EVALUATORS = (
    "looping",
    "language_mismatch",
    "answer_relevance",
    "context_relevance",
    "groundedness",
    "faithfulness",
)
ROWS_PER_CELL = 150
ROWS_SEED = 6606


def bounded_cases(cases: Sequence[Case], per_cell: int, seed: int) -> list[Case]:
    """At most ``per_cell`` cases of each (kind, data set), drawn with a fixed seed."""
    import random

    cells: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for case in cases:
        cells[(case.kind, case.dataset)].append(case)
    rng = random.Random(seed)
    out: list[Case] = []
    for key in sorted(cells):
        members = cells[key]
        out.extend(members if len(members) <= per_cell else rng.sample(members, per_cell))
    return out


def score_rows(folder: Path, part: str, per_cell: int, path: Path) -> list[dict[str, Any]]:
    """Per-row scores of ``TRAFFIC_EVALUATORS`` on ``part`` (at most ``per_cell`` rows per kind
    and data set), read from ``path`` when an earlier run with the same bound wrote it."""
    if path.exists():
        kept = json.loads(path.read_text())
        if kept.get("part") == part and kept.get("per_cell") == per_cell:
            rows: list[dict[str, Any]] = kept["rows"]
            return rows
    store = install_cache(CACHE)
    cases = build(folder, (part,))
    options = suite_options("default", {})
    rows = []
    for name in TRAFFIC_EVALUATORS:
        chosen = bounded_cases(cases.by_evaluator.get(name, []), per_cell, ROWS_SEED)
        found, took = run_evaluator(create(name, **options[name]), chosen)
        print(f"{name}: {len(found)} scores of {len(chosen)} rows in {took:.0f} s", flush=True)
        for r in found:
            if r.score.error is None and r.score.value is not None:
                rows.append(
                    {
                        "score": r.score.name,
                        "dataset": r.case.dataset,
                        "kind": r.case.kind,
                        "id": r.case.id,
                        "value": float(r.score.value),
                        "passed": r.score.passed,
                    }
                )
    store.flush()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"part": part, "per_cell": per_cell, "rows": rows}) + "\n")
    return rows


# -- the rows benchmarks/alert_traffic.py draws its traffic from (``--traffic``) -------------


@dataclass(frozen=True)
class Pool:
    """The measured values (and verdicts) of one score on one data set: normal and bad rows."""

    score: str
    dataset: str
    good: Any  # numpy array of (value, passed) rows
    bad: Any


def pools(rows: Sequence[dict[str, Any]], min_rows: int = 30) -> list[Pool]:
    """One pool per (score, data set) with enough normal and bad rows."""
    import numpy as np

    cells: dict[tuple[str, str, bool], list[tuple[float, float]]] = defaultdict(list)
    for row in rows:
        score = row["score"]
        if score not in SCORES or not SCORES[score].alarm:
            continue
        if row["kind"] == NORMAL:
            bad = False
        elif row["kind"] in SCORES[score].named:
            bad = True
        else:
            continue
        passed = row["passed"]
        cells[(score, row["dataset"], bad)].append(
            (row["value"], float(passed) if passed is not None else float("nan"))
        )
    # Bad answers built from a set of their own (another language's sentences) serve every
    # data set's traffic: they are no data set's answers.
    shared: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for (score, dataset, bad), found in cells.items():
        if bad and not cells.get((score, dataset, False)):
            shared[score].extend(found)
    out = []
    for score, dataset in sorted({(s, d) for s, d, _ in cells}):
        good = cells.get((score, dataset, False), [])
        bad = cells.get((score, dataset, True), []) or shared.get(score, [])
        if len(good) >= min_rows and len(bad) >= min_rows:
            out.append(Pool(score, dataset, np.array(good), np.array(bad)))
    return out


# -- agent turns (``--agents``) -----------------------------------------------------------------

AGENT_RUNS_PER_KIND = 300
_OTHERS = ("tool_outage", "repeated_calls", "runaway_loop", "wrong_tool")
AGENT_SCORES: dict[str, Named] = {
    name: Named(name, (kind,), tuple(k for k in _OTHERS if k != kind))
    for name, kind in (
        ("tool_errors", "tool_outage"),
        ("repeated_tool_calls", "repeated_calls"),
        ("agent_steps", "runaway_loop"),
    )
}
DEFAULT = "(default)"
# The shipped options first, then the alternatives scored beside them on the tuning part.
AGENT_GRID: dict[str, tuple[tuple[str, dict[str, Any]], ...]] = {
    "tool_errors": (
        (f"count_recovered=False {DEFAULT}", {}),
        ("count_recovered=True", {"count_recovered": True}),
        ("threshold=0.5", {"threshold": 0.5}),
    ),
    "repeated_tool_calls": (
        (f"count_retries=False {DEFAULT}", {}),
        ("count_retries=True", {"count_retries": True}),
        ("threshold=0.25", {"threshold": 0.25}),
    ),
    "agent_steps": tuple(
        (f"max_llm_calls={n}" + (f" {DEFAULT}" if n == 10 else ""), {"max_llm_calls": n})
        for n in (4, 5, 6, 8, 10, 15, 20)
    ),
}


def traffic_shape(cases: Sequence[Case]) -> dict[str, dict[str, Any]]:
    """Per kind of turn: how many, LLM and tool calls, and how many made a failed or no call."""
    out: dict[str, dict[str, Any]] = {}
    for kind in (NORMAL, *AGENT_KINDS):
        records = [c.record for c in cases if c.kind == kind]
        if not records:
            continue
        llm = sorted(r.llm_calls for r in records)
        tools = [len(r.tool_calls) for r in records]
        out[kind] = {
            "turns": len(records),
            "llm_calls": {"min": llm[0], "median": llm[len(llm) // 2], "max": llm[-1]},
            "tool_calls_max": max(tools),
            "no_tool_call": sum(t == 0 for t in tools) / len(records),
            "a_failed_call": sum(any(c.status == "error" for c in r.tool_calls) for r in records)
            / len(records),
        }
    return out


def agent_part(part: str, cases: Sequence[Case], grid: bool) -> dict[str, Any]:
    """False alarms and detection of the agent evaluators on one part's agent turns: with their
    shipped options, and (``grid``) with each alternative of ``AGENT_GRID``."""
    scored: dict[str, Any] = {}
    for name, variants in AGENT_GRID.items():
        scored[name] = {}
        for label, options in variants if grid else _shipped(variants):
            found, _ = run_evaluator(create(name, **options), cases)
            table = rates(found)
            cells = table.get(name, {})
            scored[name][label] = {
                "options": options,
                "rates": cells,
                "skipped": {
                    kind: sum(c.kind == kind for c in cases)
                    - cells.get(f"{kind}|{cases[0].dataset}", {}).get("n", 0)
                    for kind in (NORMAL, *AGENT_KINDS)
                },
                "summary": verdicts(table, AGENT_SCORES).get(name, {}),
            }
    return {"part": part, "turns": len(cases), "traffic": traffic_shape(cases), "scores": scored}


def _shipped(
    variants: tuple[tuple[str, dict[str, Any]], ...],
) -> tuple[tuple[str, dict[str, Any]], ...]:
    return tuple(v for v in variants if v[0].endswith(DEFAULT))


def agent_rate(found: dict[str, Any], kind: str) -> float | None:
    """The share of ``kind``'s scored turns that failed, in one variant's ``rates``."""
    cell = next((c for k, c in found["rates"].items() if k.split("|")[0] == kind), None)
    return None if cell is None else cell["rate"]


def agent_text(result: dict[str, Any]) -> str:
    """One part's rates: a line per evaluator and options, a column per kind of turn."""
    kinds = (NORMAL, *AGENT_KINDS)
    lines = [
        f"part: {result['part']} ({result['turns']} turns); per kind, the share of scored turns "
        "that fail (* the kind the score is held to)",
        f"{'score':21} {'options':32} " + " ".join(f"{k:>14}" for k in kinds) + "  verdict",
    ]
    for name, variants in result["scores"].items():
        spec = AGENT_SCORES[name]
        for label, found in variants.items():
            cells = []
            for kind in kinds:
                rate = agent_rate(found, kind)
                mark = "*" if kind in spec.named else " "
                cells.append(f"{_pct(rate) + mark:>14}")
            meets = "meets" if found["summary"].get("meets") else "MISSES"
            lines.append(f"{name:21} {label:32} " + " ".join(cells) + f"  {meets}")
    for kind, shape in result["traffic"].items():
        llm = shape["llm_calls"]
        lines.append(
            f"  {kind:14} {shape['turns']:4d} turns, LLM calls {llm['min']}-{llm['max']} "
            f"(median {llm['median']}), at most {shape['tool_calls_max']} tool calls, "
            f"{shape['no_tool_call']:.0%} with none, {shape['a_failed_call']:.0%} with a failed one"
        )
    return "\n".join(lines)


def agent_markdown(tuning: dict[str, Any], locked: dict[str, Any]) -> str:
    """BENCHMARKS.md's table: each agent score with its shipped options, tuning / locked."""
    kinds = (NORMAL, *AGENT_KINDS)
    lines = [
        "| score (default) | " + " | ".join(kinds) + " |",
        "|---|" + "---|" * len(kinds),
    ]
    for name, spec in AGENT_SCORES.items():
        ((label, _),) = _shipped(AGENT_GRID[name])
        first, second = tuning["scores"][name][label], locked["scores"][name][label]
        cells = []
        for kind in kinds:
            cell = f"{_pct(agent_rate(first, kind))} / {_pct(agent_rate(second, kind))}"
            cells.append(f"**{cell}**" if kind in spec.named or kind == NORMAL else cell)
        lines.append(f"| `{name}` {label.removesuffix(DEFAULT).strip()} | " + " | ".join(cells))
    return "\n".join(line + (" |" if not line.endswith("|") else "") for line in lines)


def agent_alarms(runs_per_kind: int, path: Path) -> dict[str, Any]:
    """``--agents``: the tuning part with every alternative, the locked part with the shipped
    options only; prints both and the markdown table, writes ``path``."""
    tuning = agent_part(TUNING, agent_cases(runs_per_kind, (TUNING,)), grid=True)
    print(agent_text(tuning), flush=True)
    locked = agent_part(LOCKED, agent_cases(runs_per_kind, (LOCKED,)), grid=False)
    print(agent_text(locked))
    print(agent_markdown(tuning, locked))
    out = {"runs_per_kind": runs_per_kind, TUNING: tuning, LOCKED: locked}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")
    return out


if __name__ == "__main__":
    raise SystemExit(main())
