"""``ragtrace alerts backtest``: how long replaying a week of verdicts through the shipped rules
takes, phase by phase.

The workload (seeded): one app, 1 verdict a second for each of 3 scores (``faithfulness``,
a mean score; ``answer_relevance`` and ``context_relevance.precision``, pass rates) over
``--days`` days; normal answers (3% bad) but for a bad release of 3 hours (25% bad) starting
a day before the end, so that the quality alerts have something to fire on. Times are spread
at random within each second and the lines shuffled in blocks of a minute, as several
workers writing one file would leave them.

Phases, as the command runs them: reading the file, sampling the counters, ``promtool check
rules`` and the sample-limit check, writing the promtool unit test, ``promtool test rules``
(the rule evaluations and one query per step; its CPU time and peak resident memory beside),
reading its report into episodes. The default step is 61 s: at 60 s promtool's limit of 10,000
samples in one query refuses the shipped rules' 7-day baselines over a whole week. Run::

    .venv/bin/python benchmarks/backtest.py               # a week: 1.8 million verdicts, 2-3 min
    .venv/bin/python benchmarks/backtest.py --days 1      # smoke test

Prints a table and writes ``benchmarks/results/backtest.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from ragtrace._alerts import promtool as promtool_run
from ragtrace._alerts.backtest import episodes
from ragtrace._alerts.rules import rule_files
from ragtrace._alerts.series import sample
from ragtrace._alerts.verdicts import read_verdicts

START = 1_717_200_000  # 2024-06-01 00:00 UTC
APP = "shop"
# score -> (is a mean score, good answers' value range, bad answers' value range)
SCORES = {
    "faithfulness": (True, (0.7, 1.0), (0.0, 0.5)),
    "answer_relevance": (False, (0.6, 1.0), (0.0, 0.4)),
    "context_relevance.precision": (False, (0.6, 1.0), (0.0, 0.4)),
}
NORMAL_BAD = 0.03
RELEASE_BAD = 0.25
RELEASE_S = 3 * 3600


def write_verdicts(path: Path, days: float, seed: int) -> dict[str, Any]:
    """The verdicts file of the workload; what it holds."""
    rng = random.Random(seed)
    seconds = int(days * 86400)
    release = max(0, seconds - 86400)
    lines = 0
    with open(path, "w", encoding="utf-8") as f:
        for minute in range(0, seconds, 60):
            block = []
            for second in range(minute, min(minute + 60, seconds)):
                bad_share = RELEASE_BAD if release <= second < release + RELEASE_S else NORMAL_BAD
                for name, (_, good, bad) in SCORES.items():
                    is_bad = rng.random() < bad_share
                    low, high = bad if is_bad else good
                    value = rng.uniform(low, high)
                    passed = "false" if value < 0.5 else "true"
                    t = START + second + rng.random()
                    block.append(
                        f'{{"time": {t:.3f}, "app": "{APP}", "evaluator": "{name}", '
                        f'"value": {value:.4f}, "passed": {passed}}}\n'
                    )
            rng.shuffle(block)
            f.writelines(block)
            lines += len(block)
    return {
        "verdicts": lines,
        "days": days,
        "scores": len(SCORES),
        "per_second_per_score": 1,
        "bad_release_at_s": release,
        "file_mb": round(path.stat().st_size / 1e6, 1),
    }


def run(path: Path, step: int) -> dict[str, Any]:
    """The backtest of ``path`` with the shipped rules, phase by phase."""
    rules = rule_files()
    binary = promtool_run.find_promtool()
    timings: dict[str, float] = {}

    def timed(name: str, start: float) -> float:
        now = time.perf_counter()
        timings[name] = round(now - start, 2)
        return now

    t = time.perf_counter()
    with open(path, "rb") as f:
        verdicts = read_verdicts(f, str(path))
    t = timed("read_s", t)
    sampled = sample(verdicts, step)
    t = timed("sample_s", t)
    promtool_run.check_rules(binary, rules)
    promtool_run.check_sample_limit(rules, sampled)
    t = timed("check_rules_s", t)
    with tempfile.TemporaryDirectory(prefix="ragtrace-bench-promtool-") as tmp:
        test = Path(tmp) / "backtest.test.yml"
        test.write_text(json.dumps(promtool_run.unit_test(sampled, rules), ensure_ascii=False))
        t = timed("unit_test_s", t)
        report = Path(tmp) / "report.txt"
        cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(report, "wb") as out:
            process = subprocess.Popen([binary, "test", "rules", str(test)], stdout=out,
                                       stderr=subprocess.STDOUT, cwd=tmp)  # fmt: skip
            peak_kb = 0
            while process.poll() is None:  # VmHWM: the process's peak resident memory so far
                peak_kb = max(peak_kb, _status_kb(process.pid, "VmHWM"))
                time.sleep(0.2)
        cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = timed("promtool_test_s", t)
        unit_test_mb = test.stat().st_size / 1e6
        with open(report, encoding="utf-8") as lines:
            changes = list(promtool_run.parse_report(lines, promtool_run.changes_expr(step), ""))
    found = episodes(changes, sampled.start)
    timed("episodes_s", t)
    timings["total_s"] = round(sum(timings.values()), 2)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    fired = [e for e in found if e.firing_at is not None]
    return {
        **timings,
        "promtool_cpu_s": round(cpu, 1),
        "promtool_peak_rss_mb": round(peak_kb / 1024),
        "python_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "steps": sampled.samples,
        "input_series": len(sampled.series),
        "unit_test_mb": round(unit_test_mb, 1),
        "alert_changes": len(changes),
        "episodes": len(found),
        "fired": sorted(
            {
                f"{e.alertname} {e.labels.get('evaluator', '')}: "
                f"{(e.firing_at - START) / 3600:.2f} h"
                for e in fired
                if e.firing_at is not None
            }
        ),
    }


def _status_kb(pid: int, field: str) -> int:
    """A ``/proc/PID/status`` field in kB (0 once the process is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=float, default=7.0, help="days of verdicts (default 7)")
    parser.add_argument("--step", type=int, default=61, help="seconds between steps (61)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=HERE / "results" / "backtest.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ragtrace-bench-backtest-") as tmp:
        path = Path(tmp) / "verdicts.jsonl"
        started = time.perf_counter()
        workload = write_verdicts(path, args.days, args.seed)
        workload["generate_s"] = round(time.perf_counter() - started, 1)
        measured = run(path, args.step)
    result = {
        "workload": workload,
        "backtest": measured,
        "cpu": platform.processor() or platform.machine(),
        "cores": len(os.sched_getaffinity(0)),
    }
    rows = [(k, v) for k, v in {**workload, **measured}.items() if k != "fired"]
    width = max(len(k) for k, _ in rows)
    print(f"{'measure'.ljust(width)} | figure")
    print(f"{'-' * width}-|-------")
    for key, value in rows:
        print(f"{key.ljust(width)} | {value}")
    for line in measured["fired"]:
        print(f"fired: {line}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
