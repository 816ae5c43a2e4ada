"""Tracing overhead: process CPU time that tracing adds per request of a fixed RAG app.

Compares, interleaved in one run, on the same deterministic apps (a retriever returning four
~500-character chunks and the framework's own fake model):

- ``baseline``: no tracing;
- ``floor``: three hand-made OpenTelemetry spans per request (root, retriever, LLM) carrying the
  query, the four chunks (id, score, text) and the answer: what any tracer must at least pay;
- ``ragtrace``; ``ragtrace-api`` (ragtrace with ``direct_spans=False``: its spans through the
  SDK's ``Tracer.start_span`` rather than straight to the span processor); ``ragtrace-other``
  (with ``--compare-with PATH``: ragtrace imported from another checkout, for a before/after
  in one run); ``openinference``
  (OpenInference instrumentors); ``openllmetry`` (Traceloop's OpenTelemetry instrumentors);
  ``langfuse`` (its LangChain CallbackHandler, offline).

Every tracing configuration ends in an SDK TracerProvider with a BatchSpanProcessor around a no-op
exporter, so the numbers are instrumentation cost, not export cost. Scenarios: LangChain
``invoke``, ``stream`` (all chunks consumed), 50 concurrent ``ainvoke`` (CPU per request), and a
LlamaIndex ``query``.

Each (configuration, scenario, round) runs in a fresh process (``_overhead_worker.py``), because
instrumentors patch globals. Within a round, the processes of all configurations of a scenario
run side by side and take turns on ~50 ms chunks of requests in a rotating order
(``_overhead_runner.py``): on a shared VM the CPU's speed drifts over seconds, and turn-taking
makes the drift fall on every configuration alike. Each process reads its own
``time.process_time()`` (all its threads, the span processor's included, plus a final flush).
The table shows medians over rounds; overhead = configuration - baseline. A second table gives
the wall latency each configuration adds to a request, p50 and p99 (each sequential request
timed; the 50-way async scenario has none), as the median over rounds of (configuration -
baseline of the same round): wall time, so more sensitive to a busy machine than CPU time.

Run (peers live in their own virtual environment, never in ``.venv``)::

    make bench-env && .venv-bench/bin/python benchmarks/overhead.py
    .venv-bench/bin/python benchmarks/overhead.py --quick            # smoke test, < 1 minute
    .venv-bench/bin/python benchmarks/overhead.py --rounds 9 --requests 2000   # slower, tighter
    git worktree add /tmp/before REV && .venv-bench/bin/python benchmarks/overhead.py \
        --compare-with /tmp/before                                    # before/after, one run

The default run (5 rounds, 500 requests) takes about 8 minutes on 2 cores.

It prints the tables, then the capture targets met or the distance left
(``_overhead_targets.py``), and writes ``benchmarks/results/overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import _overhead_targets
from _overhead_apps import CONFIGS, OTHER_CHECKOUT_ENV, apply_offline_env
from _overhead_report import render
from _overhead_runner import BUSY_CORES, run_group, wait_idle
from _overhead_worker import ASYNC_BATCH, SCENARIOS

DEFAULT_JSON = HERE / "results" / "overhead.json"
STREAM_DIVISOR = 3  # a streamed request (~120 chunks, a callback each) costs ~4 invokes
VERSIONED = (
    "langchain-core",
    "llama-index-core",
    "opentelemetry-api",
    "opentelemetry-sdk",
    "ragtrace",
    "openinference-instrumentation-langchain",
    "openinference-instrumentation-llama-index",
    "opentelemetry-instrumentation-langchain",
    "opentelemetry-instrumentation-llamaindex",
    "llama-index-llms-openai",
    "langfuse",
)
NOT_MEASURED = ("not installed", "unsupported", "error", "timeout")


def _csv(value: str, allowed: Sequence[str], what: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in items if v not in allowed]
    if bad or not items:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(bad) or '(none)'}; choose from {', '.join(allowed)}"
        )
    return items


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="CPU time per request added by tracing: ragtrace vs. peers.",
    )
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument(
        "--requests",
        type=int,
        default=500,
        help="timed requests per process for invoke/query and async (rounded up to a multiple "
        f"of {ASYNC_BATCH}); stream runs requests/{STREAM_DIVISOR} (default 500)",
    )
    parser.add_argument(
        "--warmup", type=int, default=100, help="untimed requests first (default 100)"
    )
    parser.add_argument(
        "--configs",
        type=lambda v: _csv(v, CONFIGS, "config"),
        default=[c for c in CONFIGS if c != "ragtrace-other"],
        help=f"comma list from {','.join(CONFIGS)} (baseline is always added; "
        "ragtrace-other with --compare-with)",
    )
    parser.add_argument(
        "--compare-with",
        type=Path,
        metavar="PATH",
        help="a checkout of another ragtrace commit (git worktree add PATH REV): adds the "
        "ragtrace-other configuration, that code side by side with this one",
    )
    parser.add_argument(
        "--scenarios",
        type=lambda v: _csv(v, list(SCENARIOS), "scenario"),
        default=list(SCENARIOS),
        help=f"comma list from {','.join(SCENARIOS)}",
    )
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help="where to write results")
    parser.add_argument(
        "--quick", action="store_true", help="1 round, 40 requests: a smoke test, not a number"
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter for the workers (default: this one; use .venv-bench's)",
    )
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds before a worker is killed"
    )
    parser.add_argument(
        "--wait-idle",
        type=float,
        default=0.0,
        metavar="S",
        help="before each worker, wait up to S seconds for other processes to go quiet "
        "(for shared machines; default 0: do not wait)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.requests, args.warmup = 1, 40, 10
    if args.rounds < 1 or args.requests < 1 or args.warmup < 0:
        parser.error("--rounds and --requests must be >= 1, --warmup >= 0")
    if "baseline" not in args.configs:
        args.configs.insert(0, "baseline")
    if args.compare_with is not None:
        if not (args.compare_with / "ragtrace" / "__init__.py").is_file():
            parser.error(f"--compare-with: no ragtrace package under {args.compare_with}")
        if "ragtrace-other" not in args.configs:
            args.configs.insert(
                args.configs.index("ragtrace") + 1
                if "ragtrace" in args.configs
                else len(args.configs),
                "ragtrace-other",
            )
    return args


def plan(scenario: str, requests: int, warmup: int) -> tuple[int, int]:
    """(timed requests, warm-up requests) of one worker for ``scenario``."""
    if scenario == "lc-stream":
        return max(10, requests // STREAM_DIVISOR), max(5, warmup // STREAM_DIVISOR)
    if scenario == "lc-async":
        batches = max(1, math.ceil(requests / ASYNC_BATCH))
        return batches * ASYNC_BATCH, max(1, math.ceil(warmup / ASYNC_BATCH)) * ASYNC_BATCH
    return requests, warmup


def versions(python: str, env: dict[str, str]) -> dict[str, str | None]:
    code = (
        "import json, importlib.metadata as m\n"
        "def v(n):\n"
        "    try: return m.version(n)\n"
        "    except m.PackageNotFoundError: return None\n"
        f"print(json.dumps({{n: v(n) for n in {list(VERSIONED)!r}}}))\n"
    )
    proc = subprocess.run(
        [python, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    try:
        found: dict[str, str | None] = json.loads(proc.stdout)
    except ValueError:
        return {}
    return found


def _rotate(items: list[str], k: int) -> list[str]:
    k %= len(items)
    return items[k:] + items[:k]


def collect(args: argparse.Namespace, env: dict[str, str]) -> dict[str, dict[str, dict[str, Any]]]:
    """Run every group (round x scenario); returns results[scenario][config]."""
    results: dict[str, dict[str, dict[str, Any]]] = {s: {} for s in args.scenarios}
    start = time.monotonic()
    for rnd in range(args.rounds):
        for s_index, scenario in enumerate(args.scenarios):
            requests, warmup = plan(scenario, args.requests, args.warmup)
            by_config = results[scenario]
            for config in args.configs:
                by_config.setdefault(
                    config,
                    {
                        "status": "ok",
                        "samples_cpu_us": [],
                        "samples_wall_us": [],
                        "background_cores": [],
                        "samples_p50_us": [],
                        "samples_p99_us": [],
                    },
                )
            todo = [c for c in args.configs if by_config[c]["status"] not in NOT_MEASURED]
            if not todo:
                continue
            if args.wait_idle > 0:
                wait_idle(args.wait_idle)
            t0 = time.monotonic()
            outs = run_group(
                args.python,
                _rotate(todo, rnd + s_index),
                scenario,
                requests,
                warmup,
                (ASYNC_BATCH if scenario == "lc-async" else 4) if rnd == 0 else 0,
                env,
                args.timeout,
                order_seed=rnd,
            )
            parts = []
            for config in todo:
                entry, out = by_config[config], outs.get(config, {"status": "error"})
                if out.get("status") != "ok":
                    entry["status"] = out.get("status", "error")
                    entry["detail"] = out.get("detail", "")
                    parts.append(f"{config} {entry['status']}")
                    continue
                entry["samples_cpu_us"].append(out["cpu_us_per_request"])
                entry["samples_wall_us"].append(out["wall_us_per_request"])
                entry["background_cores"].append(round(out.get("background_cores", 0.0), 3))
                if out.get("latency"):
                    entry["samples_p50_us"].append(out["latency"]["p50_us"])
                    entry["samples_p99_us"].append(out["latency"]["p99_us"])
                entry["requests"] = out["requests"]
                if out.get("spans") is not None:
                    entry["spans"] = out["spans"]
                parts.append(f"{config} {out['cpu_us_per_request'] / 1000:.3f}")
            busy = max((o.get("background_cores", 0.0) for o in outs.values()), default=0.0)
            note = f" [others busy: {busy:.1f} cores]" if busy > BUSY_CORES else ""
            print(
                f"[round {rnd + 1}/{args.rounds} {time.monotonic() - start:5.0f}s] {scenario} "
                f"({time.monotonic() - t0:.0f}s, ms/req): {', '.join(parts)}{note}",
                file=sys.stderr,
                flush=True,
            )
    return results


def summarise(results: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Add medians, overheads against baseline and ratios to ragtrace's overhead, in place."""
    for by_config in results.values():
        for entry in by_config.values():
            samples = entry.get("samples_cpu_us") or []
            if entry["status"] == "ok" and samples:
                median = statistics.median(samples)
                entry["cpu_us_per_request"] = median
                entry["cpu_us_min"] = min(samples)
                entry["cpu_us_max"] = max(samples)
                entry["spread"] = (max(samples) - min(samples)) / median
                entry["wall_us_per_request"] = statistics.median(entry["samples_wall_us"])
        baseline = by_config.get("baseline", {})
        base = baseline.get("cpu_us_per_request")
        for entry in by_config.values():
            if base is None or "cpu_us_per_request" not in entry:
                continue
            # Configurations of one round ran side by side, so the round's baseline is the
            # fair reference: overhead = median over rounds of (config - baseline).
            pairs = zip(entry["samples_cpu_us"], baseline["samples_cpu_us"], strict=False)
            entry["overhead_us"] = statistics.median(c - b for c, b in pairs)
            entry["overhead_us_of_medians"] = entry["cpu_us_per_request"] - base
            entry["overhead_us_of_mins"] = entry["cpu_us_min"] - baseline["cpu_us_min"]
            for q in ("p50", "p99"):
                lat = list(zip(entry[f"samples_{q}_us"], baseline[f"samples_{q}_us"], strict=False))
                if lat:
                    entry[f"added_{q}_us"] = statistics.median(c - b for c, b in lat)
        rt = by_config.get("ragtrace", {}).get("overhead_us")
        for entry in by_config.values():
            if rt is not None and rt > 0 and "overhead_us" in entry:
                entry["overhead_vs_ragtrace"] = entry["overhead_us"] / rt


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    env = dict(os.environ)
    apply_offline_env(env)
    if args.compare_with is not None:
        env[OTHER_CHECKOUT_ENV] = str(args.compare_with.resolve())
    started = datetime.now(UTC)
    t0 = time.monotonic()
    found = versions(args.python, env)
    print(
        f"overhead: {args.rounds} round(s) x {len(args.configs)} configs x "
        f"{len(args.scenarios)} scenarios; python {args.python}",
        file=sys.stderr,
    )
    results = collect(args, env)
    summarise(results)
    targets = _overhead_targets.verdicts(results)
    table = render(results, list(args.configs), args.rounds)
    labels = {s: SCENARIOS[s][1] for s in results}
    table += "".join(f"\n{line}" for line in ["", *_overhead_targets.render(targets, labels)])
    print(table)
    report = {
        "benchmark": "overhead",
        "started": started.isoformat(timespec="seconds"),
        "duration_s": round(time.monotonic() - t0, 1),
        "command": [Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])],
        "settings": {
            "rounds": args.rounds,
            "requests": {s: plan(s, args.requests, args.warmup)[0] for s in args.scenarios},
            "warmup": {s: plan(s, args.requests, args.warmup)[1] for s in args.scenarios},
            "configs": args.configs,
            "scenarios": args.scenarios,
            "quick": args.quick,
            "wait_idle_s": args.wait_idle,
            "exporter": "BatchSpanProcessor(no-op exporter)",
            "metric": "time.process_time() per request, all threads, incl. final flush",
        },
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "versions": found,
        "results": results,
        "targets": targets,
        "table": table,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.json} ({report['duration_s']:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
