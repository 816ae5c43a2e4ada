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
``invoke``, ``stream`` (all chunks consumed), 50 concurrent ``ainvoke`` (CPU per request), a
LlamaIndex ``query``, and a LangChain agent turn (``lc-agent``: ``create_agent`` calling a
retriever tool and a plain tool, three LLM steps, one record).

Each (configuration, scenario, round) runs in a fresh process (``_overhead_apps.py``), because
instrumentors patch globals. Within a round, the processes of all configurations of a scenario
run side by side and take turns on ~50 ms chunks of requests in a rotating order
(``run_group`` below): on a shared VM the CPU's speed drifts over seconds, and turn-taking
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
(``render_targets`` below), and writes ``benchmarks/results/overhead.json``.
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


from _overhead_apps import ASYNC_BATCH, CONFIGS, OTHER_CHECKOUT_ENV, SCENARIOS, apply_offline_env

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
    targets = target_verdicts(results)
    table = render(results, list(args.configs), args.rounds)
    labels = {s: SCENARIOS[s][1] for s in results}
    table += "".join(f"\n{line}" for line in ["", *render_targets(targets, labels)])
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


# Runs one interleaved group for ``overhead.py``: every configuration of one scenario, at once.
#
# Each configuration gets its own fresh worker process (``_overhead_apps.py``: instrumentors
# patch globals, so configurations cannot share one). All start together and warm up; then they
# take turns on short chunks of requests in a rotating order, so that the host's speed, which
# drifts over seconds on a shared VM, weighs on every configuration alike. A worker reads its own
# ``time.process_time()``, so one that waits costs nothing and counts nothing.
import resource
import tempfile
import threading
from pathlib import Path
from typing import IO

from _overhead_apps import CHUNK_MARK, READY_MARK, RESULT_MARK

WORKER = Path(__file__).resolve().parent / "_overhead_apps.py"
BUSY_CORES = 0.15  # background load above which a group is flagged as noisy
# Requests per turn: about 50 ms of baseline work (an async turn is one batch of 50).
CHUNK = {"lc-invoke": 20, "lc-stream": 5, "lc-async": ASYNC_BATCH, "li-query": 20, "lc-agent": 15}
_MARKS = (READY_MARK, CHUNK_MARK, RESULT_MARK)


def machine_busy_s() -> float | None:
    """CPU seconds all processes of this machine have used since boot (/proc/stat), or None."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(x) for x in stat.readline().split()[1:8]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq = fields
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    """CPU seconds used by this process and its waited-for children."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def wait_idle(max_wait_s: float) -> float:
    """Sleep until other processes used under BUSY_CORES for a whole second (at most max_wait_s).

    Returns the seconds waited. Helps on a shared machine whose load comes and goes.
    """
    start = time.monotonic()
    while time.monotonic() - start < max_wait_s:
        busy0, own0 = machine_busy_s(), own_cpu_s()
        if busy0 is None:
            break
        time.sleep(1.0)
        busy1 = machine_busy_s()
        if busy1 is None or (busy1 - busy0) - (own_cpu_s() - own0) < BUSY_CORES:
            break
    return time.monotonic() - start


class Worker:
    """One worker process and its line protocol (READY, ``run N`` -> CHUNK, ``finish K``)."""

    def __init__(
        self, python: str, config: str, scenario: str, warmup: int, env: dict[str, str]
    ) -> None:
        self.config = config
        self.scenario = scenario
        # stderr goes to a file: a chatty peer (a warning per request) must never block on a pipe.
        self._stderr: IO[str] = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed in close)
        self.proc = subprocess.Popen(
            [
                python,
                str(WORKER),
                f"--config={config}",
                f"--scenario={scenario}",
                f"--warmup={warmup}",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            text=True,
            bufsize=1,
        )

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def read(self, timeout: float) -> tuple[str, dict[str, Any]]:
        """The next protocol message as (mark, payload); ("timeout" | "eof", {}) otherwise."""
        assert self.proc.stdout is not None
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            self.proc.kill()

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            for line in self.proc.stdout:
                for mark in _MARKS:
                    if line.startswith(mark):
                        payload: dict[str, Any] = json.loads(line[len(mark) :])
                        return mark, payload
        finally:
            timer.cancel()
        return ("timeout" if timed_out.is_set() else "eof"), {}

    def failure(self, mark: str, timeout: float) -> dict[str, Any]:
        """A result for a worker that did not answer as it should, with its stderr's tail."""
        self._stop()
        self._stderr.seek(0)
        tail = self._stderr.read()[-1500:].strip()
        self._stderr.close()
        status = "timeout" if mark == "timeout" else "error"
        detail = f"worker ran over {timeout:.0f} s" if mark == "timeout" else tail
        code = self.proc.returncode
        return {
            "config": self.config,
            "scenario": self.scenario,
            "status": status,
            "detail": detail or f"worker exited with {code} and said nothing",
        }

    def close(self) -> None:
        self._stop()
        self._stderr.close()

    def _stop(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def run_group(
    python: str,
    configs: Sequence[str],
    scenario: str,
    requests: int,
    warmup: int,
    bytes_pass: int,
    env: dict[str, str],
    timeout: float,
    order_seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Measure ``configs`` on ``scenario`` together; returns each one's worker result.

    ``bytes_pass`` > 0 adds the span/attribute count pass (K requests) after the timed part.
    Every ok result gets ``background_cores``: CPU that other processes of the machine used,
    on average, while the group ran.
    """
    busy0, own0, wall0 = machine_busy_s(), own_cpu_s(), time.monotonic()
    workers = {c: Worker(python, c, scenario, warmup, env) for c in configs}
    results: dict[str, dict[str, Any]] = {}
    live: dict[str, Worker] = {}
    for config, worker in workers.items():
        mark, payload = worker.read(timeout)
        if mark == READY_MARK:
            live[config] = worker
        elif mark == RESULT_MARK:  # not installed, unsupported, or failed during set-up
            worker.close()
            results[config] = payload
        else:
            results[config] = worker.failure(mark, timeout)

    chunk = CHUNK.get(scenario, 20)
    for k in range(math.ceil(requests / chunk)):
        count = min(chunk, requests - k * chunk)
        names = list(live)
        if not names:
            break
        shift = (order_seed + k) % len(names)
        for config in names[shift:] + names[:shift]:
            worker = live[config]
            worker.send(f"run {count}")
            mark, _payload = worker.read(timeout)
            if mark != CHUNK_MARK:
                results[config] = worker.failure(mark, timeout)
                del live[config]

    for config, worker in live.items():
        worker.send(f"finish {bytes_pass}")
        mark, payload = worker.read(timeout)
        if mark == RESULT_MARK:
            worker.close()
            results[config] = payload
        else:
            results[config] = worker.failure(mark, timeout)

    busy1, own1, wall1 = machine_busy_s(), own_cpu_s(), time.monotonic()
    if busy0 is not None and busy1 is not None:
        other = max(0.0, ((busy1 - busy0) - (own1 - own0)) / max(wall1 - wall0, 1e-3))
        for result in results.values():
            if result.get("status") == "ok":
                result["background_cores"] = other
    return results


# The tables ``overhead.py`` prints: CPU per request with overheads and ratios, span sizes,
# where chunk ids, scores and text are carried, added wall latency, and how noisy the run was.
#
# Each function takes the summarised results (``overhead.summarise``): scenario -> configuration
# -> entry.


def _cell(entry: dict[str, Any] | None, config: str) -> str:
    if not entry or "cpu_us_per_request" not in entry:
        status = (entry or {}).get("status", "not run")
        return "n/a" if status in ("not installed", "unsupported") else status
    text = f"{entry['cpu_us_per_request'] / 1000:.3f}"
    if config == "baseline" or "overhead_us" not in entry:
        return text
    text += f" {entry['overhead_us'] / 1000:+.3f}"
    ratio = entry.get("overhead_vs_ragtrace")
    if config != "ragtrace" and ratio is not None:
        text += f" {ratio:.1f}x"
    return text


def _latency_cell(entry: dict[str, Any] | None) -> str:
    if not entry or "added_p50_us" not in entry:
        return "-"
    return f"{entry['added_p50_us']:+.0f} / {entry['added_p99_us']:+.0f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def _where(keys: list[str]) -> str:
    """How a piece of content is carried: its own attribute, metadata, or inside an I/O blob."""
    if not keys:
        return "-"
    if any(("document" in k or "retrieval" in k) and "metadata" not in k for k in keys):
        return "attr"
    if any("metadata" in k for k in keys):
        return "meta"
    return "blob"


def render(results: dict[str, dict[str, dict[str, Any]]], configs: list[str], rounds: int) -> str:
    labels = {s: SCENARIOS[s][1] for s in results}
    out = [
        f"CPU ms per request, median of {rounds} round(s): 'cpu +overhead Nx'; overhead = median "
        "over rounds of (config - baseline of the same round), Nx = overhead / ragtrace's",
        "",
        _table(
            ["scenario", *configs],
            [[labels[s], *(_cell(by.get(c), c) for c in configs)] for s, by in results.items()],
        ),
        "",
        "Spans and attribute text per request (str attribute values + event attributes, bytes)",
        "",
    ]
    out.append(_table(["scenario", *configs], _span_rows(results, labels, configs, _size_cell)))
    out += [
        "",
        "Chunk ids / scores / text on spans (attr: own attribute; meta: in document metadata; "
        "blob: only inside serialized input/output; -: absent)",
        "",
    ]
    rows = _span_rows(results, labels, configs, _capture_cell)
    out.append(_table(["scenario", *configs], rows))
    out += [
        "",
        "Added wall latency per request, us, p50 / p99: median over rounds of (config - baseline "
        "of the same round); sequential requests only",
        "",
        _table(
            ["scenario", *configs],
            [
                [labels[s], *(_latency_cell(by.get(c)) for c in configs)]
                for s, by in results.items()
            ],
        ),
    ]
    notes = []
    for s, by in results.items():
        for c, entry in by.items():
            if entry["status"] != "ok":
                detail = entry.get("detail", "").strip().splitlines()
                notes.append(
                    f"- {labels[s]} / {c}: {entry['status']}: {detail[-1] if detail else ''}"
                )
    if notes:
        out += ["", "Not measured:", *notes]
    out += ["", noise_note(results)]
    return "\n".join(out)


def noise_note(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    """How much the rounds disagree, and whether other processes competed for the CPU."""
    spreads = [
        f"{SCENARIOS[s][1]} {by['baseline']['spread']:.0%}"
        for s, by in results.items()
        if "spread" in by.get("baseline", {})
    ]
    loads = [x for by in results.values() for e in by.values() for x in e["background_cores"]]
    text = "Baseline spread across rounds ((max-min)/median): " + (", ".join(spreads) or "-")
    if loads:
        mean = statistics.mean(loads)
        text += f".\nOther processes used {mean:.2f} cores on average while workers ran"
        text += f" (max {max(loads):.2f}; this machine has {os.cpu_count()} cores)."
        if mean > BUSY_CORES:
            text += (
                "\nWARNING: the machine was busy; CPU times are inflated and noisy. "
                "Rerun on an idle machine, or with more --rounds."
            )
    return text


def _span_rows(
    results: dict[str, Any],
    labels: dict[str, str],
    configs: Sequence[str],
    cell: Any,
) -> list[list[str]]:
    """One row per scenario: ``cell(spans)`` per configuration ('-' for baseline, 'n/a' if none)."""
    rows = []
    for s, by in results.items():
        row = [labels[s]]
        for c in configs:
            spans = (by.get(c) or {}).get("spans")
            row.append("-" if c == "baseline" else cell(spans) if spans else "n/a")
        rows.append(row)
    return rows


def _size_cell(spans: dict[str, Any]) -> str:
    kb = spans["attr_bytes_per_request"] / 1000
    return f"{spans['spans_per_request']:g} spans, {kb:.1f} kB"


def _capture_cell(spans: dict[str, Any]) -> str:
    cap = spans["captures"]
    return "/".join(_where(cap[k]) for k in ("chunk_ids", "chunk_scores", "chunk_text"))


# The capture targets of the request path, judged on one ``overhead.py`` run.
#
# Per scenario with a target: ragtrace's CPU overhead against its ceiling, and OpenLLMetry's
# overhead as a multiple of ragtrace's against the multiple asked for. Each line says ``met`` or
# how far off it is (the CPU ragtrace must still shed, the multiple still missing), so a run
# prints the remaining distance and not only a verdict. Scenarios without a target (stream,
# 50-way async) are reported beside, with their figures and no verdict. Where the time goes:
# ``capture_profile.py`` splits ragtrace's part by callback.


# scenario -> (most ragtrace CPU overhead per request, us, or None; the peer; least peer /
# ragtrace overhead multiple). An agent turn is held against OpenInference, the peer that
# renders agents in Phoenix; the chain and query engine against OpenLLMetry, the closer one.
CAPTURE_TARGETS: dict[str, tuple[float | None, str, float]] = {
    "lc-invoke": (350.0, "openllmetry", 7.0),
    "li-query": (400.0, "openllmetry", 12.0),
    "lc-agent": (None, "openinference", 5.0),
}
PEER = "openllmetry"
"""The peer shown for a scenario without a target."""


def target_verdicts(results: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per measured scenario: ragtrace's overhead and added p99, the peer's multiple, and
    against each target (if the scenario has one) whether it is met and the distance left."""
    out: dict[str, dict[str, Any]] = {}
    for scenario, by_config in results.items():
        ours = by_config.get("ragtrace") or {}
        overhead = ours.get("overhead_us")
        if overhead is None:
            continue
        ceiling, peer_name, multiple = CAPTURE_TARGETS.get(scenario, (None, PEER, None))
        peer = (by_config.get(peer_name) or {}).get("overhead_vs_ragtrace")
        row: dict[str, Any] = {
            "overhead_us": overhead,
            "added_p99_us": ours.get("added_p99_us"),
            "peer": peer_name,
            "peer_multiple": peer,
        }
        if ceiling is not None:
            row.update(
                ceiling_us=ceiling,
                overhead_met=overhead <= ceiling,
                overhead_to_shed_us=max(0.0, overhead - ceiling),
            )
        if multiple is not None:
            row.update(
                multiple_wanted=multiple,
                multiple_met=None if peer is None else peer >= multiple,
            )
        out[scenario] = row
    return out


def render_targets(verdict: dict[str, dict[str, Any]], labels: dict[str, str]) -> list[str]:
    """The targets table's lines (empty when ragtrace was not measured)."""
    if not verdict:
        return []
    lines = [
        "Capture targets (ragtrace's CPU overhead per request; the peer's overhead as a multiple "
        "of ragtrace's; added wall p99)",
        "",
    ]
    for scenario, row in verdict.items():
        text = f"  {labels.get(scenario, scenario):<22} +{row['overhead_us'] / 1000:.3f} ms"
        if "ceiling_us" in row:
            text += f" (<= {row['ceiling_us'] / 1000:.2f}: " + _overhead_verdict(row) + ")"
        peer, name = row["peer_multiple"], row["peer"]
        text += f", {name} {peer:.1f}x" if peer is not None else f", {name} not measured"
        if "multiple_wanted" in row and peer is not None:
            wanted = row["multiple_wanted"]
            text += f" (>= {wanted:g}x: " + ("met" if row["multiple_met"] else "MISSED") + ")"
        if row["added_p99_us"] is not None:
            text += f", p99 {row['added_p99_us']:+.0f} us"
        lines.append(text)
    return lines


def _overhead_verdict(row: dict[str, Any]) -> str:
    if row["overhead_met"]:
        return "met"
    shed = row["overhead_to_shed_us"]
    return f"MISSED by {shed / 1000:.3f} ms, {shed / row['ceiling_us']:.0%}"


if __name__ == "__main__":
    sys.exit(main())
