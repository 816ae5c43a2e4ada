"""The pytest plugin's cost when a session scores nothing, and a re-run with the judge cache.

Three measurements, each in fresh processes, in rounds that take every case in turn (a busy
machine slows all of them alike); the table shows medians:

- ``import``: milliseconds to import ``ragtrace.testing.plugin`` (what pytest loads from the
  entry point) in an interpreter that has imported pytest, timed inside the child;
- ``session``: wall seconds of a pytest session of one trivial test (``-p no:cacheprovider``),
  with the plugin and with ``-p no:ragtrace``; the difference is what an unrelated project with
  ragtrace installed pays per run;
- ``--judge``: a session asserting ``judge_faithfulness`` on ``--cases`` cases against a real
  local llama.cpp judge (SmolLM2-135M, started here on loopback), run three times: first, again
  (answers from the judge cache in ``.pytest_cache``), and after ``--cache-clear``. Judge calls
  by outcome and wall seconds come from the plugin's own summary line.

Run::

    .venv/bin/python benchmarks/pytest_plugin.py                    # ~1-2 minutes
    .venv/bin/python benchmarks/pytest_plugin.py --rounds 5 --judge

It prints a table and writes ``benchmarks/results/pytest_plugin.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}
_IMPORT = """
import json, time, pytest
t = time.perf_counter()
import ragtrace.testing.plugin
print(json.dumps({"ms": (time.perf_counter() - t) * 1000}))
"""
_JUDGE_TEST = """
import ragtrace

def test_judged():
    result = ragtrace.evaluate("cases.jsonl", ["judge_faithfulness"], display="none")
    assert all(s.error is None for c in result for s in c.scores)
"""
_JUDGE_LINE = re.compile(r"judge: ([\d,]+) calls \(([^)]*)\)")


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **OFFLINE, **extra}
    for name in ("RAGTRACE_JUDGE_CACHE", "PYTEST_ADDOPTS"):
        env.pop(name, None)
    return env


def import_ms() -> float:
    out = subprocess.run(
        [sys.executable, "-c", _IMPORT], env=_env(), capture_output=True, text=True, check=True
    )
    value: float = json.loads(out.stdout.strip().splitlines()[-1])["ms"]
    return value


def session_s(folder: Path, *args: str, env: dict[str, str] | None = None) -> tuple[float, str]:
    """Wall seconds of ``pytest -q -p no:cacheprovider ARGS`` in ``folder``, and its output."""
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *args],
        cwd=folder, env=env or _env(), capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    if out.returncode not in (0, 1):
        raise RuntimeError(f"pytest {' '.join(args)} exited {out.returncode}:\n{out.stdout}")
    return time.perf_counter() - start, out.stdout


def plain_sessions(rounds: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"import": [], "with plugin": [], "-p no:ragtrace": []}
    with tempfile.TemporaryDirectory(prefix="ragtrace-bench-") as tmp:
        folder = Path(tmp)
        (folder / "test_plain.py").write_text("def test_plain():\n    assert True\n")
        cases = {
            "import": import_ms,
            "with plugin": lambda: session_s(folder, "-p", "no:cacheprovider")[0],
            "-p no:ragtrace": lambda: session_s(folder, "-p", "no:cacheprovider",
                                                "-p", "no:ragtrace")[0],
        }  # fmt: skip
        for rnd in range(rounds):
            names = list(cases)
            names = names[rnd % len(names) :] + names[: rnd % len(names)]
            for name in names:
                samples[name].append(cases[name]())
    return samples


def judge_reruns(cases: int) -> list[dict[str, Any]]:
    from ragtrace._judges import LocalJudgeServer

    server = LocalJudgeServer("smollm2-135m").start()
    env = _env(RAGTRACE_JUDGE_MODEL=server.model_name, RAGTRACE_JUDGE_API_BASE=server.api_base)
    runs = []
    try:
        with tempfile.TemporaryDirectory(prefix="ragtrace-bench-") as tmp:
            folder = Path(tmp)
            lines = [
                {"id": f"c{i}", "query": f"What does plan {i} cost?",
                 "contexts": [f"Plan {i} costs {10 + i} euros a month and includes {i} seats."],
                 "response": f"Plan {i} costs {10 + i} euros a month."}
                for i in range(cases)
            ]  # fmt: skip
            (folder / "cases.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
            (folder / "test_judge.py").write_text(_JUDGE_TEST)
            for name, args in (
                ("first run", ()),
                ("re-run", ()),
                ("--cache-clear", ("--cache-clear",)),
            ):
                seconds, output = session_s(folder, *args, env=env)
                found = _JUDGE_LINE.search(output)
                if found is None:
                    raise RuntimeError(f"no judge line in:\n{output}")
                outcomes = dict(item.rsplit(" ", 1) for item in found.group(2).split(", "))
                runs.append({"run": name, "seconds": seconds, "calls": int(found.group(1)),
                             **{k: int(v) for k, v in outcomes.items()}})  # fmt: skip
    finally:
        server.stop()
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--judge", action="store_true", help="also the judge re-run (~1 min)")
    parser.add_argument("--cases", type=int, default=6, help="cases of the judge runs")
    args = parser.parse_args(argv)
    samples = plain_sessions(args.rounds)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    print(f"{'case':28s} {'median':>10s} {'min':>10s} {'max':>10s}")
    print(f"{'import plugin (ms)':28s} {medians['import']:10.1f} "
          f"{min(samples['import']):10.1f} {max(samples['import']):10.1f}")  # fmt: skip
    for name in ("with plugin", "-p no:ragtrace"):
        print(f"{'session ' + name + ' (s)':28s} {medians[name]:10.3f} "
              f"{min(samples[name]):10.3f} {max(samples[name]):10.3f}")  # fmt: skip
    added = medians["with plugin"] - medians["-p no:ragtrace"]
    ratio = medians["with plugin"] / medians["-p no:ragtrace"]
    print(f"plugin adds {added * 1000:+.0f} ms per session (ratio {ratio:.3f})")
    runs = judge_reruns(args.cases) if args.judge else []
    for run in runs:
        counts = ", ".join(f"{k} {v}" for k, v in run.items() if k not in ("run", "seconds"))
        print(f"judge {run['run']:14s} {run['seconds']:7.1f} s  {counts}")
    RESULTS.mkdir(exist_ok=True)
    out = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "rounds": args.rounds,
        "samples": samples,
        "medians": medians,
        "plugin_added_s": added,
        "ratio": ratio,
        "judge_runs": runs,
    }
    (RESULTS / "pytest_plugin.json").write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {RESULTS / 'pytest_plugin.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
