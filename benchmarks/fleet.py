"""The Redis Streams fleet: the app's cost of shipping, workers' throughput, recovery, capacity.

One run, one local redis-server (AOF every second, ``noeviction``), realistic records (a query,
four ~500-character chunks, an answer: ``pipeline.Records``):

1. App side. ``submit`` latency (p50/p99) of an ``EvaluationPipeline`` whose queue is the Redis
   shipper, interleaved record by record with one on the in-memory queue (both sampling every
   record for one no-op evaluator; the in-memory one's workers evaluate it, the shipper's
   sender thread ships it), and the process CPU per record spent shipping (encoding and
   sending included), from ``time.process_time`` over a paced run.
2. Fleet throughput. The stream is filled with N records, then 1 (then 2) ``ragtrace worker``
   processes with a no-op evaluator drain it; records/s is measured between 10 % and 90 %
   published (start-up excluded) from the fleet's ``published`` counter. Three runs of each,
   interleaved (1, 2, 1, 2, 1, 2); the median is reported.
3. Submit-to-score delay: records shipped at a steady pace to 2 workers; the p50/p99 of
   ``ragtrace_evaluation_delay_seconds`` scraped from the workers.
4. Recovery: 2 workers draining, one SIGKILLed; the time until no entry is pending for it
   (``reclaim_idle_s`` = 2 s here) and until every record is published.
5. Capacity on paper: Redis commands (scripts' inner commands included) and Redis CPU seconds
   per record, shipping and consuming (``INFO commandstats``, ``INFO cpu`` around phase 2),
   hence records/s for one Redis core.

Run::

    .venv/bin/python benchmarks/fleet.py            # about 3 minutes on 2 cores
    .venv/bin/python benchmarks/fleet.py --quick    # smoke test

Prints a table and writes ``benchmarks/results/fleet.json``. Needs ``redis-server`` on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from pipeline import Records, noop_evaluators

from ragtrace._config import Config
from ragtrace._config.redis_queue import RedisQueueOptions
from ragtrace._diagnostics import Diagnostics
from ragtrace._metrics.collection import Metrics
from ragtrace._pipeline import EvaluationPipeline, PipelineOptions
from ragtrace._pipeline.queues import WorkItem
from ragtrace._pipeline.queues.redis_shipper import RedisShipper
from ragtrace._pipeline.queues.redis_streams import StreamCommands, connect

WORKER = Path(__file__).resolve()  # run with AS_WORKER first: a worker process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Redis:
    """A redis-server on loopback for the run."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            sys.exit("fleet.py needs redis-server on PATH (apt-get install redis-server)")
        self.dir = Path(tempfile.mkdtemp(prefix="ragtrace-fleet-"))
        self.port = free_port()
        self.proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "everysec",
                "--dir",
                str(self.dir),
                "--maxmemory-policy",
                "noeviction",
            ],
            stdout=subprocess.DEVNULL,
        )
        self.url = f"redis://127.0.0.1:{self.port}/0"
        options = RedisQueueOptions.from_url(self.url)
        self.client = connect(options)
        deadline = time.monotonic() + 10
        while True:
            try:
                self.client.ping()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def fresh(self, stream: str) -> tuple[str, StreamCommands]:
        url = f"{self.url}?stream={stream}&batch=256"
        options = RedisQueueOptions.from_url(url)
        return url, StreamCommands(self.client, options)

    def commands_and_cpu(self) -> tuple[int, float]:
        stats = self.client.info("commandstats")
        calls = sum(int(v["calls"]) for v in stats.values())
        cpu = self.client.info("cpu")
        return calls, float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def app_side(redis: Redis, n: int) -> dict[str, Any]:
    """Submit latency, shipper vs in-memory queue, interleaved; CPU per shipped record."""
    url, commands = redis.fresh("bench:app")
    records = Records()
    pipelines = {}
    for name in ("memory", "redis"):
        registry = CollectorRegistry()
        metrics = Metrics(registry, app="bench")
        shipper = None
        if name == "redis":
            shipper = RedisShipper(
                RedisQueueOptions.from_url(url, buffer=n + 10), client=redis.client
            )
        pipelines[name] = EvaluationPipeline(
            Diagnostics(),
            metrics,
            evaluators=noop_evaluators(1),
            options=PipelineOptions(Config(queue_size=n + 10, workers=1)),
            shipper=shipper,
        )
    times: dict[str, list[float]] = {"memory": [], "redis": []}
    for i in range(n):
        for name in ("memory", "redis") if i % 2 else ("redis", "memory"):
            record = records.record(f"{i:016x}{hash(name) & 0xFFFF:016x}")
            start = time.perf_counter_ns()
            pipelines[name].submit(record)
            times[name].append((time.perf_counter_ns() - start) / 1000)
        if i % 50 == 0:
            time.sleep(0.001)  # the app's own I/O
    for p in pipelines.values():
        p.flush(60)
    shipped = commands.client.xlen("bench:app")
    # CPU per record: ship only, paced, process CPU (all threads) over the run
    cpu_url, _ = redis.fresh("bench:cpu")
    ship = EvaluationPipeline(
        Diagnostics(),
        Metrics(CollectorRegistry(), app="bench"),
        evaluators=noop_evaluators(1),
        shipper=RedisShipper(
            RedisQueueOptions.from_url(cpu_url, buffer=n + 10), client=redis.client
        ),
    )
    batch = [records.record(f"{i:032x}") for i in range(n)]
    cpu0 = time.process_time()
    for record in batch:
        ship.submit(record)
    ship.flush(60)
    cpu_per_record_us = (time.process_time() - cpu0) / n * 1e6
    for p in (*pipelines.values(), ship):
        p.shutdown(5)
    return {
        "submitted_each": n,
        "shipped": int(shipped),
        "submit_us": {
            name: {"p50": pct(t, 0.5), "p99": pct(t, 0.99), "mean": statistics.fmean(t)}
            for name, t in times.items()
        },
        "p99_ratio_redis_over_memory": pct(times["redis"], 0.99) / pct(times["memory"], 0.99),
        "ship_cpu_us_per_record": cpu_per_record_us,
    }


def fill(redis: Redis, url: str, n: int) -> None:
    records = Records()
    shipper = RedisShipper(
        RedisQueueOptions.from_url(url, buffer=n + 10, max_backlog=n + 10), client=redis.client
    )

    for i in range(n):
        shipper.put(WorkItem(records.record(f"{i:032x}"), ("noop",)))
    assert shipper.flush(300), "could not fill the stream"
    shipper.close()


def start_workers(url: str, k: int, tag: str, **opts: str) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "RAGTRACE_MODEL_THREADS": "1"}
    procs = []
    for i in range(k):
        args = [sys.executable, str(WORKER), AS_WORKER, "--queue", url, "--evaluators", "noop",
                "--consumer", f"{tag}{i}", "--workers", "1"]  # fmt: skip
        for key, value in opts.items():
            args += [f"--{key.replace('_', '-')}", value]
        procs.append(subprocess.Popen(args, env=env, stderr=subprocess.DEVNULL))
    return procs


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)


def published(commands: StreamCommands) -> int:
    return commands.stats().get("published", 0)


def throughput(redis: Redis, n: int, k: int, run: int) -> dict[str, Any]:
    url, commands = redis.fresh(f"bench:tp{k}:{run}")
    calls0, cpu0 = redis.commands_and_cpu()  # both sides: adding and consuming
    fill(redis, url, n)
    procs = start_workers(url, k, f"tp{k}-")
    try:
        lo, hi = int(0.1 * n), int(0.9 * n)
        t_lo = t_hi = None
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            done = published(commands)
            now = time.monotonic()
            if t_lo is None and done >= lo:
                t_lo, n_lo = now, done
            if done >= hi:
                t_hi, n_hi = now, done
                break
            time.sleep(0.02)
        assert t_lo is not None and t_hi is not None, "workers did not drain the stream"
        while published(commands) < n and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop(procs)
    calls1, cpu1 = redis.commands_and_cpu()
    rate = (n_hi - n_lo) / max(1e-9, t_hi - t_lo)
    return {
        "workers": k,
        "records": n,
        "records_per_s": rate,
        "per_process": rate / k,
        "redis_commands_per_record": (calls1 - calls0) / n,
        "redis_cpu_us_per_record": (cpu1 - cpu0) / n * 1e6,
    }


def delay(redis: Redis, n: int, rate: float) -> dict[str, Any]:
    url, commands = redis.fresh("bench:delay")
    ports = [free_port(), free_port()]
    procs = [start_workers(url, 1, f"d{i}-", metrics_port=str(p))[0] for i, p in enumerate(ports)]
    try:
        time.sleep(3)  # workers up
        records = Records()
        shipper = RedisShipper(RedisQueueOptions.from_url(url), client=redis.client)
        from ragtrace._pipeline.queues import WorkItem

        start = time.monotonic()
        for i in range(n):
            record = replace(records.record(f"{i:032x}"), end_ns=time.time_ns())
            shipper.put(WorkItem(record, ("noop",)))
            time.sleep(max(0.0, start + (i + 1) / rate - time.monotonic()))
        shipper.flush(30)
        while published(commands) < n:
            time.sleep(0.05)
        buckets: dict[float, float] = {}
        for port in ports:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
            for line in text.decode().splitlines():
                if line.startswith("ragtrace_evaluation_delay_seconds_bucket"):
                    le = line.split('le="')[1].split('"')[0]
                    bound = float("inf") if le == "+Inf" else float(le)
                    buckets[bound] = buckets.get(bound, 0.0) + float(line.split()[-1])
    finally:
        stop(procs)
    return {
        "records": n,
        "rate": rate,
        "p50_s": _quantile(buckets, 0.5),
        "p99_s": _quantile(buckets, 0.99),
    }


def _quantile(buckets: dict[float, float], q: float) -> float:
    """Prometheus' histogram_quantile: linear inside the bucket."""
    bounds = sorted(buckets)
    total = buckets[bounds[-1]]
    rank, prev_bound, prev_count = q * total, 0.0, 0.0
    for bound in bounds:
        if buckets[bound] >= rank:
            if bound == float("inf"):
                return prev_bound
            width = buckets[bound] - prev_count
            return prev_bound + (bound - prev_bound) * ((rank - prev_count) / width if width else 0)
        prev_bound, prev_count = bound, buckets[bound]
    return prev_bound


def recovery(redis: Redis, n: int) -> dict[str, Any]:
    url, commands = redis.fresh("bench:recovery")
    url += "&reclaim_idle_s=2"
    fill(redis, url, n)
    procs = start_workers(url, 2, "r", reclaim_idle_s="2")
    try:
        while published(commands) < n // 4 or _held(commands, "r0") == 0:
            time.sleep(0.001)  # kill it while it holds a batch
        held_at_kill = _held(commands, "r0")
        procs[0].send_signal(signal.SIGKILL)
        killed = time.monotonic()
        reclaimed_at = None
        while True:
            held = _held(commands, "r0")
            if reclaimed_at is None and held == 0:
                reclaimed_at = time.monotonic()
            if published(commands) >= n:
                break
            time.sleep(0.02)
        done_at = time.monotonic()
    finally:
        stop(procs)
    return {
        "held_at_kill": held_at_kill,
        "reclaim_idle_s": 2.0,
        "kill_to_taken_over_s": (reclaimed_at or done_at) - killed,
        "kill_to_all_published_s": done_at - killed,
    }


def _held(commands: StreamCommands, consumer: str) -> int:
    """Entries pending for ``consumer``."""
    o = commands.options
    for c in commands.client.xinfo_consumers(o.stream, o.group):
        name = c["name"].decode() if isinstance(c["name"], bytes) else c["name"]
        if name == consumer:
            return int(c["pending"])
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--suite",
        type=int,
        default=0,
        metavar="N",
        help="also score N records with the local online suite in process and through 2 workers",
    )
    args = parser.parse_args(argv)
    n_app, n_tp, n_delay = (2_000, 5_000, 200) if args.quick else (20_000, 40_000, 2_000)
    redis = Redis()
    try:
        result: dict[str, Any] = {"app": app_side(redis, n_app)}
        order = (1, 2, 1, 2, 1, 2)  # interleaved
        runs = [throughput(redis, n_tp, k, i) for i, k in enumerate(order)]
        result["throughput_runs"] = runs
        result["throughput"] = [
            sorted((r for r in runs if r["workers"] == k), key=lambda r: r["records_per_s"])[1]
            for k in (1, 2)
        ]  # the median of three runs each
        result["scaling_2_over_1"] = (
            result["throughput"][1]["records_per_s"] / result["throughput"][0]["records_per_s"]
        )
        result["delay"] = delay(redis, n_delay, rate=200.0)
        result["recovery"] = recovery(redis, n_tp // 2)
        if args.suite:
            url, commands = redis.fresh("bench:suite")
            result["suite"] = {
                "records": args.suite,
                "in_process_records_per_s": in_process(args.suite),
                "fleet_records_per_s": through_fleet(
                    url, lambda: published(commands), start_workers, stop, args.suite
                ),
            }
        one = result["throughput"][0]
        result["one_redis_core_records_per_s"] = 1e6 / max(1e-9, one["redis_cpu_us_per_record"])
    finally:
        redis.close()
    report(result)
    out = HERE / "results" / "fleet.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"\nwrote {out}")
    return 0


def report(r: dict[str, Any]) -> None:
    a = r["app"]
    print("App side (interleaved, same run)")
    print(f"  {'queue':<8} {'submit p50 us':>14} {'p99 us':>10} {'mean us':>10}")
    for name, s in a["submit_us"].items():
        print(f"  {name:<8} {s['p50']:>14.1f} {s['p99']:>10.1f} {s['mean']:>10.1f}")
    print(
        f"  p99 redis/memory: {a['p99_ratio_redis_over_memory']:.2f}x; "
        f"process CPU per shipped record: {a['ship_cpu_us_per_record']:.1f} us"
    )
    print("\nFleet throughput, no-op evaluator (10%-90% of the stream; median of 3 runs)")
    print(
        f"  {'workers':>7} {'records/s':>10} {'per process':>12} {'Redis cmds/rec':>15} "
        f"{'Redis CPU us/rec':>17}"
    )
    for t in r["throughput"]:
        print(
            f"  {t['workers']:>7} {t['records_per_s']:>10.0f} {t['per_process']:>12.0f} "
            f"{t['redis_commands_per_record']:>15.2f} "
            f"{t['redis_cpu_us_per_record']:>17.1f}"
        )
    print(
        f"  2 workers / 1: {r['scaling_2_over_1']:.2f}x; one Redis core carries about "
        f"{r['one_redis_core_records_per_s']:.0f} records/s"
    )
    d = r["delay"]
    print(
        f"\nRequest end to published score at {d['rate']:.0f} rec/s, 2 workers: "
        f"p50 {d['p50_s'] * 1000:.0f} ms, p99 {d['p99_s'] * 1000:.0f} ms"
    )
    if "suite" in r:
        su = r["suite"]
        print(
            f"Local online suite, {su['records']} corpus records, 2 cores: in process "
            f"{su['in_process_records_per_s']:.1f} rec/s, through 2 workers "
            f"{su['fleet_records_per_s']:.1f} rec/s"
        )
    v = r["recovery"]
    print(
        f"Recovery (reclaim_idle_s {v['reclaim_idle_s']:.0f} s): SIGKILL to taken over "
        f"{v['kill_to_taken_over_s']:.1f} s, "
        f"to all published {v['kill_to_all_published_s']:.1f} s"
    )


# ``fleet.py --suite``: the local online suite in process against the same suite on workers.
#
# Both sides score the same ``corpus`` records (``_throughput_records``) with the same evaluators
# on the same 2 cores: in process, an ``EvaluationPipeline`` with 2 worker processes (primed
# first, so model loading is not timed); through the fleet, 2 ``ragtrace worker`` processes
# (warmed with 48 records, in batches of 16 so that both load their models, before the timed
# ones). The in-process pool shares a cache of sentence vectors and NER results between its
# processes; workers on separate machines cannot, and here do not. records/s from the first
# submit to the last score published.
from _throughput_records import records as corpus_records
from pipeline import CountingSink

from ragtrace._model import Chunk, RagRecord
from ragtrace.evaluators import create

WARM_UP = 48
SUITE = (
    "answer_relevance", "context_relevance", "groundedness", "faithfulness", "pii_leakage",
    "sensitive_data", "toxicity", "language_mismatch", "looping",
)  # fmt: skip


def suite_records(n: int, offset: int = 0) -> list[RagRecord]:
    rows = corpus_records("corpus", n + offset)[offset:]
    return [
        RagRecord(
            f"{offset + i + 1:032x}",
            f"{offset + i + 1:016x}",
            row["query"],
            tuple(Chunk(c if isinstance(c, str) else c["text"]) for c in row["contexts"]),
            row["response"],
        )
        for i, row in enumerate(rows)
    ]


def in_process(n: int) -> float:
    os.environ.setdefault("RAGTRACE_MODEL_THREADS", "1")
    sink = CountingSink()
    pipeline = EvaluationPipeline(
        Diagnostics(),
        Metrics(CollectorRegistry(), app="bench"),
        evaluators=[create(name) for name in SUITE],
        sinks=[sink],
        options=PipelineOptions(Config(workers=2, processes=2, queue_size=n + 10)),
    )
    try:
        pipeline.prime(suite_records(8, offset=10_000))
        batch = suite_records(n)
        start = time.monotonic()
        for record in batch:
            pipeline.submit(record)
        assert pipeline.flush(1800), "the in-process pipeline did not finish"
        return n / (time.monotonic() - start)
    finally:
        pipeline.shutdown(10)


def through_fleet(url: str, published: Any, start_workers: Any, stop: Any, n: int) -> float:
    url += "&batch=16"  # the warm-up's 48 records reach both workers
    procs = start_workers(url, 2, "suite-", evaluators=",".join(SUITE))
    try:
        shipper = RedisShipper(RedisQueueOptions.from_url(url, buffer=n + 100))
        for record in suite_records(WARM_UP, offset=10_000):  # both workers load their models
            shipper.put(WorkItem(record, SUITE))
        shipper.flush(60)
        deadline = time.monotonic() + 900
        while published() < WARM_UP and time.monotonic() < deadline:
            time.sleep(0.2)
        start = time.monotonic()
        for record in suite_records(n):
            shipper.put(WorkItem(record, SUITE))
        shipper.flush(60)
        while published() < WARM_UP + n and time.monotonic() < deadline:
            time.sleep(0.05)
        assert published() >= WARM_UP + n, "the fleet did not finish"
        return n / (time.monotonic() - start)
    finally:
        stop(procs)


AS_WORKER = "--as-worker"
"""``fleet.py --as-worker ARGS``: a ``ragtrace worker`` with a no-op evaluator registered as
``noop`` (``fleet.py --as-worker ingest ARGS``: a ``ragtrace ingest``), for this benchmark,
``ingest_fleet.py`` and ``cost_profile.py``."""


def run_as_worker(args: list[str]) -> int:
    from ragtrace._cli import main as ragtrace_main
    from ragtrace.evaluators import evaluator, register

    @evaluator(name="noop", threshold=0.5)
    def noop(record: RagRecord) -> float:
        return 1.0

    register("noop", lambda **_: noop, replace=True)
    return ragtrace_main(args if args[:1] == ["ingest"] else ["worker", *args])


if __name__ == "__main__":
    if sys.argv[1:2] == [AS_WORKER]:
        raise SystemExit(run_as_worker(sys.argv[2:]))
    raise SystemExit(main())
