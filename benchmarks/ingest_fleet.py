"""``ragtrace ingest`` + 2 ``ragtrace worker``s on Redis: the highest rate sustained, nothing lost.

One machine runs everything: a local redis-server (AOF every second, ``noeviction``), the
``ragtrace ingest`` command shipping to its stream (``--queue``), two ``ragtrace worker``
processes draining it (a no-op evaluator, so the fleet's plumbing is measured, not a model), and
a load process that sends OTLP/HTTP exports of a real trace (the 9 spans OpenInference's
LangChain instrumentation exports for one request, ``benchmarks/ingest.py``'s workload), 10
traces an export, paced to a target rate, each export answered 429 sent again after 50 ms as a
Collector would.

The target rate climbs a ladder (traces/s); each step sends for ``--step-s`` seconds, then waits
until the fleet has published everything. A step is *sustained* when the traces were
acknowledged at 95 % of the target rate or more. After every step the books must balance:
spans sent = spans acknowledged (the 429s were retried), records rebuilt = records shipped =
entries added to the stream = entries published (``ragtrace queue stats``, ``unaccounted`` 0),
and no drop counted in ingest. The ladder stops at the first step not sustained.

Run::

    .venv/bin/python benchmarks/ingest_fleet.py            # about 3 minutes on 2 cores
    .venv/bin/python benchmarks/ingest_fleet.py --quick    # smoke test

Prints a table and writes ``benchmarks/results/ingest_fleet.json``. Needs ``redis-server``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for path in (str(HERE), str(ROOT)):
    if path not in sys.path:
        sys.path.insert(0, path)

from fleet import Redis, free_port
from ingest import bodies

from ragtrace._config.redis_queue import RedisQueueOptions
from ragtrace._pipeline.queues.redis_streams import StreamCommands
from ragtrace._worker.inspect import queue_state

COMMAND = HERE / "fleet.py"  # with --as-worker first: a worker or an ingest process
PER_EXPORT = 10
LADDER = (200, 300, 400, 500, 600, 700, 800, 1000, 1200, 1500, 2000)

# The load: paced exports on 2 keep-alive connections, 429 sent again after 50 ms. Prints
# {"acknowledged", "refused", "first_s", "last_s"} (traces; seconds since its start).
_LOAD = r"""
import http.client, json, sys, threading, time
port, path, rate, per_export = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
payloads = [bytes.fromhex(h) for h in json.load(open(path))]
interval = per_export / rate
start = time.monotonic()
tally = {"acknowledged": 0, "refused": 0, "last_s": 0.0}
lock = threading.Lock()

def send(offset):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for i in range(offset, len(payloads), 2):
        due = start + i * interval
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        while True:
            conn.request("POST", "/v1/traces", payloads[i],
                         {"Content-Type": "application/x-protobuf"})
            answer = conn.getresponse(); answer.read()
            if answer.status == 200:
                with lock:
                    tally["acknowledged"] += per_export
                    tally["last_s"] = time.monotonic() - start
                break
            assert answer.status in (429, 503), answer.status
            with lock:
                tally["refused"] += per_export
            time.sleep(0.05)

threads = [threading.Thread(target=send, args=(k,)) for k in range(2)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(tally))
"""


def scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("ragtrace_") and " " in line:
            name, value = line.rsplit(" ", 1)
            out[name] = out.get(name, 0.0) + float(value)
    return out


def total(metrics: dict[str, float], prefix: str) -> float:
    return sum(v for k, v in metrics.items() if k.startswith(prefix))


def wait_for(what: str, probe: Any, timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not reached in {timeout_s:.0f}s")
        time.sleep(0.2)


def started(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, str(COMMAND), "--as-worker", *args],
            stdout=out,
            stderr=out,
            cwd=ROOT,
            env=env,
        )


def step(
    rate: int, duration_s: float, first: int, port: int, metrics_port: int, commands: Any,
    workdir: Path,
) -> dict[str, Any]:  # fmt: skip
    traces = int(rate * duration_s) // PER_EXPORT * PER_EXPORT
    payloads, spans_per_trace = bodies(traces, PER_EXPORT, start=first)
    path = workdir / f"load-{rate}.json"
    path.write_text(json.dumps([p.hex() for p in payloads]))
    before = scrape(metrics_port)
    cpu_before = {pid: cpu_s(pid) for pid in PIDS}
    t0 = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-c", _LOAD, str(port), str(path), str(rate), str(PER_EXPORT)],
        capture_output=True, text=True, timeout=duration_s * 20 + 120, check=True,
    )  # fmt: skip
    tally = json.loads(run.stdout)
    records_before = total(before, "ragtrace_ingest_records_total")
    wait_for(
        "every record rebuilt and shipped",
        lambda: (
            total(scrape(metrics_port), "ragtrace_records_shipped_total") >= records_before + traces
        ),
        120,
    )

    def published() -> dict[str, Any] | None:
        state = queue_state(commands)
        return state if state["backlog"] == 0 else None

    drained = wait_for("every entry published", published, 300)
    done_s = time.monotonic() - t0
    after = scrape(metrics_port)
    cpu = {name: round(cpu_s(pid) - cpu_before[pid], 2) for pid, name in PIDS.items()}
    records = total(after, "ragtrace_ingest_records_total") - records_before
    shipped = total(after, "ragtrace_records_shipped_total") - total(
        before, "ragtrace_records_shipped_total"
    )
    dropped = sum(
        total(after, name) - total(before, name)
        for name in ("ragtrace_ingest_records_dropped_total", "ragtrace_dropped_records_total")
    )
    send_s = max(tally["last_s"], 1e-9)
    return {
        "target_traces_per_s": rate,
        "traces": traces,
        "spans": traces * spans_per_trace,
        "acknowledged_traces": tally["acknowledged"],
        "refused_traces": tally["refused"],
        "acknowledged_per_s": round(tally["acknowledged"] / send_s, 1),
        "sustained": tally["acknowledged"] / send_s >= 0.95 * rate,
        "records": int(records),
        "shipped": int(shipped),
        "dropped": int(dropped),
        "drained_s": round(done_s - send_s, 2),
        "cpu_s": cpu,
        "queue": drained,
        "balanced": (
            tally["acknowledged"] == traces == records == shipped
            and dropped == 0
            and drained["unaccounted"] == 0
        ),
    }


PIDS: dict[int, str] = {}


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two short steps (smoke test)")
    parser.add_argument("--step-s", type=float, default=10.0)
    parser.add_argument("--out", default=str(HERE / "results" / "ingest_fleet.json"))
    args = parser.parse_args()
    ladder = (100, 200) if args.quick else LADDER
    step_s = 3.0 if args.quick else args.step_s
    redis = Redis()
    url = f"{redis.url}?stream=bench:ingest&max_backlog=20000"
    commands = StreamCommands(redis.client, RedisQueueOptions.from_url(url))
    workdir = Path(tempfile.mkdtemp(prefix="ragtrace-ingest-fleet-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAGTRACE_MODEL_THREADS": "1"}
    port, metrics_port = free_port(), free_port()
    procs = [
        started(
            ["ingest", "--listen", f"127.0.0.1:{port}", "--queue", url, "--evaluators", "noop",
             "--quiet-s", "0.5", "--metrics-port", str(metrics_port), "--drain-timeout-s", "30"],
            workdir / "ingest.log", env,
        ),
        *(
            started(["--queue", url, "--evaluators", "noop", "--consumer", f"w{i}"],
                    workdir / f"worker-{i}.log", env)
            for i in (1, 2)
        ),
    ]  # fmt: skip
    for proc, name in zip(procs, ("ingest", "worker-1", "worker-2"), strict=True):
        PIDS[proc.pid] = name
    PIDS[redis.proc.pid] = "redis"
    steps: list[dict[str, Any]] = []
    try:
        wait_for("ingest up", lambda: _up(metrics_port), 60)
        first = 1
        for rate in ladder:
            result = step(rate, step_s, first, port, metrics_port, commands, workdir)
            first += result["traces"]
            steps.append(result)
            print(
                f"{rate:>6} traces/s target: {result['acknowledged_per_s']:>8.1f} acknowledged/s,"
                f" {result['refused_traces']:>6} refused (retried), drained in "
                f"{result['drained_s']:>5.2f}s, balanced={result['balanced']}, "
                f"cpu={result['cpu_s']}",
                flush=True,
            )
            if not result["sustained"]:
                break
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        redis.close()
    sustained = [s for s in steps if s["sustained"] and s["balanced"]]
    best = max((s["target_traces_per_s"] for s in sustained), default=0)
    summary = {
        "workload": {"spans_per_trace": 9, "traces_per_export": PER_EXPORT, "step_s": step_s},
        "highest_sustained_traces_per_s": best,
        "every_step_balanced": all(s["balanced"] for s in steps),
        "steps": steps,
    }
    print(
        f"highest rate sustained with nothing lost: {best} traces/s "
        f"({best * 9} spans/s); every step balanced: {summary['every_step_balanced']}"
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2))
    return 0 if summary["every_step_balanced"] else 1


def _up(port: int) -> bool:
    try:
        scrape(port)
    except OSError:
        return False
    return True


if __name__ == "__main__":
    raise SystemExit(main())
